// Scheduling policy, CPU affinity and memory locking: what was asked and what was obtained.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace jitterlab {

enum class Policy { other, fifo, rr, deadline };

struct PolicyRequest {
    Policy policy = Policy::other;
    int priority = 0;                 // fifo / rr
    std::uint64_t dl_runtime_ns = 0;  // deadline
    std::uint64_t dl_deadline_ns = 0;
    std::uint64_t dl_period_ns = 0;
};

/// What one thread actually got.
struct ThreadPlacement {
    std::string role;        // "sender", "receiver", ...
    int pair = -1;
    std::string policy;      // as read back from the kernel
    int priority = 0;
    std::vector<int> cpus;   // affinity read back from the kernel
    std::string policy_error;    // empty when the request was granted
    std::string affinity_error;  // empty when the request was granted
};

const char* policy_name(Policy p) noexcept;
bool parse_policy(const std::string& text, Policy& out) noexcept;

/// Applies the request to the calling thread. Returns "" on success, else the reason
/// (for example "Operation not permitted"); the caller warns and goes on.
std::string apply_policy(const PolicyRequest& request);

/// Pins the calling thread to `cpus` (empty: leave as is). Returns "" or the reason.
std::string apply_affinity(const std::vector<int>& cpus);

/// Reads back the calling thread's policy, priority and affinity.
void read_back(ThreadPlacement& placement);

/// Parses "0,1" or "0-3,8"; throws std::invalid_argument with a readable message.
std::vector<int> parse_cpu_list(const std::string& text);

/// CPUs this process may run on.
std::vector<int> allowed_cpus();

/// Locks current and future memory; returns "" or the reason.
std::string lock_memory();

}  // namespace jitterlab
