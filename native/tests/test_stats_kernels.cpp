// describe's pass kernels (src/stats_kernels.cpp): known answers on small samples, and the
// ranges they refuse instead of writing out of bounds (run under ASan+UBSan in CI).
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <vector>

#include "jitterlab/stats_kernels_c.h"

namespace {

// 128-bit integers (a GCC/Clang extension) for exact sums of squares
__extension__ typedef __int128 Int128;
__extension__ typedef unsigned __int128 UInt128;

constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();

struct FirstPass {
  std::int64_t windows;
  std::int64_t buckets;
  std::vector<std::int64_t> count, sum, lowest, highest, hist, dense, beyond;
  std::int64_t n_beyond = 0;

  FirstPass(std::int64_t w, std::int64_t b, std::int64_t dense_len, std::size_t n)
      : windows(w), buckets(b), count(w), sum(w), lowest(w, kMax), highest(w, kMin), hist(w * b),
        dense(dense_len), beyond(n) {}

  int run(const std::vector<std::int64_t>& send, const std::vector<std::int64_t>& recv, std::int64_t t0,
          std::int64_t width, std::int64_t base, std::int32_t sub_bits) {
    return jl_windows_first_pass(send.data(), recv.data(), static_cast<std::int64_t>(send.size()), t0, width,
                                 windows, base, sub_bits, buckets, count.data(), sum.data(), lowest.data(),
                                 highest.data(), hist.data(), dense.data(), static_cast<std::int64_t>(dense.size()),
                                 beyond.data(), &n_beyond);
  }
};

}  // namespace

TEST(StatsKernels, FirstPassCountsWindowsBucketsAndValues) {
  // latencies 10, 11, 12 in window 0 and 10, 40, 1000 in window 1; base 10, 3 sub-bits
  const std::vector<std::int64_t> send{0, 5, 9, 10, 15, 19};
  const std::vector<std::int64_t> lat{10, 11, 12, 10, 40, 1000};
  std::vector<std::int64_t> recv(send.size());
  for (std::size_t i = 0; i < send.size(); ++i) recv[i] = send[i] + lat[i];
  FirstPass p(2, 64, 8, send.size());
  ASSERT_EQ(p.run(send, recv, 0, 10, 10, 3), 0);
  EXPECT_EQ(p.count, (std::vector<std::int64_t>{3, 3}));
  EXPECT_EQ(p.sum, (std::vector<std::int64_t>{33, 1050}));
  EXPECT_EQ(p.lowest, (std::vector<std::int64_t>{10, 10}));
  EXPECT_EQ(p.highest, (std::vector<std::int64_t>{12, 1000}));
  // offsets 0, 1, 2 have their own buckets; 30 = 0b11110: k = 5 - 3 = 2, bucket 2*4 + 7 = 15;
  // 990 = 0b1111011110: k = 7, bucket 7*4 + 7 = 35
  EXPECT_EQ(p.hist[0] + p.hist[1] + p.hist[2], 3);
  EXPECT_EQ(p.hist[64 + 0], 1);
  EXPECT_EQ(p.hist[64 + 15], 1);
  EXPECT_EQ(p.hist[64 + 35], 1);
  EXPECT_EQ(p.dense, (std::vector<std::int64_t>{2, 1, 1, 0, 0, 0, 0, 0}));
  ASSERT_EQ(p.n_beyond, 2);
  EXPECT_EQ(p.beyond[0], 40);
  EXPECT_EQ(p.beyond[1], 1000);
}

TEST(StatsKernels, FirstPassRefusesWhatItsArraysCannotHold) {
  const std::vector<std::int64_t> send{0, 25};
  const std::vector<std::int64_t> recv{10, 35};
  FirstPass windows(2, 64, 8, 2);
  EXPECT_EQ(windows.run(send, recv, 0, 10, 10, 3), -2);  // send 25 is in window 2 of 2
  FirstPass early(3, 64, 8, 2);
  EXPECT_EQ(early.run(send, recv, 1, 10, 10, 3), -2);  // send 0 is before t0
  FirstPass low(3, 64, 8, 2);
  EXPECT_EQ(low.run(send, recv, 0, 10, 11, 3), -3);  // latency 10 is below the base
  FirstPass few(3, 1, 8, 2);
  const std::vector<std::int64_t> far{1000, 1025};
  EXPECT_EQ(few.run(send, far, 0, 10, 10, 3), -3);  // its bucket is past the last one
  const std::vector<std::int64_t> big{0, 0};
  const std::vector<std::int64_t> overflowing{kMax, kMax};
  FirstPass sums(1, 64, 8, 2);
  EXPECT_EQ(sums.run(big, overflowing, 0, 10, kMax - 1, 3), -4);  // the window's sum overflows
}

TEST(StatsKernels, RefinePassCountsCategoriesAndIntervalBuckets) {
  const std::vector<std::int64_t> send{0, 1, 2, 3, 10, 11};
  const std::vector<std::int64_t> lat{5, 20, 25, 100, 21, 22};
  std::vector<std::int64_t> recv(send.size());
  for (std::size_t i = 0; i < send.size(); ++i) recv[i] = send[i] + lat[i];
  const std::vector<double> cuts{19.5, 50.0};
  // low cut 6: 5 is category -1; slots: -1, 0, 1, 2
  std::vector<std::int64_t> slots(2 * 4);
  // one group: window 0 interval [20, 27] in 4 buckets of 2; window 1 closed (empty)
  const std::vector<std::int64_t> a{20, 1};
  const std::vector<std::int64_t> b{27, 0};
  const std::vector<std::int64_t> step{2, 1};
  std::vector<std::int64_t> hist(2 * 4);
  ASSERT_EQ(jl_windows_refine_pass(send.data(), recv.data(), 6, 0, 10, 2, cuts.data(), 2, 1, 6.0, slots.data(), 1,
                                   a.data(), b.data(), step.data(), 4, hist.data()),
            0);
  EXPECT_EQ(slots, (std::vector<std::int64_t>{1, 0, 2, 1, 0, 0, 2, 0}));
  EXPECT_EQ(hist, (std::vector<std::int64_t>{1, 0, 1, 0, 0, 0, 0, 0}));
}

TEST(StatsKernels, CountValuesDenseAndBeyond) {
  const std::vector<std::int64_t> x{-3, -1, -3, 5, 100};
  std::vector<std::int64_t> dense(6);
  std::vector<std::int64_t> beyond(x.size());
  std::int64_t n_beyond = 0;
  ASSERT_EQ(jl_count_values(x.data(), 5, -3, dense.data(), 6, beyond.data(), &n_beyond), 0);
  EXPECT_EQ(dense, (std::vector<std::int64_t>{2, 0, 1, 0, 0, 0}));
  ASSERT_EQ(n_beyond, 2);  // 5 - (-3) = 8 and 103 lie past the 6 dense counts
  EXPECT_EQ(beyond[0], 5);
  EXPECT_EQ(beyond[1], 100);
  EXPECT_EQ(jl_count_values(x.data(), 5, -2, dense.data(), 6, beyond.data(), &n_beyond), -3);  // -3 < base
}

namespace {

// A 128-bit word pair of jl_summary_pass's moments, as one number.
Int128 words(const std::int64_t* w) {
  return static_cast<Int128>((static_cast<UInt128>(static_cast<std::uint64_t>(w[0])) << 64) |
                               static_cast<std::uint64_t>(w[1]));
}

}  // namespace

TEST(StatsKernels, SummaryPassMomentsAndCountsOnBothSidesOfTheDenseRange) {
  // 5000 values (more than one block), mostly small, some below and above the dense range
  std::vector<std::int64_t> send(5000);
  std::vector<std::int64_t> recv(5000);
  Int128 sum = 0;
  Int128 squares = 0;
  for (std::size_t i = 0; i < send.size(); ++i) {
    const std::int64_t x = i % 1000 == 7 ? -40 : (i % 1000 == 8 ? (std::int64_t{1} << 40) : 100 + i % 13);
    send[i] = static_cast<std::int64_t>(i) * 3;
    recv[i] = send[i] + x;
    sum += x;
    squares += static_cast<Int128>(x) * x;
  }
  std::vector<std::int64_t> dense(20);
  std::vector<std::int64_t> beyond(send.size());
  std::int64_t n_beyond = 0;
  std::int64_t moments[6] = {};
  ASSERT_EQ(jl_summary_pass(send.data(), recv.data(), 5000, 100, dense.data(), 20, beyond.data(), &n_beyond, moments), 0);
  EXPECT_EQ(moments[0], -40);
  EXPECT_EQ(moments[1], std::int64_t{1} << 40);
  EXPECT_TRUE(words(moments + 2) == sum);
  EXPECT_TRUE(words(moments + 4) == squares);
  std::int64_t counted = 0;
  for (const auto c : dense) counted += c;
  EXPECT_EQ(counted, 5000 - 10);
  ASSERT_EQ(n_beyond, 10);  // five -40s below the base and five 2^40s above the range
  // without a first array, x is b itself; without beyond, nothing is counted
  std::int64_t alone[6] = {};
  const std::vector<std::int64_t> negative{-3, -1, -2};
  ASSERT_EQ(jl_summary_pass(nullptr, negative.data(), 3, 0, nullptr, 0, nullptr, nullptr, alone), 0);
  EXPECT_EQ(alone[0], -3);
  EXPECT_EQ(alone[1], -1);
  EXPECT_TRUE(words(alone + 2) == -6);
  EXPECT_TRUE(words(alone + 4) == 14);
}

TEST(StatsKernels, SummaryPassRefusesOverflows) {
  std::int64_t moments[6] = {};
  const std::vector<std::int64_t> a{-1};
  const std::vector<std::int64_t> b{kMax};
  EXPECT_EQ(jl_summary_pass(a.data(), b.data(), 1, 0, nullptr, 0, nullptr, nullptr, moments), -2);  // kMax + 1
  const std::vector<std::int64_t> huge(8, kMin);  // 8 x 2^126 passes 2^128
  EXPECT_EQ(jl_summary_pass(nullptr, huge.data(), 8, 0, nullptr, 0, nullptr, nullptr, moments), -4);
  const std::vector<std::int64_t> three(3, kMin);  // 3 x 2^126 fits
  ASSERT_EQ(jl_summary_pass(nullptr, three.data(), 3, 0, nullptr, 0, nullptr, nullptr, moments), 0);
  EXPECT_TRUE(static_cast<UInt128>(words(moments + 4)) == static_cast<UInt128>(3) << 126);
  EXPECT_TRUE(words(moments + 2) == static_cast<Int128>(kMin) * 3);
}
