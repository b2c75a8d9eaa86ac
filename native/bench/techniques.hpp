// The factories of the thread-based techniques, one per file.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "harness.hpp"
#include "jitterlab/channel.hpp"

namespace jitterlab {

/// How a technique runs: threads exchanging messages over a Channel (the harness drives
/// them), actors that drive the run themselves, or the machine floor measured on its own.
enum class TechniqueKind { threads, actors, floor };

/// Every technique of jitterlab-bench, in one registry: `--list` prints it, the Python
/// side reads that list, and main() dispatches on the kind.
struct Technique {
    TechniqueInfo info;
    TechniqueKind kind = TechniqueKind::threads;
    bool available = true;
    std::string unavailable_reason;
    std::function<std::unique_ptr<Channel>(SpinMode)> make;  // threads
    std::function<void(RunState&)> run;                       // actors
};

const std::vector<Technique>& techniques();
const Technique* find_technique(const std::string& name);
const char* kind_name(TechniqueKind kind);

std::unique_ptr<Channel> make_mutex_channel(SpinMode mode);
std::unique_ptr<Channel> make_spin_channel(SpinMode mode);
std::unique_ptr<Channel> make_spsc_channel(SpinMode mode);
std::unique_ptr<Channel> make_futex_channel(SpinMode mode);
std::unique_ptr<Channel> make_pipe_channel(SpinMode mode);
std::unique_ptr<Channel> make_unix_channel(SpinMode mode);

}  // namespace jitterlab
