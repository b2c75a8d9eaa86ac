// "Threads with mutex" of the seeds: a one-slot mailbox guarded by a pthread mutex and
// woken through a condition variable.
#include <condition_variable>
#include <mutex>

#include "techniques.hpp"

namespace jitterlab {
namespace {

class MutexChannel final : public Channel {
public:
    void send(const Message& message) override {
        {
            std::lock_guard lock(mutex_);
            slot_ = message;
            full_ = true;
        }
        ready_.notify_one();
    }
    Message receive() override {
        std::unique_lock lock(mutex_);
        ready_.wait(lock, [this] { return full_; });
        full_ = false;
        return slot_;
    }

private:
    std::mutex mutex_;
    std::condition_variable ready_;
    Message slot_{};
    bool full_ = false;
};

}  // namespace

std::unique_ptr<Channel> make_mutex_channel(SpinMode) { return std::make_unique<MutexChannel>(); }

}  // namespace jitterlab
