// jitterlab-pipeline: the System Jitter Utility's pipeline (seed 002). A producer
// busy-spins --interval-ns between publications and stamps each message; an accumulator
// and a journaller consume every message from one shared ring. The accumulator records
// transit latency; the journaller records it and writes it to a real journal file.
//
// Output in --out: samples.jlraw with four series (pair 0: accumulator transit,
// 1: accumulator inter-message, 2: journaller transit, 3: journaller inter-message) and
// harness.json. Progress: "progress MESSAGES TOTAL" on stdout.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "../src/harness_json.hpp"
#include "../src/tool_util.hpp"
#include "jitterlab/clock.hpp"
#include "jitterlab/floor.hpp"
#include "jitterlab/runfile.hpp"
#include "jitterlab/sched.hpp"
#include "jitterlab/spsc_ring.hpp"
#include "jitterlab/unique_fd.hpp"

namespace jl = jitterlab;

namespace {

constexpr const char* kTool = "jitterlab-pipeline";
constexpr std::size_t kRingSlots = 4096;
constexpr int kConsumers = 2;

struct Options {
    std::int64_t samples = 500'000;
    std::int64_t warmup = 1'000;
    std::int64_t interval_ns = 10'000;
    int pin_producer = -1, pin_accumulator = -1, pin_journaller = -1;
    jl::PolicyRequest policy;
    bool mlock = true;
    std::string out_dir = ".";
};

/// A broadcast ring: one producer, every consumer sees every message (Disruptor-style).
/// A slot's sequence number says which message it holds; the producer waits for the
/// slowest consumer before reusing a slot.
class BroadcastRing {
public:
    struct alignas(jl::kCacheLine) Slot {
        std::atomic<std::int64_t> seq{-1};
        std::int64_t t_publish = 0;
    };
    BroadcastRing() : slots_(std::make_unique<Slot[]>(kRingSlots)) {}

    void publish(std::int64_t n, std::int64_t t_publish, bool yield) {
        const std::int64_t reusable = n - static_cast<std::int64_t>(kRingSlots);
        for (const auto& cursor : cursors_)
            while (cursor.value.load(std::memory_order_acquire) <= reusable) wait(yield);
        Slot& slot = slots_[static_cast<std::size_t>(n) % kRingSlots];
        slot.t_publish = t_publish;
        slot.seq.store(n, std::memory_order_release);
    }
    /// Waits for message n; returns its publish time.
    std::int64_t consume(int consumer, std::int64_t n, bool yield) {
        Slot& slot = slots_[static_cast<std::size_t>(n) % kRingSlots];
        while (slot.seq.load(std::memory_order_acquire) != n) wait(yield);
        const std::int64_t t = slot.t_publish;
        cursors_[consumer].value.store(n, std::memory_order_release);
        return t;
    }

private:
    static void wait(bool yield) {
        if (yield) sched_yield();
        else jl::cpu_relax();
    }
    struct alignas(jl::kCacheLine) Cursor {
        std::atomic<std::int64_t> value{-1};
    };
    std::unique_ptr<Slot[]> slots_;
    Cursor cursors_[kConsumers];
};

struct Series {
    std::vector<jl::SampleRecord> records;
};

Options parse(int argc, char** argv) {
    namespace t = jl::tool;
    Options o;
    t::Option samples = t::int_option("--samples", "N", "recorded messages (default 500000; old spelling --messages)",
                                      o.samples, 1, 1'000'000'000);
    samples.old = "--messages";
    t::read_options(
        kTool, argc, argv, "--out DIR [options]",
        "Seed 002's System Jitter Utility: a producer busy-spins between publications to an accumulator\n"
        "and a journaller; four latency series (transit and inter-message for each consumer).",
        {
            samples,
            t::int_option("--warmup", "N", "unrecorded messages first (default 1000)", o.warmup, 0, 1'000'000'000),
            t::int_option("--interval-ns", "NS", "producer busy-spin between publications (default 10000)",
                          o.interval_ns, 0, 1'000'000'000),
            t::int_option("--pin-producer", "CPU", "pin the producer (-1: not pinned)", o.pin_producer, -1, 4095),
            t::int_option("--pin-accumulator", "CPU", "pin the accumulator (-1: not pinned)", o.pin_accumulator, -1, 4095),
            t::int_option("--pin-journaller", "CPU", "pin the journaller (-1: not pinned)", o.pin_journaller, -1, 4095),
        },
        t::common_options(kTool, o.policy, o.mlock, o.out_dir));
    t::check_policy(kTool, o.policy);
    return o;
}

jl::ThreadPlacement place(const Options& o, const char* role, int cpu) {
    jl::ThreadPlacement p;
    p.role = role;
    p.affinity_error = cpu >= 0 ? jl::apply_affinity({cpu}) : "";
    p.policy_error = jl::apply_policy(o.policy);
    jl::read_back(p);
    return p;
}

}  // namespace

int main(int argc, char** argv) {
    const Options o = parse(argc, argv);
    jl::tool::require_writable_dir(kTool, o.out_dir);
    jl::tool::install_signal_handlers();
    const std::string mlock_error = o.mlock ? jl::lock_memory() : "";
    const jl::ClockOverhead clock = jl::measure_clock_overhead(200'000);

    // Three spinning threads need three CPUs (or distinct pins); otherwise spin with yields.
    const auto cpus = jl::allowed_cpus();
    std::vector<int> pins = {o.pin_producer, o.pin_accumulator, o.pin_journaller};
    const bool all_pinned = std::all_of(pins.begin(), pins.end(), [](int c) { return c >= 0; });
    std::sort(pins.begin(), pins.end());
    const bool distinct = all_pinned && std::adjacent_find(pins.begin(), pins.end()) == pins.end();
    const bool yield = !(distinct || (!all_pinned && cpus.size() >= 3));
    const std::string yield_reason = yield ? "3 spinning threads on " + std::to_string(cpus.size()) +
                                                 " CPUs (or shared pins): spinning with sched_yield instead"
                                           : "";

    const std::int64_t total = o.warmup + o.samples;
    BroadcastRing ring;
    std::array<Series, 4> series;
    for (auto& s : series) s.records.reserve(static_cast<std::size_t>(o.samples));
    std::atomic<bool> stop{false};
    std::atomic<std::int64_t> consumed{0};
    std::vector<jl::ThreadPlacement> placements(3);
    const std::string journal_path = o.out_dir + "/journal.bin";
    std::atomic<std::int64_t> journal_bytes{0};
    std::string journal_error;
    const std::int64_t started_realtime = jl::realtime_ns();
    const std::int64_t t_start = jl::now_ns();
    std::atomic<std::int64_t> published{0};

    auto consumer = [&](int id, Series& transit, Series& inter, bool journal) {
        jl::UniqueFd fd;
        std::vector<char> buffer;
        if (journal) {
            fd.reset(::open(journal_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
            if (!fd) journal_error = std::strerror(errno);
            buffer.reserve(8192);
        }
        std::int64_t prev_read = 0;
        for (std::int64_t n = 0; n < total; ++n) {
            if (stop.load(std::memory_order_relaxed) && n >= published.load(std::memory_order_acquire)) break;
            const std::int64_t t_pub = ring.consume(id, n, yield);
            const std::int64_t t_read = jl::now_ns();
            if (journal && fd) {
                const std::int64_t transit_ns = t_read - t_pub;
                const auto* bytes = reinterpret_cast<const char*>(&transit_ns);
                buffer.insert(buffer.end(), bytes, bytes + sizeof transit_ns);
                if (buffer.size() >= 8192) {
                    journal_bytes += ::write(fd.get(), buffer.data(), buffer.size());
                    buffer.clear();
                }
            }
            if (n >= o.warmup) {
                const std::int64_t seq = n - o.warmup;
                transit.records.push_back({id * 2, 0, seq, t_pub, t_read});
                if (seq > 0) inter.records.push_back({id * 2 + 1, 0, seq - 1, prev_read, t_read});
            }
            prev_read = t_read;
            if (id == 0) consumed.store(n + 1, std::memory_order_relaxed);
        }
        if (fd) {
            if (!buffer.empty()) journal_bytes += ::write(fd.get(), buffer.data(), buffer.size());
            ::fsync(fd.get());
        }
    };

    {
        std::jthread accumulator([&] {
            placements[1] = place(o, "accumulator", o.pin_accumulator);
            consumer(0, series[0], series[1], false);
        });
        std::jthread journaller([&] {
            placements[2] = place(o, "journaller", o.pin_journaller);
            consumer(1, series[2], series[3], true);
        });
        std::jthread producer([&] {
            placements[0] = place(o, "producer", o.pin_producer);
            std::int64_t next = jl::now_ns();
            for (std::int64_t n = 0; n < total && !stop.load(std::memory_order_relaxed); ++n) {
                while (jl::now_ns() < next) {  // the seed's busy-spin between publications
                    if (yield) sched_yield();
                    else jl::cpu_relax();
                }
                const std::int64_t t = jl::now_ns();
                ring.publish(n, t, yield);
                published.store(n + 1, std::memory_order_release);
                next = t + o.interval_ns;
            }
        });
        while (consumed.load() < total) {
            std::this_thread::sleep_for(std::chrono::milliseconds(200));
            std::printf("progress %lld %lld\n", static_cast<long long>(std::max<std::int64_t>(consumed.load() - o.warmup, 0)),
                        static_cast<long long>(o.samples));
            std::fflush(stdout);
            if (jl::tool::g_signal != 0) {
                stop.store(true);
                break;
            }
        }
    }
    const bool interrupted = jl::tool::g_signal != 0;

    jl::RawSampleWriter writer(o.out_dir + "/samples.jlraw");
    for (const auto& s : series) writer.write(s.records);
    writer.finish(interrupted);

    jl::Json j;
    j["harness"] = "native";
    j["tool"] = "pipeline";
    j["harness_version"] = JITTERLAB_VERSION;
    j["samples"] = o.samples;
    j["warmup"] = o.warmup;
    j["interval_ns"] = o.interval_ns;
    j["series"] = {"accumulator-transit", "accumulator-inter-message", "journaller-transit", "journaller-inter-message"};
    j["journal_file"] = journal_path;
    j["journal_bytes"] = journal_bytes.load();
    j["journal_error"] = journal_error;
    j["spin_mode"] = yield ? "yield" : "busy";
    j["spin_fallback_reason"] = yield_reason;
    j["policy_requested"] = jl::policy_json(o.policy);
    j["mlock"] = jl::mlock_json(o.mlock, mlock_error);
    j["placements"] = jl::placements_json(placements);
    std::vector<jl::Warning> warnings;
    if (yield) warnings.push_back({jl::WarningCode::spin_fallback, yield_reason});
    for (const auto& p : placements) jl::placement_warnings(warnings, p);
    if (!journal_error.empty()) warnings.push_back({jl::WarningCode::journal_failed, "journal file could not be written: " + journal_error});
    j["warnings"] = warnings;
    jl::set_status(j, interrupted, interrupted ? std::string("interrupted by ") + jl::tool::signal_name() : std::string(),
                   started_realtime, t_start, jl::now_ns());
    j["floor"] = {{"clock_overhead_ns", jl::clock_overhead_json(clock)}};
    jl::tool::write_file_atomically(o.out_dir + "/harness.json", jl::json_text(j));
    return interrupted ? 130 : 0;
}
