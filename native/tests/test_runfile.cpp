#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <cstdint>
#include <filesystem>
#include <span>
#include <fstream>
#include <string>
#include <vector>

#include "jitterlab/runfile.hpp"

namespace fs = std::filesystem;
using namespace jitterlab;

namespace {

std::string temp_path(const char* name) {
    return (fs::temp_directory_path() / (std::string("jitterlab-test-") + std::to_string(::getpid()) + "-" + name)).string();
}

std::vector<SampleRecord> make_records(int n) {
    std::vector<SampleRecord> records;
    for (int i = 0; i < n; ++i) records.push_back({i % 3, 0, i, 1000 + i, 1500 + 2 * i});
    return records;
}

}  // namespace

TEST(RawFile, Crc32MatchesTheZlibCheckValue) {
    const char* text = "123456789";
    EXPECT_EQ(crc32_update(0, text, 9), 0xCBF43926U);
    EXPECT_EQ(crc32_slicing_by_8(0, text, 9), 0xCBF43926U);
    EXPECT_EQ(crc32_update(0, text, 0), 0U);
}

// The records of make_records(100'000): the same constant stands in the JVM's known-answer
// test (HarnessTest.crcOfKnownRecordsMatchesNativeAndPython), from Python's zlib.crc32.
TEST(RawFile, Crc32OfKnownRecordsMatchesJavaAndPython) {
    const auto records = make_records(100'000);
    const auto bytes = std::as_bytes(std::span(records));
    EXPECT_EQ(crc32_update(0, bytes.data(), bytes.size()), 0xB2096047U) << crc32_backend();
    EXPECT_EQ(crc32_slicing_by_8(0, bytes.data(), bytes.size()), 0xB2096047U);
}

TEST(RawFile, Crc32InPiecesAtAnyAlignmentEqualsTheWhole) {
    std::vector<unsigned char> data(1 << 16);
    std::uint32_t x = 12345;
    for (auto& b : data) b = static_cast<unsigned char>((x = x * 1103515245U + 12345U) >> 24);
    const auto whole = crc32_slicing_by_8(0, data.data(), data.size());
    EXPECT_EQ(crc32_update(0, data.data(), data.size()), whole);
    for (std::size_t cut : {1U, 3U, 7U, 8U, 9U, 4097U}) {
        for (std::size_t offset : {0U, 1U, 5U}) {
            const auto head = crc32_slicing_by_8(0, data.data(), offset + cut);
            EXPECT_EQ(crc32_slicing_by_8(head, data.data() + offset + cut, data.size() - offset - cut), whole);
            EXPECT_EQ(crc32_update(crc32_update(0, data.data(), offset + cut), data.data() + offset + cut,
                                   data.size() - offset - cut),
                      whole);
        }
    }
}

TEST(RawFile, RoundTripKeepsEveryRecord) {
    const auto path = temp_path("roundtrip.jlraw");
    const auto records = make_records(100'000);
    {
        RawSampleWriter writer(path);
        writer.write(std::span(records).first(40'000));
        writer.write(std::span(records).subspan(40'000));
        writer.finish(false);
    }
    EXPECT_FALSE(fs::exists(path + ".tmp"));
    const auto read = read_raw_file(path);
    ASSERT_EQ(read.status, RawFileStatus::ok) << read.message;
    EXPECT_FALSE(read.partial);
    ASSERT_EQ(read.records.size(), records.size());
    for (std::size_t i = 0; i < records.size(); ++i) {
        ASSERT_EQ(read.records[i].pair, records[i].pair);
        ASSERT_EQ(read.records[i].seq, records[i].seq);
        ASSERT_EQ(read.records[i].t_send_ns, records[i].t_send_ns);
        ASSERT_EQ(read.records[i].t_recv_ns, records[i].t_recv_ns);
    }
    fs::remove(path);
}

TEST(RawFile, PartialFlagSurvives) {
    const auto path = temp_path("partial.jlraw");
    const auto records = make_records(10);
    RawSampleWriter writer(path);
    writer.write(records);
    writer.finish(true);
    const auto read = read_raw_file(path);
    EXPECT_EQ(read.status, RawFileStatus::ok);
    EXPECT_TRUE(read.partial);
    fs::remove(path);
}

TEST(RawFile, TruncationIsDetectedAndWholeRecordsSalvaged) {
    const auto path = temp_path("truncated.jlraw");
    const auto records = make_records(1000);
    {
        RawSampleWriter writer(path);
        writer.write(records);
        writer.finish(false);
    }
    const auto full = fs::file_size(path);
    fs::resize_file(path, full - kRawFooterBytes - 10);  // lose the footer and part of a record
    const auto read = read_raw_file(path);
    EXPECT_EQ(read.status, RawFileStatus::truncated);
    EXPECT_TRUE(read.partial);
    EXPECT_EQ(read.records.size(), 999U);
    fs::remove(path);
}

TEST(RawFile, FlippedByteIsCorrupt) {
    const auto path = temp_path("corrupt.jlraw");
    const auto records = make_records(1000);
    {
        RawSampleWriter writer(path);
        writer.write(records);
        writer.finish(false);
    }
    {
        std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
        f.seekp(static_cast<std::streamoff>(kRawHeaderBytes + 500));
        f.put('\x7f');
    }
    EXPECT_EQ(read_raw_file(path).status, RawFileStatus::corrupt);
    fs::remove(path);
}

TEST(RawFile, UnfinishedWriterLeavesOnlyATmpFile) {
    const auto path = temp_path("unfinished.jlraw");
    {
        RawSampleWriter writer(path);
        writer.write(make_records(5));
    }
    EXPECT_FALSE(fs::exists(path));
    EXPECT_TRUE(fs::exists(path + ".tmp"));
    fs::remove(path + ".tmp");
}
