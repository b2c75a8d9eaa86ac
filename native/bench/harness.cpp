#include "harness.hpp"

#include <algorithm>
#include <map>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "jitterlab/barrier.hpp"
#include "jitterlab/clock.hpp"

namespace jitterlab {

RunState::RunState(const HarnessConfig& cfg) : config(cfg), block(cfg.block_ints) {
    const std::size_t capacity = cfg.record ? static_cast<std::size_t>(cfg.samples) : 0;
    for (int p = 0; p < cfg.pairs; ++p) {
        auto recorder = std::make_unique<PairRecorder>();
        recorder->samples.assign(capacity, TimedSample{0, 0});  // value-initialised: pages are faulted in now
        recorders.push_back(std::move(recorder));
    }
}

void RunState::add_placement(ThreadPlacement placement) {
    std::lock_guard lock(mutex_);
    placements_.push_back(std::move(placement));
}

void RunState::add_warning(WarningCode code, std::string detail) {
    std::lock_guard lock(mutex_);
    Warning warning{code, std::move(detail)};
    if (std::find(warnings_.begin(), warnings_.end(), warning) == warnings_.end()) warnings_.push_back(std::move(warning));
}

void RunState::fail(std::string error) {
    {
        std::lock_guard lock(mutex_);
        if (error_.empty()) error_ = std::move(error);
    }
    stop_requested.store(true);
}

std::vector<ThreadPlacement> RunState::placements() const {
    std::lock_guard lock(mutex_);
    return placements_;
}

std::vector<Warning> RunState::warnings() const {
    std::lock_guard lock(mutex_);
    return warnings_;
}

std::string RunState::error() const {
    std::lock_guard lock(mutex_);
    return error_;
}

std::int64_t RunState::recorded_total() const noexcept {
    std::int64_t total = 0;
    for (const auto& r : recorders) total += r->recorded.load(std::memory_order_acquire);
    return total;
}

void place_thread(RunState& state, const std::string& role, int pair, const std::vector<int>& cpus) {
    ThreadPlacement placement;
    placement.role = role;
    placement.pair = pair;
    placement.affinity_error = apply_affinity(cpus);
    placement.policy_error = apply_policy(state.config.policy);
    read_back(placement);
    const char* wanted = policy_name(state.config.policy.policy);
    if (!placement.policy_error.empty())
        state.add_warning(WarningCode::policy_refused, std::string("scheduling policy ") + wanted + " refused (" + placement.policy_error + "); running as " + placement.policy);
    if (!placement.affinity_error.empty())
        state.add_warning(WarningCode::affinity_refused, "CPU affinity refused (" + placement.affinity_error + "); threads run unpinned");
    state.add_placement(std::move(placement));
}


std::vector<std::vector<int>> plan_cpus(const std::string& pin, int threads, const std::vector<int>& allowed) {
    std::vector<std::vector<int>> plan(static_cast<std::size_t>(threads));
    if (pin == "none" || allowed.empty()) return plan;
    const auto n = allowed.size();
    const bool named = pin == "spread" || pin == "compact";
    const std::vector<int> list = named ? std::vector<int>{} : parse_cpu_list(pin);
    for (int t = 0; t < threads; ++t) {
        const auto i = static_cast<std::size_t>(t);
        if (pin == "spread") plan[i] = {allowed[i % n]};            // sender and receiver on different CPUs
        else if (pin == "compact") plan[i] = {allowed[(i / 2) % n]};  // a pair shares one CPU
        else plan[i] = {list[i % list.size()]};
    }
    return plan;
}

namespace {

// Decides whether spinning may busy-wait: every spinning thread needs a CPU of its own,
// or a spinner can burn its whole time slice waiting for a peer that cannot run.
// Returns how the barrier waits: like the technique (spinning techniques never sleep).
WaitMode choose_spin_mode(RunState& state, const std::vector<TechniqueInfo>& infos) {
    const auto& cfg = state.config;
    const auto it = std::find_if(infos.begin(), infos.end(), [&](const TechniqueInfo& i) { return i.name == cfg.technique; });
    if (it == infos.end() || !it->spins) return WaitMode::block;
    const int threads = 2 * cfg.pairs;
    const auto cpus = allowed_cpus();
    std::string reason;
    if (cfg.pin == "none") {
        if (threads > static_cast<int>(cpus.size()))
            reason = std::to_string(threads) + " spinning threads on " + std::to_string(cpus.size()) + " CPUs";
    } else {
        std::map<int, int> per_cpu;
        for (const auto& set : state.cpu_plan)
            if (!set.empty() && ++per_cpu[set.front()] > 1) reason = "pinning puts two spinning threads on CPU " + std::to_string(set.front());
    }
    if (!reason.empty()) {
        state.spin_mode = SpinMode::yield;
        state.spin_fallback_reason = reason;
        state.add_warning(WarningCode::spin_fallback, reason + ": busy-waiting could livelock, spinning with sched_yield instead");
        return WaitMode::yield;
    }
    return WaitMode::spin;
}

void sender_loop(RunState& state, RoundBarrier& barrier, Channel& channel, int pair) {
    const auto& cfg = state.config;
    SplitMix64 rng(thread_seed(cfg.seed, pair, 0));
    const std::int64_t rounds = cfg.warmup + cfg.samples;
    // One round more than samples: the last one only waits for every receiver to finish,
    // so the stop message never overtakes a sample in a one-slot channel.
    for (std::int64_t k = 0; k <= rounds; ++k) {
        if (cfg.pause_ns > 0 && k > 0 && k < rounds) std::this_thread::sleep_for(std::chrono::nanoseconds(cfg.pause_ns));
        if (!barrier.arrive_and_wait() || k == rounds) break;
        // Listing 1: timestamp, read a random place of the block, send both.
        const std::int64_t t_send = now_ns();
        const std::int32_t x = state.block.read(rng.next());
        channel.send(Message{t_send, x, 0});
    }
    channel.send(Message{-1, 0, 0});
}

void receiver_loop(RunState& state, RoundBarrier& barrier, Channel& channel, int pair) {
    const auto& cfg = state.config;
    SplitMix64 rng(thread_seed(cfg.seed, pair, 1));
    PairRecorder& recorder = *state.recorders[static_cast<std::size_t>(pair)];
    barrier.arrive();
    for (std::int64_t k = 0;; ++k) {
        // Listing 2: receive, write the value to a random place, timestamp, record.
        const Message m = channel.receive();
        if (m.t_send_ns < 0) break;
        state.block.write(rng.next(), m.value);
        const std::int64_t t_recv = now_ns();
        if (cfg.record && k >= cfg.warmup) recorder.record(k - cfg.warmup, m.t_send_ns, t_recv);
        barrier.arrive();  // counted into the next round; back in receive() before it starts
    }
}

}  // namespace

void run_threaded(RunState& state) {
    const auto& cfg = state.config;
    const int threads = 2 * cfg.pairs;
    state.cpu_plan = plan_cpus(cfg.pin, threads, allowed_cpus());
    const WaitMode wait_mode = choose_spin_mode(state, thread_techniques());

    std::vector<std::unique_ptr<Channel>> channels;
    for (int p = 0; p < cfg.pairs; ++p) channels.push_back(make_channel(cfg.technique, state.spin_mode));
    RoundBarrier barrier(static_cast<std::uint32_t>(threads), &state.stop_requested, wait_mode);

    std::vector<std::jthread> workers;
    for (int p = 0; p < cfg.pairs; ++p) {
        const auto& send_cpus = state.cpu_plan[static_cast<std::size_t>(2 * p)];
        const auto& recv_cpus = state.cpu_plan[static_cast<std::size_t>(2 * p + 1)];
        Channel& channel = *channels[static_cast<std::size_t>(p)];
        workers.emplace_back([&state, &barrier, &channel, p, recv_cpus] {
            place_thread(state, "receiver", p, recv_cpus);
            try {
                receiver_loop(state, barrier, channel, p);
            } catch (const std::exception& e) {
                state.fail(std::string("receiver ") + std::to_string(p) + ": " + e.what());
            }
        });
        workers.emplace_back([&state, &barrier, &channel, p, send_cpus] {
            place_thread(state, "sender", p, send_cpus);
            try {
                sender_loop(state, barrier, channel, p);
            } catch (const std::exception& e) {
                state.fail(std::string("sender ") + std::to_string(p) + ": " + e.what());
            }
        });
    }
    workers.clear();  // joins
}

}  // namespace jitterlab
