// Where CPU time went (issue 27 item 9): the kernel's per-CPU accounting in /proc/stat
// (user, system, softirq, ... of each CPU) and a thread's own user and system time
// (getrusage RUSAGE_THREAD). A tick loop that is "busy" may be running its own code or the
// kernel's send path and the softirq that delivers loopback datagrams: these tell them apart.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

namespace jitterlab::repl {

/// The columns of a /proc/stat "cpuN" line that this reads, in its order (proc(5)); guest
/// time is already inside user and nice.
inline constexpr std::array<const char*, 8> kCpuStatFields = {"user", "nice",    "system",  "idle",
                                                              "iowait", "irq", "softirq", "steal"};

/// One CPU's accounted time, in nanoseconds (the file counts USER_HZ ticks).
struct CpuStat {
    int cpu = -1;
    std::array<std::int64_t, kCpuStatFields.size()> ns{};
};

/// The "cpuN" lines of /proc/stat's text (the all-CPU "cpu" line is left out); a line that
/// does not parse is skipped.
std::vector<CpuStat> parse_proc_stat(std::string_view text, long ticks_per_s);

/// /proc/stat now; empty when it cannot be read.
std::vector<CpuStat> read_proc_stat();

/// after − before, CPU by CPU (a CPU missing from either is left out).
std::vector<CpuStat> difference(const std::vector<CpuStat>& before, const std::vector<CpuStat>& after);

/// A thread's user and system CPU time. With tick-based accounting (no
/// CONFIG_IRQ_TIME_ACCOUNTING) system time includes softirq work that ran in the thread's
/// context, such as delivering a loopback datagram right after the thread sent it.
struct ThreadTimes {
    std::int64_t user_ns = 0, sys_ns = 0;
    ThreadTimes operator-(const ThreadTimes& o) const noexcept { return {user_ns - o.user_ns, sys_ns - o.sys_ns}; }
};

/// The calling thread's times so far.
ThreadTimes thread_times() noexcept;

}  // namespace jitterlab::repl
