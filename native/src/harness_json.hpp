// JSON pieces every measuring tool writes into harness.json the same way.
#pragma once

#include <string>
#include <vector>

#include "jitterlab/floor.hpp"
#include "jitterlab/sched.hpp"
#include "json.hpp"
#include "warning.hpp"

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

/// "warnings": each as {"code", "detail"}.
inline void write_warnings(JsonWriter& j, const std::vector<Warning>& warnings) {
    j.key("warnings").begin_array();
    for (const auto& w : warnings) j.begin_object().field("code", w.code).field("detail", w.detail).end_object();
    j.end_array();
}

/// The warnings every tool raises about a thread's placement.
inline void placement_warnings(std::vector<Warning>& out, const ThreadPlacement& p) {
    if (!p.policy_error.empty())
        out.push_back({"policy-refused", "scheduling policy refused (" + p.policy_error + "); running as " + p.policy});
    if (!p.affinity_error.empty())
        out.push_back({"affinity-refused", "CPU affinity refused (" + p.affinity_error + "); the thread runs unpinned"});
}

/// "clock_overhead_ns": the cost of one CLOCK_MONOTONIC read.
inline void write_clock_overhead(JsonWriter& j, const ClockOverhead& clock) {
    j.key("clock_overhead_ns").begin_object().field("reads", clock.reads).field("min", clock.min_ns);
    j.field("median", clock.median_ns).field("mean", clock.mean_ns).field("p99", clock.p99_ns).end_object();
}

}  // namespace jitterlab
