// The n x (1:1) message-passing harness: configuration, shared run state, runners.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "jitterlab/channel.hpp"
#include "jitterlab/sched.hpp"
#include "../src/warning.hpp"

namespace jitterlab {

struct HarnessConfig {
    std::string technique = "mutex";
    int pairs = 1;
    std::int64_t samples = 1'000'000;  // recorded per pair
    std::int64_t warmup = 1'000;       // per pair, run but not recorded
    std::int64_t block_ints = 256 * 1024;
    PolicyRequest policy;
    std::string pin = "none";          // none | spread | compact | CPU list
    bool mlock = true;
    std::int64_t pause_ns = 0;         // sender pause between samples
    std::uint64_t seed = 1;
    std::string caf_scheduler = "stealing";
    int caf_threads = 0;               // 0: CAF's default (one per CPU)
    bool record = true;                // false only for measuring the recording cost
    std::string out_dir = ".";
};

/// Send and receive timestamps of one sample; the sequence number is the index.
struct TimedSample {
    std::int64_t t_send_ns;
    std::int64_t t_recv_ns;
};

/// Preallocated, pre-faulted sample buffer of one pair, written only by its receiver.
struct PairRecorder {
    std::vector<TimedSample> samples;
    alignas(64) std::atomic<std::int64_t> recorded{0};

    void record(std::int64_t seq, std::int64_t t_send, std::int64_t t_recv) noexcept {
        samples[static_cast<std::size_t>(seq)] = TimedSample{t_send, t_recv};
        recorded.store(seq + 1, std::memory_order_release);
    }
};

/// The shared memory block of the protocol: racy reads and writes from every thread are
/// the point (cache misses), so the ints are relaxed atomics (plain moves on x86).
class SharedBlock {
public:
    /// `ints == 0` skips the memory step (pure channel latency, for floor comparisons).
    explicit SharedBlock(std::int64_t ints)
        : size_(static_cast<std::uint64_t>(ints)), data_(std::make_unique<std::atomic<std::int32_t>[]>(static_cast<std::size_t>(ints))) {
        for (std::uint64_t i = 0; i < size_; ++i) data_[i].store(static_cast<std::int32_t>(i), std::memory_order_relaxed);
    }
    std::int32_t read(std::uint64_t random) const noexcept {
        return size_ == 0 ? static_cast<std::int32_t>(random) : data_[index(random)].load(std::memory_order_relaxed);
    }
    void write(std::uint64_t random, std::int32_t value) noexcept {
        if (size_ != 0) data_[index(random)].store(value, std::memory_order_relaxed);
    }

private:
    // Maps a 64-bit random number onto [0, size) without a division (Lemire's fast range).
    std::uint64_t index(std::uint64_t random) const noexcept {
        __extension__ using u128 = unsigned __int128;
        return static_cast<std::uint64_t>((static_cast<u128>(random) * size_) >> 64);
    }
    std::uint64_t size_;
    std::unique_ptr<std::atomic<std::int32_t>[]> data_;
};

/// SplitMix64: a tiny seeded generator, one per thread or actor.
class SplitMix64 {
public:
    explicit SplitMix64(std::uint64_t seed) noexcept : state_(seed) {}
    std::uint64_t next() noexcept {
        std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ULL);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
        return z ^ (z >> 31);
    }

private:
    std::uint64_t state_;
};

/// Seed of one thread: distinct per pair and role, reproducible from the run seed.
inline std::uint64_t thread_seed(std::uint64_t run_seed, int pair, int role) noexcept {
    return run_seed * 0x100000001B3ULL + static_cast<std::uint64_t>(pair) * 2 + static_cast<std::uint64_t>(role);
}

/// Everything the runners share with the main thread.
struct RunState {
    explicit RunState(const HarnessConfig& config);

    const HarnessConfig& config;
    SharedBlock block;
    std::vector<std::unique_ptr<PairRecorder>> recorders;
    std::vector<std::vector<int>> cpu_plan;  // per thread, in order sender0, receiver0, sender1, ...
    SpinMode spin_mode = SpinMode::busy;
    std::string spin_fallback_reason;

    std::atomic<bool> stop_requested{false};
    std::atomic<bool> finished{false};

    void add_placement(ThreadPlacement placement);
    void add_warning(WarningCode code, std::string detail);
    void fail(std::string error);  // records the first error and stops the run

    std::vector<ThreadPlacement> placements() const;
    std::vector<Warning> warnings() const;
    std::string error() const;
    std::int64_t recorded_total() const noexcept;

private:
    mutable std::mutex mutex_;
    std::vector<ThreadPlacement> placements_;
    std::vector<Warning> warnings_;
    std::string error_;
};

/// Applies the configured policy and CPUs to the calling worker thread and records what
/// was obtained; refusals become warnings, never failures.
void place_thread(RunState& state, const std::string& role, int pair, const std::vector<int>& cpus);

/// CPU sets per thread for a --pin value; throws std::invalid_argument on a bad value.
std::vector<std::vector<int>> plan_cpus(const std::string& pin, int threads, const std::vector<int>& allowed);

/// Runs a thread-based technique to completion (or until stopped).
void run_threaded(RunState& state);

/// Runs the CAF actor technique (technique_caf.cpp); false when CAF was not built in.
bool caf_available() noexcept;
void run_caf(RunState& state);

}  // namespace jitterlab
