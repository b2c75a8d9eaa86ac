// describe's pass kernels (src/stats_kernels.cpp): known answers on small samples, and the
// ranges they refuse instead of writing out of bounds (run under ASan+UBSan in CI).
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <vector>

#include "jitterlab/stats_kernels_c.h"

namespace {

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
