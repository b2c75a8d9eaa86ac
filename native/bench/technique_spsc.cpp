// Lock-free single-producer/single-consumer ring, cache-line padded, busy-spinning.
#include "jitterlab/spsc_ring.hpp"
#include "spin_wait.hpp"
#include "techniques.hpp"

namespace jitterlab {
namespace {

class SpscChannel final : public Channel {
public:
    explicit SpscChannel(SpinMode mode) : mode_(mode) {}
    void send(const Message& message) override {
        while (!ring_.try_push(message)) spin_once(mode_);
    }
    Message receive() override {
        for (;;) {
            if (auto message = ring_.try_pop()) return *message;
            spin_once(mode_);
        }
    }

private:
    const SpinMode mode_;
    SpscRing<Message, 128> ring_;  // one message in flight: a small ring stays in L1
};

}  // namespace

std::unique_ptr<Channel> make_spsc_channel(SpinMode mode) { return std::make_unique<SpscChannel>(mode); }

}  // namespace jitterlab
