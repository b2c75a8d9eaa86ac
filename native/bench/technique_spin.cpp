// Busy-wait on an atomic sequence number: the receiver spins (with pause) until the sender
// publishes a new sequence, then reads the payload next to it.
#include <atomic>

#include "jitterlab/spsc_ring.hpp"
#include "spin_wait.hpp"
#include "techniques.hpp"

namespace jitterlab {
namespace {

class SpinChannel final : public Channel {
public:
    explicit SpinChannel(SpinMode mode) : mode_(mode) {}
    void send(const Message& message) override {
        slot_ = message;  // published by the release store below
        sent_.store(sent_.load(std::memory_order_relaxed) + 1, std::memory_order_release);
    }
    Message receive() override {
        while (sent_.load(std::memory_order_acquire) == received_) spin_once(mode_);
        ++received_;
        return slot_;
    }

private:
    const SpinMode mode_;
    alignas(kCacheLine) std::atomic<std::uint64_t> sent_{0};
    Message slot_{};
    alignas(kCacheLine) std::uint64_t received_ = 0;  // receiver-private
};

}  // namespace

std::unique_ptr<Channel> make_spin_channel(SpinMode mode) { return std::make_unique<SpinChannel>(mode); }

}  // namespace jitterlab
