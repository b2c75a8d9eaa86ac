// The interface every thread-based technique implements.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace jitterlab {

/// What the sender hands to the receiver: its send timestamp and the value it read.
/// `t_send_ns < 0` tells the receiver that the run is over.
struct Message {
    std::int64_t t_send_ns;
    std::int32_t value;
    std::int32_t pad;
};

/// How spinning techniques wait: pure busy-wait, or busy-wait that yields the CPU
/// (the fallback when there are more spinning threads than CPUs, which would otherwise
/// livelock: a spinner waiting for a thread that cannot get a CPU).
enum class SpinMode { busy, yield };

/// A one-directional channel between one sender thread and one receiver thread.
/// The protocol keeps at most one message in flight per channel.
class Channel {
public:
    virtual ~Channel() = default;
    virtual void send(const Message& message) = 0;
    virtual Message receive() = 0;
};

struct TechniqueInfo {
    std::string name;
    std::string description;
    bool spins;  // whether its waits busy-spin (subject to the oversubscription fallback)
};

/// Creates the channel of a thread-based technique; nullptr for an unknown name.
std::unique_ptr<Channel> make_channel(const std::string& technique, SpinMode spin_mode);

/// Thread-based techniques, in display order.
const std::vector<TechniqueInfo>& thread_techniques();

}  // namespace jitterlab
