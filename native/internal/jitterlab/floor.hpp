// The machine floor every result is read against: clock-read cost and core-to-core latency.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "jitterlab/runfile.hpp"

namespace jitterlab {

struct ClockOverhead {
    std::int64_t reads = 0;
    double min_ns = 0, median_ns = 0, mean_ns = 0, p99_ns = 0;
};

/// Back-to-back CLOCK_MONOTONIC reads: the cost of one timestamp.
ClockOverhead measure_clock_overhead(std::int64_t reads);

struct CoreToCore {
    bool measured = false;
    std::string skipped_reason;  // why not, when not measured
    int cpu_a = -1, cpu_b = -1;
    std::int64_t round_trips = 0;
    double one_way_min_ns = 0, one_way_median_ns = 0, one_way_p99_ns = 0;
};

/// Cache-line ping-pong between two threads pinned on two CPUs. Each leg's one-way latency
/// is timestamped by the writer before its store and by the reader when it sees the store,
/// the same way the harness measures messages. Legs A->B are returned in `legs` when given.
CoreToCore measure_core_to_core(std::int64_t round_trips, std::vector<SampleRecord>* legs = nullptr);

}  // namespace jitterlab
