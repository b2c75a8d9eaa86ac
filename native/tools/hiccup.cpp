// jitterlab-hiccup: a per-CPU OS-noise meter. One thread per CPU, pinned, reads the clock
// in a tight loop; every gap between two reads above the threshold is an interruption
// (an IRQ, another task, a hypervisor exit, ...) and is recorded with its start and end.
//
// Output in --out: samples.jlraw (pair = CPU number, t_send/t_recv = gap start/end) and
// harness.json (per-CPU loops, smallest gap, recorded and dropped gaps, threshold).
// Progress: "progress ELAPSED_NS DURATION_NS" lines on stdout.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "../src/harness_json.hpp"
#include "../src/tool_util.hpp"
#include "jitterlab/barrier.hpp"
#include "jitterlab/clock.hpp"
#include "jitterlab/floor.hpp"
#include "jitterlab/runfile.hpp"
#include "jitterlab/sched.hpp"

namespace jl = jitterlab;

namespace {

constexpr const char* kTool = "jitterlab-hiccup";
constexpr std::int64_t kCalibrationNs = 50'000'000;

struct Options {
    std::int64_t duration_ns = 10'000'000'000;
    std::vector<int> cpus;        // empty: every allowed CPU
    std::int64_t threshold_ns = 0;  // 0: automatic
    std::int64_t auto_multiple = 10;
    std::int64_t max_gaps = 1 << 20;  // per CPU
    jl::PolicyRequest policy;
    bool mlock = true;
    std::string out_dir = ".";
};

struct Gap {
    std::int64_t start, end;
};

/// What one CPU's thread saw. Written only by that thread until it finishes.
struct CpuMeter {
    int cpu = -1;
    std::vector<Gap> gaps;
    std::atomic<std::int64_t> recorded{0};
    std::int64_t dropped = 0;
    std::int64_t loops = 0;
    std::int64_t min_gap = INT64_MAX;
    std::int64_t t_begin = 0, t_end = 0;
    jl::ThreadPlacement placement;
};

std::int64_t smallest_gap(std::int64_t span_ns) {
    std::int64_t best = INT64_MAX;
    const std::int64_t until = jl::now_ns() + span_ns;
    std::int64_t prev = jl::now_ns();
    while (prev < until) {
        const std::int64_t t = jl::now_ns();
        if (t - prev < best) best = t - prev;
        prev = t;
    }
    return best;
}

Options parse(int argc, char** argv) {
    namespace t = jl::tool;
    Options o;
    auto cpus = [&o](t::ArgReader& a) {
        const std::string list = a.value();
        if (list == "all") return;
        try {
            o.cpus = jl::parse_cpu_list(list);
        } catch (const std::invalid_argument& e) {
            t::usage_error(kTool, std::string("--cpus: ") + e.what());
        }
    };
    t::read_options(kTool, argc, argv, "--out DIR [options]",
                    "Per-CPU OS-noise meter: a busy loop on each CPU records every gap longer than the threshold.",
                    {
                        t::int_option("--duration-ns", "NS", "how long to measure (1 ms .. 1 day; default 10 s)",
                                      o.duration_ns, 1'000'000, 86'400'000'000'000LL),
                        {"--cpus", "all|LIST", "CPUs to measure, such as 0,1 or 0-3 (default all)", cpus},
                        t::int_option("--threshold-ns", "NS", "smallest gap recorded; 0 = auto (default)", o.threshold_ns,
                                      0, 1'000'000'000'000LL),
                        t::int_option("--auto-multiple", "K", "auto threshold = K x the smallest gap seen (default 10)",
                                      o.auto_multiple, 2, 1'000'000),
                        t::int_option("--max-gaps", "N", "gaps kept per CPU (later ones are counted, not recorded)",
                                      o.max_gaps, 1, 1LL << 30),
                    },
                    t::common_options(kTool, o.policy, o.mlock, o.out_dir));
    t::check_policy(kTool, o.policy);
    return o;
}

}  // namespace

int main(int argc, char** argv) {
    Options o = parse(argc, argv);
    jl::tool::require_writable_dir(kTool, o.out_dir);
    jl::tool::install_signal_handlers();
    const auto allowed = jl::allowed_cpus();
    if (o.cpus.empty()) o.cpus = allowed;
    for (int cpu : o.cpus) {
        if (std::find(allowed.begin(), allowed.end(), cpu) == allowed.end())
            jl::tool::usage_error(kTool, "CPU " + std::to_string(cpu) + " is not available to this process");
    }
    const std::string mlock_error = o.mlock ? jl::lock_memory() : "";
    const jl::ClockOverhead clock = jl::measure_clock_overhead(200'000);

    std::vector<std::unique_ptr<CpuMeter>> meters;
    for (int cpu : o.cpus) {
        auto m = std::make_unique<CpuMeter>();
        m->cpu = cpu;
        m->gaps.assign(static_cast<std::size_t>(o.max_gaps), Gap{0, 0});  // faulted in now, not while measuring
        meters.push_back(std::move(m));
    }
    std::atomic<bool> stop{false};
    std::atomic<std::int64_t> threshold{o.threshold_ns};
    std::atomic<std::int64_t> min_calibration{INT64_MAX};
    jl::RoundBarrier start(static_cast<std::uint32_t>(meters.size()), nullptr, jl::WaitMode::yield);
    const std::int64_t started_realtime = jl::realtime_ns();
    std::atomic<std::int64_t> t_start{0};

    std::vector<std::jthread> threads;
    for (auto& meter : meters) {
        threads.emplace_back([&, m = meter.get()] {
            m->placement.role = "meter";
            m->placement.pair = m->cpu;
            m->placement.affinity_error = jl::apply_affinity({m->cpu});
            m->placement.policy_error = jl::apply_policy(o.policy);
            jl::read_back(m->placement);
            // Calibrate on this CPU; the automatic threshold uses the smallest gap of all.
            const std::int64_t smallest = smallest_gap(kCalibrationNs);
            std::int64_t seen = min_calibration.load();
            while (smallest < seen && !min_calibration.compare_exchange_weak(seen, smallest)) {
            }
            start.arrive_and_wait();
            if (threshold.load() == 0) {
                std::int64_t expected = 0;
                threshold.compare_exchange_strong(expected, std::max<std::int64_t>(min_calibration.load() * o.auto_multiple, 1));
            }
            start.arrive_and_wait();
            const std::int64_t limit = threshold.load();
            std::int64_t prev = jl::now_ns();
            std::int64_t expected_start = 0;
            t_start.compare_exchange_strong(expected_start, prev);
            const std::int64_t until = t_start.load() + o.duration_ns;
            m->t_begin = prev;
            std::int64_t n = 0, loops = 0, min_gap = INT64_MAX;
            const auto capacity = static_cast<std::int64_t>(m->gaps.size());
            while (prev < until && !stop.load(std::memory_order_relaxed)) {
                const std::int64_t t = jl::now_ns();
                const std::int64_t gap = t - prev;
                if (gap < min_gap) min_gap = gap;
                if (gap > limit) {
                    if (n < capacity) {
                        m->gaps[static_cast<std::size_t>(n)] = Gap{prev, t};
                        m->recorded.store(++n, std::memory_order_release);
                    } else {
                        ++m->dropped;
                    }
                }
                prev = t;
                ++loops;
            }
            m->t_end = prev;
            m->loops = loops;
            m->min_gap = min_gap;
        });
    }
    while (true) {
        // The meter's own main thread interrupts a measuring CPU when it wakes: once a second.
        std::this_thread::sleep_for(std::chrono::seconds(1));
        const std::int64_t t0 = t_start.load();
        const std::int64_t elapsed = t0 == 0 ? 0 : jl::now_ns() - t0;
        std::printf("progress %lld %lld\n", static_cast<long long>(std::min(elapsed, o.duration_ns)),
                    static_cast<long long>(o.duration_ns));
        std::fflush(stdout);
        if (jl::tool::g_signal != 0) stop.store(true);
        if (stop.load() || (t0 != 0 && elapsed >= o.duration_ns)) break;
    }
    threads.clear();  // joins
    const bool interrupted = jl::tool::g_signal != 0;

    jl::RawSampleWriter writer(o.out_dir + "/samples.jlraw");
    bool any_dropped = false;
    for (const auto& m : meters) {
        std::vector<jl::SampleRecord> records;
        const std::int64_t n = m->recorded.load();
        records.reserve(static_cast<std::size_t>(n));
        for (std::int64_t i = 0; i < n; ++i) {
            const Gap& g = m->gaps[static_cast<std::size_t>(i)];
            records.push_back(jl::SampleRecord{m->cpu, 0, i, g.start, g.end});
        }
        writer.write(records);
        any_dropped |= m->dropped > 0;
    }
    writer.finish(interrupted);

    jl::Json j;
    j["harness"] = "native";
    j["tool"] = "hiccup";
    j["harness_version"] = JITTERLAB_VERSION;
    j["duration_ns"] = o.duration_ns;
    j["threshold_ns"] = threshold.load();
    j["threshold_mode"] = o.threshold_ns == 0 ? "auto" : "fixed";
    j["auto_multiple"] = o.auto_multiple;
    j["calibration_min_gap_ns"] = min_calibration.load();
    j["max_gaps"] = o.max_gaps;
    j["policy_requested"] = jl::policy_json(o.policy);
    j["mlock"] = jl::mlock_json(o.mlock, mlock_error);
    j["per_cpu"] = jl::Json::array();
    for (const auto& m : meters)
        j["per_cpu"].push_back({{"cpu", m->cpu}, {"loops", m->loops}, {"min_gap_ns", m->min_gap}, {"gaps_recorded", m->recorded.load()},
                                {"gaps_dropped", m->dropped}, {"t_begin_ns", m->t_begin}, {"t_end_ns", m->t_end}});
    std::vector<jl::ThreadPlacement> placements;
    for (const auto& m : meters) placements.push_back(m->placement);
    j["placements"] = jl::placements_json(placements);
    std::vector<jl::Warning> warnings;
    for (const auto& m : meters) jl::placement_warnings(warnings, m->placement);
    if (any_dropped)
        warnings.push_back({jl::WarningCode::buffer_full,
                            "the gap buffer filled up on some CPU: later gaps were counted but not recorded (raise --max-gaps)"});
    j["warnings"] = warnings;
    jl::set_status(j, interrupted, interrupted ? std::string("interrupted by ") + jl::tool::signal_name() : std::string(),
                   started_realtime, t_start.load(), jl::now_ns());
    j["floor"] = {{"clock_overhead_ns", jl::clock_overhead_json(clock)}};
    jl::tool::write_file_atomically(o.out_dir + "/harness.json", jl::json_text(j));
    return interrupted ? 130 : 0;
}
