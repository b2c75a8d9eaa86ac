// Kernel-IPC baseline: an anonymous pipe.
#include <fcntl.h>
#include <unistd.h>

#include "fd_channel.hpp"
#include "techniques.hpp"

namespace jitterlab {

std::unique_ptr<Channel> make_pipe_channel(SpinMode) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error(std::string("pipe2: ") + std::strerror(errno));
    return std::make_unique<FdChannel>(fds[1], fds[0]);
}

}  // namespace jitterlab
