#include "techniques.hpp"

#include <functional>

namespace jitterlab {
namespace {

Technique threads(std::string name, std::string description, bool spins,
                  std::function<std::unique_ptr<Channel>(SpinMode)> make) {
    return Technique{{std::move(name), std::move(description), spins}, TechniqueKind::threads, true, "", std::move(make), {}};
}

}  // namespace

const std::vector<Technique>& techniques() {
    static const std::vector<Technique> entries = {
        threads("mutex", "pthread mutex + condition variable, one-slot mailbox", false, make_mutex_channel),
        threads("spin", "busy-wait on an atomic sequence number (with pause)", true, make_spin_channel),
        threads("spsc", "lock-free SPSC ring, cache-line padded, busy-spin", true, make_spsc_channel),
        threads("futex", "direct futex wait/wake", false, make_futex_channel),
        threads("pipe", "anonymous pipe (kernel IPC baseline)", false, make_pipe_channel),
        threads("unix", "Unix domain stream socket pair (kernel IPC baseline)", false, make_unix_channel),
        Technique{{"caf", caf_available() ? "CAF 0.17 actors (stealing, sharing or detached scheduler)"
                                          : "CAF actors: not built; install the Debian package libcaf-dev and reinstall",
                   false},
                  TechniqueKind::actors, caf_available(),
                  "CAF was not found at build time (install libcaf-dev, then reinstall jitterlab)", {}, run_caf},
        Technique{{"c2c", "core-to-core cache-line ping-pong (the machine floor on its own)", true},
                  TechniqueKind::floor, true, "", {}, {}},
    };
    return entries;
}

const Technique* find_technique(const std::string& name) {
    for (const auto& t : techniques())
        if (t.info.name == name) return &t;
    return nullptr;
}

const char* kind_name(TechniqueKind kind) {
    switch (kind) {
        case TechniqueKind::threads: return "threads";
        case TechniqueKind::actors: return "actors";
        case TechniqueKind::floor: return "floor";
    }
    return "?";
}

std::unique_ptr<Channel> make_channel(const std::string& technique, SpinMode spin_mode) {
    const Technique* t = find_technique(technique);
    return t != nullptr && t->make ? t->make(spin_mode) : nullptr;
}

const std::vector<TechniqueInfo>& thread_techniques() {
    static const std::vector<TechniqueInfo> infos = [] {
        std::vector<TechniqueInfo> out;
        for (const auto& t : techniques())
            if (t.kind == TechniqueKind::threads) out.push_back(t.info);
        return out;
    }();
    return infos;
}

}  // namespace jitterlab
