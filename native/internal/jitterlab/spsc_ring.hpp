// A bounded lock-free single-producer/single-consumer ring.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>

namespace jitterlab {

inline constexpr std::size_t kCacheLine = 64;

/// Bounded SPSC ring with `Capacity` slots (a power of two).
///
/// Each slot sits on its own cache line next to a sequence number that says whose turn
/// it is (the bounded-queue design of D. Vyukov, reduced to one producer and one
/// consumer). The consumer polls the slot itself, so a message costs one cache-line
/// transfer instead of two (index line, then data line); head and tail are private.
template <typename T, std::size_t Capacity>
class SpscRing {
    static_assert(Capacity >= 2 && (Capacity & (Capacity - 1)) == 0, "Capacity must be a power of two");

public:
    SpscRing() : slots_(std::make_unique<Slot[]>(Capacity)) {
        for (std::size_t i = 0; i < Capacity; ++i) slots_[i].seq.store(i, std::memory_order_relaxed);
    }

    /// Producer side. Returns false when the ring is full.
    bool try_push(const T& value) noexcept {
        Slot& slot = slots_[tail_ & (Capacity - 1)];
        if (slot.seq.load(std::memory_order_acquire) != tail_) return false;  // not yet consumed
        slot.value = value;
        slot.seq.store(tail_ + 1, std::memory_order_release);
        ++tail_;
        return true;
    }

    /// Consumer side. Returns nothing when the ring is empty.
    std::optional<T> try_pop() noexcept {
        Slot& slot = slots_[head_ & (Capacity - 1)];
        if (slot.seq.load(std::memory_order_acquire) != head_ + 1) return std::nullopt;
        T value = slot.value;
        slot.seq.store(head_ + Capacity, std::memory_order_release);  // free for the next lap
        ++head_;
        return value;
    }

    static constexpr std::size_t capacity() noexcept { return Capacity; }

private:
    struct alignas(kCacheLine) Slot {
        std::atomic<std::uint64_t> seq{0};
        T value{};
    };
    std::unique_ptr<Slot[]> slots_;
    alignas(kCacheLine) std::uint64_t tail_ = 0;  // producer-private
    alignas(kCacheLine) std::uint64_t head_ = 0;  // consumer-private
};

}  // namespace jitterlab
