#include "jitterlab/floor.hpp"

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <numeric>
#include <thread>

#include "jitterlab/clock.hpp"
#include "jitterlab/sched.hpp"
#include "jitterlab/spsc_ring.hpp"

namespace jitterlab {
namespace {

double quantile_sorted(const std::vector<std::int64_t>& sorted, double q) {
    if (sorted.empty()) return 0;
    const auto index = static_cast<std::size_t>(q * static_cast<double>(sorted.size() - 1) + 0.5);
    return static_cast<double>(sorted[std::min(index, sorted.size() - 1)]);
}

}  // namespace

ClockOverhead measure_clock_overhead(std::int64_t reads) {
    std::vector<std::int64_t> deltas(static_cast<std::size_t>(reads));
    std::int64_t previous = now_ns();
    for (auto& delta : deltas) {
        const std::int64_t t = now_ns();
        delta = t - previous;
        previous = t;
    }
    ClockOverhead out;
    out.reads = reads;
    out.mean_ns = static_cast<double>(std::accumulate(deltas.begin(), deltas.end(), std::int64_t{0})) /
                  static_cast<double>(std::max<std::int64_t>(reads, 1));
    std::sort(deltas.begin(), deltas.end());
    out.min_ns = static_cast<double>(deltas.front());
    out.median_ns = quantile_sorted(deltas, 0.5);
    out.p99_ns = quantile_sorted(deltas, 0.99);
    return out;
}

CoreToCore measure_core_to_core(std::int64_t round_trips, std::vector<SampleRecord>* legs) {
    CoreToCore out;
    const auto cpus = allowed_cpus();
    if (cpus.size() < 2) {
        out.skipped_reason = "fewer than two CPUs available to this process";
        return out;
    }
    out.cpu_a = cpus[0];
    out.cpu_b = cpus[1];
    out.round_trips = round_trips;

    // One cache line carries the sequence number and the writer's timestamp.
    struct alignas(kCacheLine) Line {
        std::atomic<std::int64_t> seq{0};
        std::atomic<std::int64_t> t_write{0};
    };
    Line line;
    std::vector<std::int64_t> a_to_b(static_cast<std::size_t>(round_trips));
    std::vector<std::int64_t> b_to_a(static_cast<std::size_t>(round_trips));
    std::vector<std::int64_t> t_sent(static_cast<std::size_t>(round_trips));
    std::atomic<bool> pinned_ok{true};

    auto player = [&](int cpu, bool first) {
        if (!apply_affinity({cpu}).empty()) pinned_ok.store(false);
        for (std::int64_t i = 0; i < round_trips; ++i) {
            const std::int64_t my_turn = 2 * i + (first ? 0 : 1);
            while (line.seq.load(std::memory_order_acquire) != my_turn) cpu_relax();
            const std::int64_t seen = now_ns();
            if (!first) a_to_b[static_cast<std::size_t>(i)] = seen - line.t_write.load(std::memory_order_relaxed);
            else if (i > 0) b_to_a[static_cast<std::size_t>(i - 1)] = seen - line.t_write.load(std::memory_order_relaxed);
            const std::int64_t t = now_ns();
            if (first) t_sent[static_cast<std::size_t>(i)] = t;
            line.t_write.store(t, std::memory_order_relaxed);
            line.seq.store(my_turn + 1, std::memory_order_release);
        }
    };
    {
        std::jthread b(player, out.cpu_b, false);
        std::jthread a(player, out.cpu_a, true);
    }
    if (!pinned_ok.load()) {
        out.skipped_reason = "could not pin the ping-pong threads on two CPUs";
        return out;
    }
    if (legs != nullptr) {
        legs->resize(static_cast<std::size_t>(round_trips));
        for (std::int64_t i = 0; i < round_trips; ++i) {
            const auto k = static_cast<std::size_t>(i);
            (*legs)[k] = SampleRecord{0, 0, i, t_sent[k], t_sent[k] + a_to_b[k]};
        }
    }
    std::vector<std::int64_t> all = a_to_b;
    all.insert(all.end(), b_to_a.begin(), b_to_a.end() - 1);  // the last b->a leg is never read
    std::sort(all.begin(), all.end());
    out.measured = true;
    out.one_way_min_ns = static_cast<double>(all.front());
    out.one_way_median_ns = quantile_sorted(all, 0.5);
    out.one_way_p99_ns = quantile_sorted(all, 0.99);
    return out;
}

}  // namespace jitterlab
