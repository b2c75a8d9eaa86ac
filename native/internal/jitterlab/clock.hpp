// Clock reads used by every harness: CLOCK_MONOTONIC in signed 64-bit nanoseconds.
#pragma once

#include <cstdint>
#include <ctime>

namespace jitterlab {

/// Nanoseconds from CLOCK_MONOTONIC (vDSO, no syscall on a TSC clocksource).
/// System.nanoTime() on Linux and the JVM's `-Xlog:...:tn` decorator read the same clock.
inline std::int64_t now_ns() noexcept {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

/// Wall-clock nanoseconds since the Unix epoch, for metadata only (never for latencies).
inline std::int64_t realtime_ns() noexcept {
    timespec ts{};
    clock_gettime(CLOCK_REALTIME, &ts);
    return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

/// Pause hint for spin loops: lets the sibling hyperthread run and saves power.
inline void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    asm volatile("yield" ::: "memory");
#endif
}

}  // namespace jitterlab
