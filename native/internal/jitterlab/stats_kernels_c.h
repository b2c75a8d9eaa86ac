// The C API of describe's pass kernels (src/stats_kernels.cpp), for Python's ctypes
// (jitterlab.stats.kernels). Arrays are caller-owned, int64 unless said otherwise.
#pragma once

#include <stdint.h>  // NOLINT(modernize-deprecated-headers): a C header

#ifdef __cplusplus
extern "C" {
#endif

// First pass over (send, recv) samples: per window (send - t0) / width, the count, exact sum,
// minimum and maximum of the latencies and their log-linear histogram (n_buckets per window,
// sub_bits significant bits, of latency - base); every latency's count in dense[latency -
// base] when below dense_len, else the latency appended to beyond (room for n values).
__attribute__((visibility("default"))) int jl_windows_first_pass(
    const int64_t* send, const int64_t* recv, int64_t n, int64_t t0, int64_t width, int64_t n_windows,
    int64_t base, int32_t sub_bits, int64_t n_buckets, int64_t* count, int64_t* sum, int64_t* lowest,
    int64_t* highest, int64_t* hist, int64_t* dense, int64_t dense_len, int64_t* beyond, int64_t* n_beyond);

// Every value's count in dense[value - base] when below dense_len, else the value appended
// to beyond (room for n values).
__attribute__((visibility("default"))) int jl_count_values(const int64_t* x, int64_t n, int64_t base, int64_t* dense,
                                                           int64_t dense_len, int64_t* beyond, int64_t* n_beyond);

// A refinement pass: per window, the category counts under cuts (slot_counts, null to skip;
// n_cuts + 1 slots, one more first when has_low), and for each group g the counts of the
// latencies inside [a, b] of (g, window) in nb buckets of step values (hist: n_groups x
// n_windows x nb).
__attribute__((visibility("default"))) int jl_windows_refine_pass(
    const int64_t* send, const int64_t* recv, int64_t n, int64_t t0, int64_t width, int64_t n_windows,
    const double* cuts, int32_t n_cuts, int32_t has_low, double low, int64_t* slot_counts, int32_t n_groups,
    const int64_t* a, const int64_t* b, const int64_t* step, int64_t nb, int64_t* hist);

// One chunk of the summary's single pass over x[i] = b[i] - a[i] (x[i] = b[i] when a is null):
// moments = {min, max, sum_hi, sum_lo, squares_hi, squares_lo}, the chunk's extremes and its
// exact sums of x and x^2 as 128-bit integers (high word signed, low word unsigned). When
// beyond is not null, every value in [base, base + dense_len) is also counted in
// dense[value - base] and the others (on either side) appended to beyond (room for n).
// -2: b[i] - a[i] overflows; -4: the sum of squares overflows 128 bits; 0 otherwise (n >= 1).
__attribute__((visibility("default"))) int jl_summary_pass(const int64_t* a, const int64_t* b, int64_t n,
                                                           int64_t base, int64_t* dense, int64_t dense_len,
                                                           int64_t* beyond, int64_t* n_beyond, int64_t* moments);

#ifdef __cplusplus
}
#endif
