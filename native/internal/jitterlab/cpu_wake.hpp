// The one holder of /dev/cpu_dma_latency (PM QoS) for every native tool.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>

#include "jitterlab/unique_fd.hpp"

namespace jitterlab {

/// Holds /dev/cpu_dma_latency at 0 µs while it lives (cyclictest's habit): a halted vCPU or
/// a deep C-state takes milliseconds to wake, which a sender on a schedule records as its own
/// lag. The kernel keeps the request while the descriptor is open; refusal is not fatal.
class CpuWakeHold {
public:
    CpuWakeHold() : fd_(::open("/dev/cpu_dma_latency", O_WRONLY | O_CLOEXEC)) {
        const std::int32_t zero = 0;
        if (!fd_ || ::write(fd_.get(), &zero, sizeof zero) != static_cast<ssize_t>(sizeof zero)) {
            error_ = std::strerror(errno);
            fd_.reset();
        }
    }
    bool held() const noexcept { return static_cast<bool>(fd_); }
    /// Why the request was refused; empty when held.
    const std::string& error() const noexcept { return error_; }

private:
    UniqueFd fd_;
    std::string error_;
};

}  // namespace jitterlab
