// The raw sample file every harness writes (documented in docs/run-format.md).
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "jitterlab/unique_fd.hpp"

namespace jitterlab {

/// One recorded message: which pair, which sample, when it was sent and received.
struct SampleRecord {
    std::int32_t pair;
    std::int32_t reserved;  // zero; keeps the record 8-byte aligned
    std::int64_t seq;
    std::int64_t t_send_ns;
    std::int64_t t_recv_ns;
};
static_assert(sizeof(SampleRecord) == 32);

/// The run format's extended record of `jitterlab net` (raw-samples.json, extended_records.net):
/// the 32-byte record followed by the intended and the actual send time and the two nodes. A
/// file holds one layout; its header's record size says which.
struct NetSampleRecord {
    std::int32_t pair;
    std::int32_t reserved;  // zero, as in SampleRecord
    std::int64_t seq;
    std::int64_t t_send_ns;  // what latency counts from (open loop: the intended time)
    std::int64_t t_recv_ns;
    std::int64_t t_intended_ns;
    std::int64_t t_actual_send_ns;
    std::int32_t src_node;
    std::int32_t dst_node;
};
static_assert(sizeof(NetSampleRecord) == 56);

inline constexpr char kRawMagic[8] = {'J', 'L', 'S', 'A', 'M', 'P', 'L', 'E'};
inline constexpr char kFooterMagic[8] = {'J', 'L', 'F', 'O', 'O', 'T', 'E', 'R'};
inline constexpr std::uint32_t kRawFormatVersion = 1;
inline constexpr std::size_t kRawHeaderBytes = 64;
inline constexpr std::size_t kRawFooterBytes = 32;
inline constexpr std::uint64_t kFooterFlagPartial = 1;

/// CRC-32 (IEEE 802.3, the polynomial of zlib.crc32 and java.util.zip.CRC32): `crc` is the
/// value so far (0 to start). zlib's crc32 where the build found zlib, else slicing-by-8.
std::uint32_t crc32_update(std::uint32_t crc, const void* data, std::size_t size) noexcept;

/// The same CRC-32 without zlib: slicing-by-8 (eight table lookups per eight bytes).
std::uint32_t crc32_slicing_by_8(std::uint32_t crc, const void* data, std::size_t size) noexcept;

/// Which implementation crc32_update uses: "zlib" or "slicing-by-8".
const char* crc32_backend() noexcept;

/// The 64-byte header of a raw sample file of `record_bytes`-byte records.
std::array<char, 64> raw_header(std::uint32_t record_bytes) noexcept;
/// The 32-byte footer: record count, CRC-32 of the record bytes, partial flag.
std::array<char, 32> raw_footer(std::uint64_t count, std::uint32_t crc, bool partial) noexcept;

/// Streams records to a raw sample file: header, records, then a footer with the count,
/// the CRC-32 of the record bytes and the partial flag. A file without a valid footer is
/// truncated; a footer whose count or CRC disagrees with the records is corrupt.
/// Writes go to `path + ".tmp"` and are renamed on `finish()`, so a reader never sees a
/// half-written file under the final name.
class RawSampleWriter {
public:
    explicit RawSampleWriter(std::string path);
    ~RawSampleWriter();
    RawSampleWriter(const RawSampleWriter&) = delete;
    RawSampleWriter& operator=(const RawSampleWriter&) = delete;

    void write(std::span<const SampleRecord> records);
    /// Writes the footer, flushes, fsyncs and renames into place.
    void finish(bool partial);

private:
    std::string path_;
    std::string tmp_path_;
    UniqueFd fd_;
    std::uint64_t count_ = 0;
    std::uint32_t crc_ = 0;
    std::vector<char> buffer_;
    void flush_buffer();
};

enum class RawFileStatus { ok, truncated, corrupt, unreadable };

struct RawFileContents {
    RawFileStatus status = RawFileStatus::unreadable;
    bool partial = false;
    std::string message;
    std::vector<SampleRecord> records;  // the whole records that could be read
};

/// Reads and checks a raw sample file (used by the native tests; Python has its own reader).
RawFileContents read_raw_file(const std::string& path);

}  // namespace jitterlab
