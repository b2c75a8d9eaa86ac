// The inner loops of describe's two passes over a samples file (docs/statistics.md, "describe
// in two passes"), called from Python through ctypes (jitterlab.stats.kernels). Integer work only:
// every result is a count, an exact integer sum, a minimum or a maximum, so chunks may be
// folded in any order and the results equal the numpy passes they replace to the last bit.
//
// Each function returns 0, or a negative code when a sample falls outside what the caller
// sized its arrays for (then the caller discards every array and takes the numpy path).
#include <jitterlab/stats_kernels_c.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <limits>

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(__linux__)
#define JL_SUMMARY_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define JL_SUMMARY_CLONES
#endif

namespace {

// 128-bit integers (a GCC/Clang extension) for exact sums of squares
__extension__ typedef __int128 Int128;
__extension__ typedef unsigned __int128 UInt128;

// Log-linear bucket of y >= 0: below 2^sub_bits every value has its own bucket; above, a
// bucket spans 2^k values, k = bit_width(y) - sub_bits, so buckets are at most 2^(1-sub_bits)
// of their values wide (HdrHistogram's layout with sub_bits significant bits).
inline std::int64_t bucket_of(std::uint64_t y, int sub_bits) {
  const int k = static_cast<int>(std::bit_width(y)) - sub_bits;
  if (k <= 0) {
    return static_cast<std::int64_t>(y);
  }
  return (static_cast<std::int64_t>(k) << (sub_bits - 1)) + static_cast<std::int64_t>(y >> k);
}

// The latency and the window of sample i; false when either lies outside the caller's range.
inline bool sample_at(const std::int64_t* send, const std::int64_t* recv, std::int64_t i, std::int64_t t0,
                      std::int64_t width, std::int64_t n_windows, std::int64_t& x, std::int64_t& w) {
  if (__builtin_sub_overflow(recv[i], send[i], &x)) {
    return false;
  }
  std::int64_t dt = 0;
  if (__builtin_sub_overflow(send[i], t0, &dt) || dt < 0) {
    return false;
  }
  w = dt / width;
  return w < n_windows;
}

}  // namespace

extern "C" {

int jl_windows_first_pass(const std::int64_t* send, const std::int64_t* recv, std::int64_t n,
                          std::int64_t t0, std::int64_t width, std::int64_t n_windows, std::int64_t base,
                          std::int32_t sub_bits, std::int64_t n_buckets, std::int64_t* count,
                          std::int64_t* sum, std::int64_t* lowest, std::int64_t* highest,
                          std::int64_t* hist, std::int64_t* dense, std::int64_t dense_len,
                          std::int64_t* beyond, std::int64_t* n_beyond) {
  if (width <= 0 || sub_bits < 1 || sub_bits > 30) {
    return -1;
  }
  std::int64_t m = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    std::int64_t x = 0;
    std::int64_t w = 0;
    if (!sample_at(send, recv, i, t0, width, n_windows, x, w)) {
      return -2;
    }
    std::int64_t y = 0;
    if (__builtin_sub_overflow(x, base, &y) || y < 0) {
      return -3;
    }
    const std::int64_t b = bucket_of(static_cast<std::uint64_t>(y), sub_bits);
    if (b >= n_buckets) {
      return -3;
    }
    if (__builtin_add_overflow(sum[w], x, &sum[w])) {
      return -4;
    }
    count[w] += 1;
    lowest[w] = x < lowest[w] ? x : lowest[w];
    highest[w] = x > highest[w] ? x : highest[w];
    hist[w * n_buckets + b] += 1;
    if (y < dense_len) {
      dense[y] += 1;
    } else {
      beyond[m++] = x;
    }
  }
  *n_beyond = m;
  return 0;
}

int jl_count_values(const std::int64_t* x, std::int64_t n, std::int64_t base, std::int64_t* dense,
                    std::int64_t dense_len, std::int64_t* beyond, std::int64_t* n_beyond) {
  std::int64_t m = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    std::int64_t y = 0;
    if (__builtin_sub_overflow(x[i], base, &y) || y < 0) {
      return -3;
    }
    if (y < dense_len) {
      dense[y] += 1;
    } else {
      beyond[m++] = x[i];
    }
  }
  *n_beyond = m;
  return 0;
}

int jl_windows_refine_pass(const std::int64_t* send, const std::int64_t* recv, std::int64_t n,
                           std::int64_t t0, std::int64_t width, std::int64_t n_windows,
                           const double* cuts, std::int32_t n_cuts, std::int32_t has_low, double low,
                           std::int64_t* slot_counts, std::int32_t n_groups, const std::int64_t* a,
                           const std::int64_t* b, const std::int64_t* step, std::int64_t nb,
                           std::int64_t* hist) {
  if (width <= 0 || nb <= 0) {
    return -1;
  }
  const std::int64_t n_slots = n_cuts + 1 + (has_low ? 1 : 0);
  for (std::int64_t i = 0; i < n; ++i) {
    std::int64_t x = 0;
    std::int64_t w = 0;
    if (!sample_at(send, recv, i, t0, width, n_windows, x, w)) {
      return -2;
    }
    if (slot_counts != nullptr) {
      // stats.categories.categorize: the number of cuts below the value, -1 below the low
      // cut; the slot shifts by one when there is a low cut
      const auto v = static_cast<double>(x);
      std::int64_t label = 0;
      for (std::int32_t c = 0; c < n_cuts; ++c) {
        label += v > cuts[c] ? 1 : 0;
      }
      if (has_low && v < low) {
        label = -1;
      }
      slot_counts[w * n_slots + label + (has_low ? 1 : 0)] += 1;
    }
    for (std::int32_t g = 0; g < n_groups; ++g) {
      // a closed interval per (group, window); an empty one has a > b
      const std::int64_t k = g * n_windows + w;
      if (x >= a[k] && x <= b[k]) {
        hist[k * nb + (x - a[k]) / step[k]] += 1;
      }
    }
  }
  return 0;
}

// Built twice, for AVX2 (64-bit compares for the extremes) and for any x86-64, the loader
// picking the one this CPU runs (GCC's target_clones); integer work, so both give the same
// results.
JL_SUMMARY_CLONES int jl_summary_pass(const std::int64_t* a, const std::int64_t* b, std::int64_t n, std::int64_t base,
                    std::int64_t* dense, std::int64_t dense_len, std::int64_t* beyond, std::int64_t* n_beyond,
                    std::int64_t* moments) {
  // Blocks of values, so that the common case vectorises: the differences with an overflow
  // flag, the block's extremes, then its sums in int64 when its values are small enough for
  // that to be exact (|x| < 2^26: x^2 < 2^52, a block's sum < 2^63), else in 128 bits.
  // |x| <= 2^63, so the 128-bit sum cannot overflow for n < 2^64; the sum of squares is
  // checked only when a value reaches 2^31 (below, n x^2 < 2^126).
  constexpr std::int64_t kBlock = 2048;
  std::array<std::int64_t, kBlock> xs{};
  Int128 sum = 0;
  UInt128 squares = 0;
  std::int64_t lowest = std::numeric_limits<std::int64_t>::max();
  std::int64_t highest = std::numeric_limits<std::int64_t>::min();
  std::int64_t m = 0;
  for (std::int64_t start = 0; start < n; start += kBlock) {
    const std::int64_t len = std::min(kBlock, n - start);
    const std::int64_t* bb = b + start;
    std::uint64_t overflow = 0;
    if (a == nullptr) {
      std::copy(bb, bb + len, xs.begin());
    } else {
      const std::int64_t* aa = a + start;
      for (std::int64_t i = 0; i < len; ++i) {
        // two's complement subtraction; it overflowed when b and a differ in sign and x's
        // sign is not b's
        const auto x = static_cast<std::int64_t>(static_cast<std::uint64_t>(bb[i]) - static_cast<std::uint64_t>(aa[i]));
        overflow |= static_cast<std::uint64_t>((bb[i] ^ aa[i]) & (bb[i] ^ x));
        xs[i] = x;
      }
    }
    if ((overflow >> 63) != 0) {
      return -2;
    }
    std::int64_t lo = xs[0];
    std::int64_t hi = xs[0];
    for (std::int64_t i = 1; i < len; ++i) {
      lo = std::min(lo, xs[i]);
      hi = std::max(hi, xs[i]);
    }
    lowest = std::min(lowest, lo);
    highest = std::max(highest, hi);
    const auto magnitude = [](std::int64_t v) {
      return v < 0 ? std::uint64_t{0} - static_cast<std::uint64_t>(v) : static_cast<std::uint64_t>(v);
    };
    const std::uint64_t largest = std::max(magnitude(lo), magnitude(hi));
    if (largest < (std::uint64_t{1} << 26)) {
      // |x| < 2^26 fits 32 bits: x^2 as a 32x32->64-bit product of |x|, which vectorises
      // (pmuludq) where a 64-bit multiply does not; the same integer either way
      std::int64_t block_sum = 0;
      std::uint64_t block_squares = 0;
      for (std::int64_t i = 0; i < len; ++i) {
        block_sum += xs[i];
        const auto v = static_cast<std::int32_t>(xs[i]);
        const auto u = static_cast<std::uint32_t>(v < 0 ? -v : v);
        block_squares += std::uint64_t{u} * u;
      }
      sum += block_sum;
      squares += block_squares;
    } else {
      for (std::int64_t i = 0; i < len; ++i) {
        sum += xs[i];
        const UInt128 u = magnitude(xs[i]);
        if (largest < (std::uint64_t{1} << 31)) {
          squares += u * u;
        } else if (__builtin_add_overflow(squares, u * u, &squares)) {
          return -4;
        }
      }
    }
    if (beyond != nullptr && lo >= base && hi - base < dense_len) {  // hi - base >= 0: no overflow
      for (std::int64_t i = 0; i < len; ++i) {  // the usual block: every value in the dense range
        dense[xs[i] - base] += 1;
      }
    } else if (beyond != nullptr) {
      for (std::int64_t i = 0; i < len; ++i) {
        std::int64_t y = 0;
        if (!__builtin_sub_overflow(xs[i], base, &y) && y >= 0 && y < dense_len) {
          dense[y] += 1;
        } else {
          beyond[m++] = xs[i];
        }
      }
    }
  }
  if (n_beyond != nullptr) {
    *n_beyond = m;
  }
  const auto words = [](UInt128 v, std::int64_t* out) {
    out[0] = static_cast<std::int64_t>(static_cast<std::uint64_t>(v >> 64));
    out[1] = static_cast<std::int64_t>(static_cast<std::uint64_t>(v));
  };
  moments[0] = lowest;
  moments[1] = highest;
  words(static_cast<UInt128>(sum), moments + 2);
  words(squares, moments + 4);
  return 0;
}

}  // extern "C"
