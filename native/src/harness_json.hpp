// JSON pieces every measuring tool writes into harness.json the same way.
#pragma once

#include <vector>

#include "jitterlab/floor.hpp"
#include "jitterlab/sched.hpp"
#include "json.hpp"

namespace jitterlab {

/// "placements": what each thread asked for and got.
inline void write_placements(JsonWriter& j, const std::vector<ThreadPlacement>& placements) {
    j.key("placements").begin_array();
    for (const auto& p : placements) {
        j.begin_object().field("role", p.role).field("pair", p.pair).field("policy", p.policy).field("priority", p.priority);
        j.key("cpus").values(p.cpus);
        j.field("policy_error", p.policy_error).field("affinity_error", p.affinity_error).end_object();
    }
    j.end_array();
}

/// "clock_overhead_ns": the cost of one CLOCK_MONOTONIC read.
inline void write_clock_overhead(JsonWriter& j, const ClockOverhead& clock) {
    j.key("clock_overhead_ns").begin_object().field("reads", clock.reads).field("min", clock.min_ns);
    j.field("median", clock.median_ns).field("mean", clock.mean_ns).field("p99", clock.p99_ns).end_object();
}

}  // namespace jitterlab
