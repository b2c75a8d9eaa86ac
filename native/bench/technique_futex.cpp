// Direct futex wait/wake on a three-state word (empty, full, empty-with-waiter), so the
// sender only makes the wake syscall when the receiver is actually asleep.
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <climits>

#include "techniques.hpp"

namespace jitterlab {
namespace {

constexpr std::uint32_t kEmpty = 0;
constexpr std::uint32_t kFull = 1;
constexpr std::uint32_t kWaiting = 2;

long futex(std::atomic<std::uint32_t>* word, int op, std::uint32_t value) {
    return syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(word), op | FUTEX_PRIVATE_FLAG, value, nullptr, nullptr, 0);
}

class FutexChannel final : public Channel {
public:
    void send(const Message& message) override {
        slot_ = message;  // published by the release exchange below
        if (state_.exchange(kFull, std::memory_order_acq_rel) == kWaiting) futex(&state_, FUTEX_WAKE, 1);
    }
    Message receive() override {
        for (;;) {
            std::uint32_t state = state_.load(std::memory_order_acquire);
            if (state == kFull) break;
            if (state == kEmpty && !state_.compare_exchange_strong(state, kWaiting, std::memory_order_acq_rel)) continue;
            futex(&state_, FUTEX_WAIT, kWaiting);  // returns at once if the word is no longer kWaiting
        }
        const Message message = slot_;
        state_.store(kEmpty, std::memory_order_release);
        return message;
    }

private:
    alignas(64) std::atomic<std::uint32_t> state_{kEmpty};
    Message slot_{};
};

}  // namespace

std::unique_ptr<Channel> make_futex_channel(SpinMode) { return std::make_unique<FutexChannel>(); }

}  // namespace jitterlab
