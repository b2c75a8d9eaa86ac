// jitterlab-bench: runs one technique x pairs configuration and writes a raw sample file
// plus harness.json into --out. The Python CLI orchestrates matrices and ingests the output.
//
// Progress goes to stdout as "progress RECORDED TOTAL" lines; warnings to stderr.
// SIGINT/SIGTERM/SIGHUP stop the run at the next round and keep every sample recorded so far.
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <stdexcept>
#include <thread>

#include "../src/harness_json.hpp"
#include "../src/tool_util.hpp"
#include "harness.hpp"
#include "techniques.hpp"
#include "jitterlab/clock.hpp"
#include "jitterlab/floor.hpp"
#include "jitterlab/runfile.hpp"

#ifndef JITTERLAB_VERSION
#define JITTERLAB_VERSION "0.0.0"
#endif

namespace jl = jitterlab;

namespace {

constexpr std::int64_t kStopGraceMs = 5000;
constexpr const char* kTool = "jitterlab-bench";

[[noreturn]] void usage_error(const std::string& message) { jl::tool::usage_error(kTool, message); }

struct Options {
    jl::HarnessConfig config;
    std::int64_t floor_round_trips = 20'000;
    bool list = false;
};

Options parse(int argc, char** argv) {
    namespace t = jl::tool;
    Options o;
    auto& c = o.config;
    auto policy = [&c](t::ArgReader& a) {
        const std::string v = a.value();
        if (!jl::parse_policy(v, c.policy.policy)) usage_error("--policy expects other, fifo, rr or deadline, got '" + v + "'");
    };
    auto caf_scheduler = [&c](t::ArgReader& a) {
        c.caf_scheduler = a.value();
        if (c.caf_scheduler != "stealing" && c.caf_scheduler != "sharing" && c.caf_scheduler != "detached")
            usage_error("--caf-scheduler expects stealing, sharing or detached");
    };
    constexpr std::int64_t kDl = 1LL << 40;
    t::read_options(
        kTool, argc, argv, "--technique NAME --out DIR [options]",
        "The n x (1:1) message-passing latency harness (seed 000): samples.jlraw and harness.json into --out.\n"
        "jitterlab-bench --list prints the techniques, one per line: name, available, description.",
        {
            t::text_option("--technique", "NAME", "the channel technique (see --list)", c.technique),
            t::text_option("--out", "DIR", "folder for samples.jlraw and harness.json (must exist)", c.out_dir),
            t::int_option("--pairs", "N", "sender/receiver pairs (default 1)", c.pairs, 1, 1024),
            t::int_option("--samples", "N", "recorded messages per pair (default 1000000)", c.samples, 1, 1'000'000'000),
            t::int_option("--warmup", "N", "unrecorded messages per pair first (default 1000)", c.warmup, 0, 1'000'000'000),
            t::int_option("--block-ints", "N", "ints of the block read at a random place per message (default 262144)", c.block_ints, 0,
                          1LL << 32),
            {"--policy", "other|fifo|rr|deadline", "scheduling policy of the measuring threads (default other)", policy},
            t::int_option("--priority", "P", "priority for fifo/rr (1..99)", c.policy.priority, 0, 99),
            t::int_option("--dl-runtime", "NS", "--policy deadline: runtime", c.policy.dl_runtime_ns, 1024, kDl),
            t::int_option("--dl-deadline", "NS", "--policy deadline: deadline", c.policy.dl_deadline_ns, 1024, kDl),
            t::int_option("--dl-period", "NS", "--policy deadline: period", c.policy.dl_period_ns, 1024, kDl),
            t::text_option("--pin", "none|spread|compact|LIST", "CPU placement of the threads", c.pin),
            t::switch_option("--no-mlock", "do not lock memory (mlockall)", c.mlock, false),
            t::int_option("--pause-ns", "NS", "pause between messages (seed 000's 1 ms variant)", c.pause_ns, 0,
                          60'000'000'000LL),
            t::int_option("--seed", "S", "seed of the random reads and writes (default 1)", c.seed, 0, INT64_MAX),
            {"--caf-scheduler", "stealing|sharing|detached", "CAF techniques: the actor scheduler", caf_scheduler},
            t::int_option("--caf-threads", "N", "CAF techniques: scheduler threads", c.caf_threads, 1, 1024),
            t::switch_option("--no-record", "measure without recording samples", c.record, false),
            t::int_option("--floor-round-trips", "N", "round trips of the measurement-floor probe (default 20000)", o.floor_round_trips,
                          2, 100'000'000),
            t::switch_option("--list", "list the techniques and exit", o.list),
        });
    if (o.list) return o;
    if (c.policy.policy == jl::Policy::deadline &&
        (c.policy.dl_runtime_ns == 0 || c.policy.dl_runtime_ns > c.policy.dl_deadline_ns || c.policy.dl_deadline_ns > c.policy.dl_period_ns))
        usage_error("--policy deadline needs 0 < --dl-runtime <= --dl-deadline <= --dl-period");
    if ((c.policy.policy == jl::Policy::fifo || c.policy.policy == jl::Policy::rr) && c.policy.priority < 1)
        usage_error("--policy fifo/rr needs --priority between 1 and 99");
    try {
        (void)jl::plan_cpus(c.pin, 1, {0});
    } catch (const std::invalid_argument& e) {
        usage_error(e.what());
    }
    return o;
}

void list_techniques() {
    // name, available, kind, description: one tab-separated line each (read by jitterlab.measure.techniques)
    for (const auto& t : jl::techniques())
        std::printf("%s\t%s\t%s\t%s\n", t.info.name.c_str(), t.available ? "yes" : "no", jl::kind_name(t.kind),
                    t.info.description.c_str());
}

void write_samples(const std::string& path, const jl::RunState& state, bool partial) {
    jl::RawSampleWriter writer(path);
    std::vector<jl::SampleRecord> chunk;
    chunk.reserve(1 << 16);
    for (std::size_t p = 0; p < state.recorders.size(); ++p) {
        const auto& r = *state.recorders[p];
        const std::int64_t n = r.recorded.load(std::memory_order_acquire);
        for (std::int64_t i = 0; i < n; ++i) {
            const auto& s = r.samples[static_cast<std::size_t>(i)];
            chunk.push_back(jl::SampleRecord{static_cast<std::int32_t>(p), 0, i, s.t_send_ns, s.t_recv_ns});
            if (chunk.size() == chunk.capacity()) { writer.write(chunk); chunk.clear(); }
        }
    }
    writer.write(chunk);
    writer.finish(partial);
}

void write_json(const std::string& path, const std::string& text) { jl::tool::write_file_atomically(path, text); }

void print_warnings(const std::vector<jl::Warning>& warnings) {
    for (const auto& w : warnings)
        std::fprintf(stderr, "%s: warning[%s]: %s\n", kTool, std::string(jl::warning_code_name(w.code)).c_str(), w.detail.c_str());
}

struct Timing {
    std::int64_t started_realtime_ns, t_start_ns, t_end_ns;
};

jl::Json c2c_json(const jl::CoreToCore& c2c) {
    return {{"measured", c2c.measured}, {"skipped_reason", c2c.skipped_reason}, {"cpu_a", c2c.cpu_a}, {"cpu_b", c2c.cpu_b},
            {"round_trips", c2c.round_trips}, {"min", c2c.one_way_min_ns}, {"median", c2c.one_way_median_ns},
            {"p99", c2c.one_way_p99_ns}};
}

/// The two floors of one run agree when their medians are within this share of each other;
/// beyond it the host moved the vCPUs between them (this VM flips between ~64 and ~130 ns).
constexpr double kRegimeTolerance = 0.25;

bool regime_changed(const jl::CoreToCore& before, const jl::CoreToCore& after) {
    if (!before.measured || !after.measured) return false;
    const double lo = std::min(before.one_way_median_ns, after.one_way_median_ns);
    const double hi = std::max(before.one_way_median_ns, after.one_way_median_ns);
    return lo <= 0 || hi > lo * (1 + kRegimeTolerance);
}

std::string harness_json(const Options& o, const jl::RunState& state, const jl::ClockOverhead& clock,
                         const jl::CoreToCore& c2c, const jl::CoreToCore& c2c_end, const Timing& timing,
                         bool partial, const std::string& partial_reason, const std::string& mlock_error, bool c2c_run) {
    const auto& c = o.config;
    jl::Json j;
    j["harness"] = "native";
    j["harness_version"] = JITTERLAB_VERSION;
    j["technique"] = c.technique;
    j["pairs"] = c.pairs;
    j["samples"] = c.samples;
    j["warmup"] = c.warmup;
    j["block_ints"] = c.block_ints;
    j["seed"] = c.seed;
    j["pause_ns"] = c.pause_ns;
    j["record"] = c.record;
    j["policy_requested"] = jl::policy_json(c.policy);
    if (c.policy.policy == jl::Policy::deadline) {
        j["policy_requested"]["runtime_ns"] = c.policy.dl_runtime_ns;
        j["policy_requested"]["deadline_ns"] = c.policy.dl_deadline_ns;
        j["policy_requested"]["period_ns"] = c.policy.dl_period_ns;
    }
    j["pin_requested"] = c.pin;
    j["mlock"] = jl::mlock_json(c.mlock, mlock_error);
    j["spin_mode"] = state.spin_mode == jl::SpinMode::busy ? "busy" : "yield";
    j["spin_fallback_reason"] = state.spin_fallback_reason;
    if (c.technique == "caf") j["caf"] = {{"scheduler", c.caf_scheduler}, {"threads", c.caf_threads}};
    j["placements"] = jl::placements_json(state.placements());
    auto warnings = state.warnings();
    if (!mlock_error.empty())
        warnings.push_back({jl::WarningCode::mlock_refused, "mlockall refused (" + mlock_error + "); pages may fault during the run"});
    if (regime_changed(c2c, c2c_end)) {
        char detail[160];
        std::snprintf(detail, sizeof detail, "core-to-core one-way p50 was %.0f ns before the run and %.0f ns after it",
                      c2c.one_way_median_ns, c2c_end.one_way_median_ns);
        warnings.push_back({jl::WarningCode::c2c_regime_changed, detail});
    }
    j["warnings"] = warnings;
    jl::Json per_pair = jl::Json::array();
    for (const auto& r : state.recorders) per_pair.push_back(r->recorded.load());
    j["per_pair_recorded"] = per_pair;
    j["samples_recorded"] = state.recorded_total();
    jl::set_status(j, partial, partial_reason, timing.started_realtime_ns, timing.t_start_ns, timing.t_end_ns);
    // The floor, measured before the run and, for a regime check, again after it.
    j["floor"] = {{"clock_overhead_ns", jl::clock_overhead_json(clock)}, {"c2c_one_way_ns", c2c_json(c2c)}};
    if (c2c_end.measured) j["floor"]["c2c_end_one_way_ns"] = c2c_json(c2c_end);
    j["c2c_run"] = c2c_run;
    return jl::json_text(j);
}

}  // namespace

int main(int argc, char** argv) {
    const Options o = parse(argc, argv);
    if (o.list) {
        list_techniques();
        return 0;
    }
    const auto& cfg = o.config;
    const jl::Technique* technique = jl::find_technique(cfg.technique);
    if (technique == nullptr) usage_error("unknown technique '" + cfg.technique + "' (see --list)");
    if (!technique->available)
        usage_error("technique '" + cfg.technique + "' is unavailable: " + technique->unavailable_reason);
    const bool c2c_run = technique->kind == jl::TechniqueKind::floor;
    jl::tool::require_writable_dir(kTool, cfg.out_dir);
    jl::tool::install_signal_handlers();

    std::string mlock_error;
    if (cfg.mlock) mlock_error = jl::lock_memory();

    // The floor: measured before the buffers are allocated, on an otherwise idle process.
    const jl::ClockOverhead clock = jl::measure_clock_overhead(200'000);
    std::vector<jl::SampleRecord> legs;
    const jl::CoreToCore c2c = jl::measure_core_to_core(c2c_run ? cfg.samples + cfg.warmup : o.floor_round_trips, c2c_run ? &legs : nullptr);
    jl::CoreToCore c2c_end;  // the floor again after the run: which regime the whole run met

    jl::HarnessConfig run_cfg = cfg;
    if (c2c_run) { run_cfg.pairs = 1; run_cfg.record = false; }
    jl::RunState state(run_cfg);
    Timing timing{jl::realtime_ns(), jl::now_ns(), 0};
    std::string partial_reason;

    if (c2c_run) {
        if (!c2c.measured) usage_error("c2c cannot run here: " + c2c.skipped_reason);
        // Keep the legs after the warmup, renumbered from 0.
        auto& rec = *state.recorders[0];
        rec.samples.clear();
        for (std::size_t i = static_cast<std::size_t>(cfg.warmup); i < legs.size(); ++i)
            rec.samples.push_back(jl::TimedSample{legs[i].t_send_ns, legs[i].t_recv_ns});
        rec.recorded.store(static_cast<std::int64_t>(rec.samples.size()));
        timing.t_start_ns = legs.empty() ? timing.t_start_ns : legs.front().t_send_ns;
    } else {
        std::jthread driver([&state, technique] {
            try {
                if (technique->run) technique->run(state);
                else jl::run_threaded(state);
            } catch (const std::exception& e) {
                state.fail(e.what());
            }
            state.finished.store(true);
        });
        const std::int64_t total = static_cast<std::int64_t>(cfg.samples) * cfg.pairs;
        std::int64_t stop_seen_at = 0;
        const bool show_progress = cfg.record;
        while (!state.finished.load()) {
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
            if (show_progress) {
                std::printf("progress %lld %lld\n", static_cast<long long>(state.recorded_total()), static_cast<long long>(total));
                std::fflush(stdout);
            }
            if (jl::tool::g_signal != 0 && !state.stop_requested.load()) state.stop_requested.store(true);
            if (state.stop_requested.load()) {
                if (stop_seen_at == 0) stop_seen_at = jl::now_ns();
                if (jl::now_ns() - stop_seen_at > kStopGraceMs * 1'000'000) {
                    // A worker is stuck (for example a peer died mid-message): keep what was recorded.
                    state.add_warning(jl::WarningCode::workers_stuck, "workers did not stop within " + std::to_string(kStopGraceMs) +
                                                                          " ms; the samples recorded so far were written");
                    print_warnings(state.warnings());
                    partial_reason = state.error().empty() ? "interrupted; workers did not stop in time" : "error: " + state.error();
                    timing.t_end_ns = jl::now_ns();
                    const std::string dir = cfg.out_dir;
                    write_samples(dir + "/samples.jlraw", state, true);
                    write_json(dir + "/harness.json", harness_json(o, state, clock, c2c, c2c_end, timing, true, partial_reason, mlock_error, false));
                    std::fflush(nullptr);
                    std::_Exit(3);
                }
            }
        }
    }
    timing.t_end_ns = jl::now_ns();
    if (!c2c_run && c2c.measured && jl::tool::g_signal == 0) c2c_end = jl::measure_core_to_core(o.floor_round_trips);
    const std::string error = state.error();
    const bool complete = state.recorded_total() == static_cast<std::int64_t>(cfg.samples) * (c2c_run ? 1 : cfg.pairs) || !cfg.record;
    if (!error.empty()) partial_reason = "error: " + error;
    else if (jl::tool::g_signal != 0) partial_reason = std::string("interrupted by ") + jl::tool::signal_name();
    else if (!complete) partial_reason = "fewer samples than requested";
    const bool partial = !partial_reason.empty();

    print_warnings(state.warnings());
    try {
        write_samples(cfg.out_dir + "/samples.jlraw", state, partial);
        write_json(cfg.out_dir + "/harness.json", harness_json(o, state, clock, c2c, c2c_end, timing, partial, partial_reason, mlock_error, c2c_run));
    } catch (const std::exception& e) {
        std::fprintf(stderr, "jitterlab-bench: error: %s\n", e.what());
        return 1;
    }
    if (!error.empty()) {
        std::fprintf(stderr, "jitterlab-bench: error: %s\n", error.c_str());
        return 1;
    }
    return partial ? 130 : 0;
}
