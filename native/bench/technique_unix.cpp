// Kernel-IPC baseline: a connected Unix domain stream socket pair.
#include <sys/socket.h>

#include "fd_channel.hpp"
#include "techniques.hpp"

namespace jitterlab {

std::unique_ptr<Channel> make_unix_channel(SpinMode) {
    int fds[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0)
        throw std::runtime_error(std::string("socketpair: ") + std::strerror(errno));
    return std::make_unique<FdChannel>(fds[0], fds[1]);
}

}  // namespace jitterlab
