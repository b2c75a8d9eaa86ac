// A bounded lock-free single-producer/single-consumer ring.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>

namespace jitterlab {

inline constexpr std::size_t kCacheLine = 64;

/// Bounded SPSC ring with `Capacity` slots (a power of two): one cache-line transfer per
/// message, the cost of the machine's own core-to-core floor.
///
/// - Each slot sits on its own cache line with a sequence number: the producer writes the
///   value and then `seq = index + 1`; the consumer polls the slot itself, so the message
///   and its "ready" flag travel in the same line (the Disruptor's sequence habit, per slot).
/// - The consumer never writes a slot: it publishes how far it has read in `head_`, a line
///   of its own that the producer reads only when its cached copy says the ring is full
///   (rigtorp's SPSCQueue: indices cached on their own side). A consumer that wrote each
///   slot back ("free for the next lap", Vyukov's bounded queue) made the producer fetch
///   the line before writing it: two more transfers per message, 2.1-2.5x the floor on a VM
///   whose core-to-core cost is ~130 ns (issue 27 item 11).
/// - The read-only part (the slots' address), the producer's line and the consumer's line
///   are padded apart, so no write of one side invalidates a line the other side reads.
template <typename T, std::size_t Capacity>
class SpscRing {
    static_assert(Capacity >= 2 && (Capacity & (Capacity - 1)) == 0, "Capacity must be a power of two");

public:
    SpscRing() : slots_(std::make_unique<Slot[]>(Capacity)) {}

    /// Producer side. Returns false when the ring is full.
    bool try_push(const T& value) noexcept {
        if (tail_ - head_cache_ >= Capacity) {
            head_cache_ = head_.load(std::memory_order_acquire);  // the only read of the consumer's line
            if (tail_ - head_cache_ >= Capacity) return false;
        }
        Slot& slot = slots_[tail_ & (Capacity - 1)];
        slot.value = value;
        slot.seq.store(tail_ + 1, std::memory_order_release);
        ++tail_;
        return true;
    }

    /// Consumer side. Returns nothing when the ring is empty.
    std::optional<T> try_pop() noexcept {
        const std::uint64_t head = head_.load(std::memory_order_relaxed);  // our own line
        const Slot& slot = slots_[head & (Capacity - 1)];
        if (slot.seq.load(std::memory_order_acquire) != head + 1) return std::nullopt;
        T value = slot.value;
        head_.store(head + 1, std::memory_order_release);  // the slot may be reused from now on
        return value;
    }

    static constexpr std::size_t capacity() noexcept { return Capacity; }

    /// The slots' memory, for tests that check the consumer never writes it.
    const void* slot_bytes() const noexcept { return slots_.get(); }
    static constexpr std::size_t slot_bytes_size() noexcept { return Capacity * sizeof(Slot); }

private:
    struct alignas(kCacheLine) Slot {
        std::atomic<std::uint64_t> seq{0};  // index + 1 once the value is written
        T value{};
    };
    static_assert(sizeof(Slot) == kCacheLine, "a slot (sequence and value) must fit one cache line");

    alignas(kCacheLine) const std::unique_ptr<Slot[]> slots_;  // read-only after construction
    alignas(kCacheLine) std::uint64_t tail_ = 0;               // producer-private
    std::uint64_t head_cache_ = 0;                             // producer's copy of head_
    alignas(kCacheLine) std::atomic<std::uint64_t> head_{0};   // written by the consumer only
    char pad_[kCacheLine - sizeof(std::atomic<std::uint64_t>)] = {};  // nothing shares head_'s line
};

}  // namespace jitterlab
