#include "jitterlab/sched.hpp"

#include <linux/capability.h>
#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <sstream>
#include <stdexcept>

namespace jitterlab {
namespace {

// glibc 2.36 has no wrapper for sched_setattr; the struct is the kernel's.
struct SchedAttr {
    std::uint32_t size;
    std::uint32_t sched_policy;
    std::uint64_t sched_flags;
    std::int32_t sched_nice;
    std::uint32_t sched_priority;
    std::uint64_t sched_runtime;
    std::uint64_t sched_deadline;
    std::uint64_t sched_period;
};

#ifndef SCHED_DEADLINE
constexpr int SCHED_DEADLINE = 6;
#endif

const char* kernel_policy_name(int policy) noexcept {
    switch (policy) {
        case SCHED_OTHER: return "other";
        case SCHED_FIFO: return "fifo";
        case SCHED_RR: return "rr";
        case SCHED_BATCH: return "batch";
        case SCHED_IDLE: return "idle";
        case SCHED_DEADLINE: return "deadline";
        default: return "unknown";
    }
}

}  // namespace

const char* policy_name(Policy p) noexcept {
    switch (p) {
        case Policy::other: return "other";
        case Policy::fifo: return "fifo";
        case Policy::rr: return "rr";
        case Policy::deadline: return "deadline";
    }
    return "other";
}

bool parse_policy(const std::string& text, Policy& out) noexcept {
    if (text == "other") out = Policy::other;
    else if (text == "fifo") out = Policy::fifo;
    else if (text == "rr") out = Policy::rr;
    else if (text == "deadline") out = Policy::deadline;
    else return false;
    return true;
}

std::string apply_policy(const PolicyRequest& request) {
    if (request.policy == Policy::deadline) {
        SchedAttr attr{};
        attr.size = sizeof attr;
        attr.sched_policy = SCHED_DEADLINE;
        attr.sched_runtime = request.dl_runtime_ns;
        attr.sched_deadline = request.dl_deadline_ns;
        attr.sched_period = request.dl_period_ns;
        if (syscall(SYS_sched_setattr, 0, &attr, 0) != 0) return std::strerror(errno);
        return "";
    }
    const int policy = request.policy == Policy::fifo ? SCHED_FIFO : request.policy == Policy::rr ? SCHED_RR : SCHED_OTHER;
    sched_param param{};
    param.sched_priority = request.policy == Policy::other ? 0 : request.priority;
    const int rc = pthread_setschedparam(pthread_self(), policy, &param);
    return rc == 0 ? "" : std::strerror(rc);
}

std::string apply_affinity(const std::vector<int>& cpus) {
    if (cpus.empty()) return "";
    cpu_set_t set;
    CPU_ZERO(&set);
    for (int cpu : cpus) CPU_SET(cpu, &set);
    const int rc = pthread_setaffinity_np(pthread_self(), sizeof set, &set);
    return rc == 0 ? "" : std::strerror(rc);
}

void read_back(ThreadPlacement& placement) {
    // sched_getscheduler sees SCHED_DEADLINE too, which pthread_getschedparam may not name.
    const int policy = sched_getscheduler(0);
    placement.policy = policy < 0 ? "unknown" : kernel_policy_name(policy);
    sched_param param{};
    int ignored = 0;
    if (pthread_getschedparam(pthread_self(), &ignored, &param) == 0) placement.priority = param.sched_priority;
    cpu_set_t set;
    CPU_ZERO(&set);
    placement.cpus.clear();
    if (pthread_getaffinity_np(pthread_self(), sizeof set, &set) == 0) {
        for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
            if (CPU_ISSET(cpu, &set)) placement.cpus.push_back(cpu);
    }
}

std::vector<int> parse_cpu_list(const std::string& text) {
    std::vector<int> cpus;
    std::stringstream stream(text);
    std::string item;
    while (std::getline(stream, item, ',')) {
        const auto dash = item.find('-');
        try {
            std::size_t used = 0;
            if (dash == std::string::npos) {
                cpus.push_back(std::stoi(item, &used));
                if (used != item.size()) throw std::invalid_argument(item);
            } else {
                const int lo = std::stoi(item.substr(0, dash));
                const int hi = std::stoi(item.substr(dash + 1));
                if (hi < lo) throw std::invalid_argument(item);
                for (int c = lo; c <= hi; ++c) cpus.push_back(c);
            }
        } catch (const std::logic_error&) {
            throw std::invalid_argument("--pin: '" + text + "' is not none, spread, compact or a CPU list like 0,1 or 0-3");
        }
    }
    if (cpus.empty()) throw std::invalid_argument("--pin: empty CPU list");
    return cpus;
}

std::vector<int> allowed_cpus() {
    std::vector<int> cpus;
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
            if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
    }
    return cpus;
}

namespace {

bool may_lock_without_limit() {
    __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct data[2]{};
    if (syscall(SYS_capget, &header, data) != 0) return false;
    return (data[CAP_IPC_LOCK / 32].effective & (1U << (CAP_IPC_LOCK % 32))) != 0;
}

}  // namespace

std::string lock_memory() {
    // MCL_FUTURE holds every later mapping to RLIMIT_MEMLOCK unless the process has
    // CAP_IPC_LOCK: under a user's default 8 MiB, mlockall succeeded and the sample buffers'
    // allocation then failed (std::bad_alloc, issue 24 item 14). Lock only where no limit bites.
    rlimit limit{};
    if (!may_lock_without_limit() && getrlimit(RLIMIT_MEMLOCK, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY)
        return "not locked: RLIMIT_MEMLOCK is " + std::to_string(limit.rlim_cur / 1024) +
               " KiB and this process lacks CAP_IPC_LOCK (locking all future memory would make every allocation past "
               "that limit fail)";
    if (mlockall(MCL_CURRENT | MCL_FUTURE) != 0) return std::strerror(errno);
    return "";
}

}  // namespace jitterlab
