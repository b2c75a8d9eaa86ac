// The per-sample round barrier of the n x (1:1) protocol.
#pragma once

#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <climits>
#include <cstdint>

#include "jitterlab/clock.hpp"

namespace jitterlab {

/// How waiters wait: sleep in the kernel (blocking techniques), busy-spin (spinning
/// techniques with a CPU per thread), or spin with sched_yield (spinning techniques with
/// more threads than CPUs). A spinning technique must not sleep in the barrier: the woken
/// thread can land on the CPU of a peer that is busy-spinning and wait for its time slice.
enum class WaitMode { block, spin, yield };

/// A reusable barrier for `participants` threads with two ways to arrive:
///
/// - `arrive_and_wait()` blocks until the round completes (senders use it);
/// - `arrive()` counts the caller in and returns at once (receivers use it after
///   recording, so that they are back in `receive()` before the next round starts).
///
/// The last arrival of a round reads the stop flag once and publishes the answer to every
/// waiter, so all threads agree on whether the run goes on.
class RoundBarrier {
public:
    /// `external_stop`, when given, is read at every round completion (the harness's
    /// interrupt flag, set by the main thread).
    explicit RoundBarrier(std::uint32_t participants, const std::atomic<bool>* external_stop = nullptr,
                          WaitMode mode = WaitMode::block) noexcept
        : participants_(participants), external_stop_(external_stop), mode_(mode), remaining_(participants) {}

    RoundBarrier(const RoundBarrier&) = delete;
    RoundBarrier& operator=(const RoundBarrier&) = delete;

    /// Counts the caller in without waiting. Returns the round it arrived in.
    std::uint32_t arrive() noexcept {
        const std::uint32_t round = round_.load(std::memory_order_acquire);
        if (remaining_.fetch_sub(1, std::memory_order_acq_rel) == 1) complete_round(round);
        return round;
    }

    /// Counts the caller in and waits for the round to complete.
    /// Returns false when the run must stop.
    bool arrive_and_wait() noexcept {
        const std::uint32_t round = arrive();
        for (int spin = 0; spin < 64 && passed(round) == false; ++spin) cpu_relax();
        switch (mode_) {
            case WaitMode::spin:
                while (!passed(round)) cpu_relax();
                break;
            case WaitMode::yield:
                while (!passed(round)) sched_yield();
                break;
            case WaitMode::block:
                while (!passed(round)) {
                    // Dekker-style handshake with complete_round(): either we see the new
                    // round, or the completer sees a sleeper and wakes it.
                    sleepers_.fetch_add(1, std::memory_order_seq_cst);
                    if (round_.load(std::memory_order_seq_cst) == round) futex(FUTEX_WAIT_PRIVATE, round);
                    sleepers_.fetch_sub(1, std::memory_order_seq_cst);
                }
                break;
        }
        return !stopped_.load(std::memory_order_acquire);
    }

private:
    bool passed(std::uint32_t round) const noexcept { return round_.load(std::memory_order_acquire) != round; }

    void complete_round(std::uint32_t round) noexcept {
        if (external_stop_ != nullptr && external_stop_->load(std::memory_order_relaxed))
            stopped_.store(true, std::memory_order_release);
        remaining_.store(participants_, std::memory_order_relaxed);
        round_.store(round + 1, std::memory_order_seq_cst);
        if (sleepers_.load(std::memory_order_seq_cst) > 0) futex(FUTEX_WAKE_PRIVATE, INT_MAX);
    }

    void futex(int op, std::uint32_t value) noexcept {
        static_assert(sizeof(std::atomic<std::uint32_t>) == sizeof(std::uint32_t));
        syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&round_), op, value, nullptr, nullptr, 0);
    }

    const std::uint32_t participants_;
    const std::atomic<bool>* external_stop_;
    const WaitMode mode_;
    alignas(64) std::atomic<std::uint32_t> remaining_;
    alignas(64) std::atomic<std::uint32_t> round_{0};
    std::atomic<std::uint32_t> sleepers_{0};
    std::atomic<bool> stopped_{false};
};

}  // namespace jitterlab
