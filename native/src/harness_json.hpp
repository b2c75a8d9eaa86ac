// harness.json, the metadata every measuring tool writes beside its raw samples, built with
// nlohmann/json; the pieces every tool writes the same way are here.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "jitterlab/floor.hpp"
#include "jitterlab/sched.hpp"
#include "warning.hpp"

namespace jitterlab {

/// Keys in the order they are set, so the file reads like the code that wrote it.
using Json = nlohmann::ordered_json;

/// "placements": what each thread asked for and got.
inline Json placements_json(const std::vector<ThreadPlacement>& placements) {
    Json out = Json::array();
    for (const auto& p : placements)
        out.push_back({{"role", p.role}, {"pair", p.pair}, {"policy", p.policy}, {"priority", p.priority},
                       {"cpus", p.cpus}, {"policy_error", p.policy_error}, {"affinity_error", p.affinity_error}});
    return out;
}

/// The warnings every tool raises about a thread's placement.
inline void placement_warnings(std::vector<Warning>& out, const ThreadPlacement& p) {
    if (!p.policy_error.empty())
        out.push_back({WarningCode::policy_refused, "scheduling policy refused (" + p.policy_error + "); running as " + p.policy});
    if (!p.affinity_error.empty())
        out.push_back({WarningCode::affinity_refused, "CPU affinity refused (" + p.affinity_error + "); the thread runs unpinned"});
}

/// "clock_overhead_ns": the cost of one CLOCK_MONOTONIC read.
inline Json clock_overhead_json(const ClockOverhead& clock) {
    return {{"reads", clock.reads}, {"min", clock.min_ns}, {"median", clock.median_ns}, {"mean", clock.mean_ns}, {"p99", clock.p99_ns}};
}

/// "policy_requested".
inline Json policy_json(const PolicyRequest& policy) {
    return {{"policy", policy_name(policy.policy)}, {"priority", policy.priority}};
}

/// "mlock": asked for, obtained, why not.
inline Json mlock_json(bool requested, const std::string& error) {
    return {{"requested", requested}, {"obtained", requested && error.empty()}, {"error", error}};
}

/// The fields that close every harness.json: status, why partial, timing.
inline void set_status(Json& j, bool partial, const std::string& partial_reason, std::int64_t started_realtime_ns,
                       std::int64_t t_start_ns, std::int64_t t_end_ns) {
    j["status"] = partial ? "partial" : "complete";
    j["partial_reason"] = partial_reason;
    j["started_realtime_ns"] = started_realtime_ns;
    j["t_start_ns"] = t_start_ns;
    j["t_end_ns"] = t_end_ns;
}

/// The document as text: bytes that are not UTF-8 (a path, an error message) are replaced,
/// never a reason to lose the file.
inline std::string json_text(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

}  // namespace jitterlab
