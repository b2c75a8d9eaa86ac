#include "jitterlab/runfile.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cerrno>
#include <climits>
#include <cstring>
#include <fstream>
#include <stdexcept>

#ifndef JITTERLAB_HAVE_ZLIB
#define JITTERLAB_HAVE_ZLIB 0
#endif
#if JITTERLAB_HAVE_ZLIB
#include <zlib.h>
#endif

namespace jitterlab {
namespace {

constexpr std::size_t kBufferBytes = 1 << 20;

using CrcTables = std::array<std::array<std::uint32_t, 256>, 8>;

/// t[0] is the byte-at-a-time table of the reflected polynomial 0xEDB88320; t[k][i] is the CRC
/// of byte i followed by k zero bytes, so eight lookups advance the CRC by eight bytes.
CrcTables make_crc_tables() noexcept {
    CrcTables t{};
    for (std::uint32_t i = 0; i < 256; ++i) {
        std::uint32_t c = i;
        for (int k = 0; k < 8; ++k) c = (c & 1U) ? 0xEDB88320U ^ (c >> 1) : c >> 1;
        t[0][i] = c;
    }
    for (std::size_t k = 1; k < 8; ++k)
        for (std::size_t i = 0; i < 256; ++i) t[k][i] = (t[k - 1][i] >> 8) ^ t[0][t[k - 1][i] & 0xFFU];
    return t;
}

void put_u32(char* at, std::uint32_t v) noexcept { std::memcpy(at, &v, sizeof v); }
void put_u64(char* at, std::uint64_t v) noexcept { std::memcpy(at, &v, sizeof v); }
std::uint64_t get_u64(const char* at) noexcept {
    std::uint64_t v;
    std::memcpy(&v, at, sizeof v);
    return v;
}
std::uint32_t get_u32(const char* at) noexcept {
    std::uint32_t v;
    std::memcpy(&v, at, sizeof v);
    return v;
}

void write_all(int fd, const char* data, std::size_t size, const std::string& path) {
    while (size > 0) {
        const ssize_t n = ::write(fd, data, size);
        if (n < 0) {
            if (errno == EINTR) continue;
            throw std::runtime_error("cannot write " + path + ": " + std::strerror(errno));
        }
        data += n;
        size -= static_cast<std::size_t>(n);
    }
}

}  // namespace

std::uint32_t crc32_slicing_by_8(std::uint32_t crc, const void* data, std::size_t size) noexcept {
    static const CrcTables t = make_crc_tables();
    const auto* bytes = static_cast<const unsigned char*>(data);
    crc = ~crc;
    if constexpr (std::endian::native == std::endian::little) {
        for (; size >= 8; size -= 8, bytes += 8) {
            std::uint32_t lo, hi;
            std::memcpy(&lo, bytes, 4);
            std::memcpy(&hi, bytes + 4, 4);
            lo ^= crc;
            crc = t[7][lo & 0xFFU] ^ t[6][(lo >> 8) & 0xFFU] ^ t[5][(lo >> 16) & 0xFFU] ^ t[4][lo >> 24] ^
                  t[3][hi & 0xFFU] ^ t[2][(hi >> 8) & 0xFFU] ^ t[1][(hi >> 16) & 0xFFU] ^ t[0][hi >> 24];
        }
    }
    for (; size > 0; --size, ++bytes) crc = t[0][(crc ^ *bytes) & 0xFFU] ^ (crc >> 8);
    return ~crc;
}

const char* crc32_backend() noexcept { return JITTERLAB_HAVE_ZLIB ? "zlib" : "slicing-by-8"; }

std::uint32_t crc32_update(std::uint32_t crc, const void* data, std::size_t size) noexcept {
#if JITTERLAB_HAVE_ZLIB
    // zlib's crc32 (several bytes per step, as slicing-by-8); its length is a uInt, so in chunks
    const auto* bytes = static_cast<const Bytef*>(data);
    uLong c = crc;
    while (size > 0) {
        const auto chunk = static_cast<uInt>(std::min<std::size_t>(size, UINT_MAX / 2));
        c = ::crc32(c, bytes, chunk);
        bytes += chunk;
        size -= chunk;
    }
    return static_cast<std::uint32_t>(c);
#else
    return crc32_slicing_by_8(crc, data, size);
#endif
}

std::array<char, kRawHeaderBytes> raw_header(std::uint32_t record_bytes) noexcept {
    std::array<char, kRawHeaderBytes> header{};
    std::memcpy(header.data(), kRawMagic, sizeof kRawMagic);
    put_u32(header.data() + 8, kRawFormatVersion);
    put_u32(header.data() + 12, record_bytes);
    return header;
}

std::array<char, kRawFooterBytes> raw_footer(std::uint64_t count, std::uint32_t crc, bool partial) noexcept {
    std::array<char, kRawFooterBytes> footer{};
    std::memcpy(footer.data(), kFooterMagic, sizeof kFooterMagic);
    put_u64(footer.data() + 8, count);
    put_u32(footer.data() + 16, crc);
    put_u64(footer.data() + 24, partial ? kFooterFlagPartial : 0);
    return footer;
}

RawSampleWriter::RawSampleWriter(std::string path) : path_(std::move(path)), tmp_path_(path_ + ".tmp") {
    fd_.reset(::open(tmp_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    if (!fd_) throw std::runtime_error("cannot create " + tmp_path_ + ": " + std::strerror(errno));
    buffer_.reserve(kBufferBytes);
    const auto header = raw_header(sizeof(SampleRecord));
    write_all(fd_.get(), header.data(), header.size(), tmp_path_);
}

// Unfinished (no finish()): the .tmp file stays, without footer, for salvage.
RawSampleWriter::~RawSampleWriter() = default;

void RawSampleWriter::write(std::span<const SampleRecord> records) {
    const auto* bytes = reinterpret_cast<const char*>(records.data());
    const std::size_t size = records.size_bytes();
    crc_ = crc32_update(crc_, bytes, size);
    count_ += records.size();
    if (buffer_.size() + size > kBufferBytes) flush_buffer();
    if (size >= kBufferBytes) {
        write_all(fd_.get(), bytes, size, tmp_path_);
    } else {
        buffer_.insert(buffer_.end(), bytes, bytes + size);
    }
}

void RawSampleWriter::flush_buffer() {
    write_all(fd_.get(), buffer_.data(), buffer_.size(), tmp_path_);
    buffer_.clear();
}

void RawSampleWriter::finish(bool partial) {
    flush_buffer();
    const auto footer = raw_footer(count_, crc_, partial);
    write_all(fd_.get(), footer.data(), footer.size(), tmp_path_);
    if (::fsync(fd_.get()) != 0) throw std::runtime_error("cannot fsync " + tmp_path_ + ": " + std::strerror(errno));
    fd_.reset();
    if (std::rename(tmp_path_.c_str(), path_.c_str()) != 0)
        throw std::runtime_error("cannot rename " + tmp_path_ + ": " + std::strerror(errno));
}

RawFileContents read_raw_file(const std::string& path) {
    RawFileContents out;
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        out.message = "cannot open " + path;
        return out;
    }
    std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (data.size() < kRawHeaderBytes || std::memcmp(data.data(), kRawMagic, sizeof kRawMagic) != 0) {
        out.status = RawFileStatus::corrupt;
        out.message = path + ": not a jitterlab raw sample file (bad header)";
        return out;
    }
    if (get_u32(data.data() + 12) != sizeof(SampleRecord)) {
        out.status = RawFileStatus::corrupt;
        out.message = path + ": unexpected record size";
        return out;
    }
    const std::size_t body = data.size() - kRawHeaderBytes;
    const bool has_footer = body >= kRawFooterBytes &&
        (body - kRawFooterBytes) % sizeof(SampleRecord) == 0 &&
        std::memcmp(data.data() + data.size() - kRawFooterBytes, kFooterMagic, sizeof kFooterMagic) == 0;
    const std::size_t record_bytes = has_footer ? body - kRawFooterBytes : body - body % sizeof(SampleRecord);
    out.records.resize(record_bytes / sizeof(SampleRecord));
    std::memcpy(out.records.data(), data.data() + kRawHeaderBytes, record_bytes);
    if (!has_footer) {
        out.status = RawFileStatus::truncated;
        out.partial = true;
        out.message = path + ": truncated (no footer); " + std::to_string(out.records.size()) + " whole records";
        return out;
    }
    const char* footer = data.data() + data.size() - kRawFooterBytes;
    const std::uint64_t count = get_u64(footer + 8);
    const std::uint32_t crc = get_u32(footer + 16);
    out.partial = (get_u64(footer + 24) & kFooterFlagPartial) != 0;
    if (count != out.records.size() || crc != crc32_update(0, data.data() + kRawHeaderBytes, record_bytes)) {
        out.status = RawFileStatus::corrupt;
        out.message = path + ": footer count or CRC-32 does not match the records";
        return out;
    }
    out.status = RawFileStatus::ok;
    return out;
}

}  // namespace jitterlab
