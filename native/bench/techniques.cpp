#include "techniques.hpp"

#include <functional>

namespace jitterlab {
namespace {

struct Entry {
    TechniqueInfo info;
    std::function<std::unique_ptr<Channel>(SpinMode)> make;
};

const std::vector<Entry>& registry() {
    static const std::vector<Entry> entries = {
        {{"mutex", "pthread mutex + condition variable, one-slot mailbox", false}, make_mutex_channel},
        {{"spin", "busy-wait on an atomic sequence number (with pause)", true}, make_spin_channel},
        {{"spsc", "lock-free SPSC ring, cache-line padded, busy-spin", true}, make_spsc_channel},
        {{"futex", "direct futex wait/wake", false}, make_futex_channel},
        {{"pipe", "anonymous pipe (kernel IPC baseline)", false}, make_pipe_channel},
        {{"unix", "Unix domain stream socket pair (kernel IPC baseline)", false}, make_unix_channel},
    };
    return entries;
}

}  // namespace

std::unique_ptr<Channel> make_channel(const std::string& technique, SpinMode spin_mode) {
    for (const auto& entry : registry())
        if (entry.info.name == technique) return entry.make(spin_mode);
    return nullptr;
}

const std::vector<TechniqueInfo>& thread_techniques() {
    static const std::vector<TechniqueInfo> infos = [] {
        std::vector<TechniqueInfo> out;
        for (const auto& entry : registry()) out.push_back(entry.info);
        return out;
    }();
    return infos;
}

}  // namespace jitterlab
