// A channel over a pair of file descriptors (the kernel-IPC baselines: pipe, Unix socket).
#pragma once

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

#include "jitterlab/channel.hpp"
#include "jitterlab/unique_fd.hpp"

namespace jitterlab {

/// Owns both descriptors; messages are written and read whole (they are far below PIPE_BUF).
class FdChannel : public Channel {
public:
    FdChannel(int write_fd, int read_fd) : write_fd_(write_fd), read_fd_(read_fd) {}

    void send(const Message& message) override {
        transfer(write_fd_.get(), const_cast<Message*>(&message), true);
    }
    Message receive() override {
        Message message{};
        transfer(read_fd_.get(), &message, false);
        return message;
    }

private:
    static void transfer(int fd, Message* message, bool writing) {
        auto* bytes = reinterpret_cast<char*>(message);
        std::size_t done = 0;
        while (done < sizeof(Message)) {
            const ssize_t n = writing ? ::write(fd, bytes + done, sizeof(Message) - done)
                                      : ::read(fd, bytes + done, sizeof(Message) - done);
            if (n > 0) { done += static_cast<std::size_t>(n); continue; }
            if (n < 0 && errno == EINTR) continue;
            throw std::runtime_error(std::string(writing ? "write" : "read") + " failed: " +
                                     (n == 0 ? "end of stream" : std::strerror(errno)));
        }
    }
    UniqueFd write_fd_;
    UniqueFd read_fd_;
};

}  // namespace jitterlab
