// The per-sample round barrier of the n x (1:1) protocol.
#pragma once

#include <atomic>
#include <cstdint>

namespace jitterlab {

/// A reusable barrier for `participants` threads with two ways to arrive:
///
/// - `arrive_and_wait()` blocks until the round completes (senders use it);
/// - `arrive()` counts the caller in and returns at once (receivers use it after
///   recording, so that they are back in `receive()` before the next round starts).
///
/// The last arrival of a round runs the completion check `keep_going()` exactly once and
/// publishes its answer to every waiter, so all threads agree on whether to stop.
/// Waiting uses C++20 atomic wait (a futex on Linux) after a short spin.
class RoundBarrier {
public:
    /// `external_stop`, when given, is read at every round completion too (the harness's
    /// interrupt flag, set by the main thread).
    explicit RoundBarrier(std::uint32_t participants, const std::atomic<bool>* external_stop = nullptr) noexcept
        : participants_(participants), external_stop_(external_stop), remaining_(participants) {}

    RoundBarrier(const RoundBarrier&) = delete;
    RoundBarrier& operator=(const RoundBarrier&) = delete;

    /// Stop every thread at the next round (safe from any thread; not from a signal handler).
    void request_stop() noexcept { stop_.store(true, std::memory_order_relaxed); }

    /// Counts the caller in without waiting. Returns the round number it arrived in.
    std::uint32_t arrive() noexcept {
        const std::uint32_t round = round_.load(std::memory_order_acquire);
        if (remaining_.fetch_sub(1, std::memory_order_acq_rel) == 1) complete_round(round);
        return round;
    }

    /// Counts the caller in and waits for the round to complete.
    /// Returns false when the run must stop.
    bool arrive_and_wait() noexcept {
        const std::uint32_t round = arrive();
        for (int spin = 0; spin < 64; ++spin) {
            if (round_.load(std::memory_order_acquire) != round) return !stopped_.load(std::memory_order_acquire);
        }
        while (round_.load(std::memory_order_acquire) == round) round_.wait(round, std::memory_order_acquire);
        return !stopped_.load(std::memory_order_acquire);
    }

    /// Whether the last completed round decided to stop.
    bool stopped() const noexcept { return stopped_.load(std::memory_order_acquire); }

    std::uint32_t participants() const noexcept { return participants_; }

private:
    void complete_round(std::uint32_t round) noexcept {
        const bool external = external_stop_ != nullptr && external_stop_->load(std::memory_order_relaxed);
        if (external || stop_.load(std::memory_order_relaxed)) stopped_.store(true, std::memory_order_release);
        remaining_.store(participants_, std::memory_order_relaxed);
        round_.store(round + 1, std::memory_order_release);
        round_.notify_all();
    }

    const std::uint32_t participants_;
    const std::atomic<bool>* external_stop_;
    alignas(64) std::atomic<std::uint32_t> remaining_;
    alignas(64) std::atomic<std::uint32_t> round_{0};
    std::atomic<bool> stop_{false};
    std::atomic<bool> stopped_{false};
};

}  // namespace jitterlab
