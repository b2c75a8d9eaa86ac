// Sockets in another network namespace (issue 27 item 8): a socket belongs to the namespace
// of the thread that created it, so the server's and each client fleet's sockets are made
// inside their node's namespace and the threads that use them stay where they are.
#pragma once

#include <fcntl.h>
#include <sched.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "endpoint.hpp"
#include "jitterlab/unique_fd.hpp"

namespace jitterlab::repl {

/// The calling thread in network namespace `name` (as `ip netns` names it: /run/netns/NAME)
/// until the scope ends; an empty name changes nothing. Throws UsageProblem for a namespace
/// that does not exist or cannot be entered (not root).
class NetnsScope {
public:
    explicit NetnsScope(const std::string& name) {
        if (name.empty()) return;
        if (name.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") !=
                std::string::npos ||
            name[0] == '.')
            throw UsageProblem("network namespace '" + name + "': not a namespace name");
        UniqueFd target(::open(("/run/netns/" + name).c_str(), O_RDONLY | O_CLOEXEC));
        if (target.get() < 0) throw UsageProblem("network namespace " + name + ": " + std::strerror(errno));
        home_ = UniqueFd(::open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC));
        if (home_.get() < 0) throw UsageProblem(std::string("this thread's network namespace: ") + std::strerror(errno));
        if (::setns(target.get(), CLONE_NEWNET) != 0)
            throw UsageProblem("network namespace " + name + ": " + std::strerror(errno) + " (needs root)");
    }
    ~NetnsScope() {
        if (home_.get() >= 0) ::setns(home_.get(), CLONE_NEWNET);
    }
    NetnsScope(const NetnsScope&) = delete;
    NetnsScope& operator=(const NetnsScope&) = delete;

private:
    UniqueFd home_;
};

}  // namespace jitterlab::repl
