#include "transport.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <ctime>
#include <utility>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <thread>

#include "jitterlab/clock.hpp"
#include "jitterlab/unique_fd.hpp"

#ifdef JITTERLAB_HAVE_CAF_IO
#include <caf/all.hpp>
#include <caf/io/all.hpp>
#endif

namespace jitterlab::net {

Endpoint parse_endpoint(const std::string& text) {
    const auto colon = text.rfind(':');
    if (colon == std::string::npos) throw SetupError("peer '" + text + "' is not ADDRESS:PORT");
    Endpoint e{text.substr(0, colon), 0};
    try {
        e.port = std::stoi(text.substr(colon + 1));
    } catch (const std::logic_error&) {
        throw SetupError("peer '" + text + "' has no port number");
    }
    return e;
}

// ---- the scenario logic every server shares ------------------------------------------------

Responder::Responder(int node, int payload, std::size_t capacity) : node_(node), payload_(payload), capacity_(capacity) {
    records_.reserve(capacity);
}

int Responder::handle(const char* message, int size, char* reply, std::int64_t now) {
    if (size < kHeaderBytes) return 0;
    Header h = read_header(message);
    const std::lock_guard lock(mutex_);
    ++received_;
    switch (h.kind) {
        case Kind::ping:
            std::memcpy(reply, message, static_cast<std::size_t>(size));
            h.kind = Kind::pong;
            h.node = static_cast<std::uint32_t>(node_);  // the answer names who answered
            write_header(reply, h);
            return size;
        case Kind::start:  // a repeated start (its credit was lost) must not reset the count again
            if (h.seq != stream_step_) {
                stream_step_ = h.seq;
                stream_count_ = 0;
                stream_high_ = -1;
                stream_start_ = now;
                credit_every_ = std::max<std::int64_t>(h.t_intended, 0);
            }
            return credit(reply, now);
        case Kind::data:
            ++stream_count_;
            stream_high_ = std::max(stream_high_, h.seq);
            if (records_.size() < capacity_)
                records_.push_back(sample(0, static_cast<std::int32_t>(h.node), node_, h.seq, h.t_intended, h.t_send, now));
            else ++dropped_;
            return credit_every_ > 0 && stream_count_ % credit_every_ == 0 ? credit(reply, now) : 0;
        case Kind::end: {
            std::memset(reply, 0, static_cast<std::size_t>(payload_));
            write_header(reply, {Kind::ready, static_cast<std::uint32_t>(node_), stream_count_, now - stream_start_, h.t_intended});
            return payload_;
        }
        case Kind::frame:
            std::memset(reply, 0, static_cast<std::size_t>(payload_));
            write_header(reply, {Kind::done, static_cast<std::uint32_t>(node_), h.seq, now, h.t_send});
            return payload_;
        default:
            return 0;  // state updates are load only
    }
}

int Responder::credit(char* reply, std::int64_t now) const {
    std::memset(reply, 0, static_cast<std::size_t>(payload_));
    write_header(reply, {Kind::credit, static_cast<std::uint32_t>(node_), stream_high_, stream_step_, now});
    return payload_;
}

std::vector<NetSampleRecord> Responder::take_records() {
    std::vector<NetSampleRecord> fresh;
    fresh.reserve(capacity_);  // outside the lock; only the pages written to cost memory
    const std::lock_guard lock(mutex_);
    fresh.swap(records_);
    return fresh;
}

std::int64_t Responder::received() const {
    const std::lock_guard lock(mutex_);
    return received_;
}

std::int64_t Responder::dropped_records() const {
    const std::lock_guard lock(mutex_);
    return dropped_;
}

namespace {


sockaddr_in address(const std::string& host, int port) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<std::uint16_t>(port));
    if (::inet_pton(AF_INET, host.c_str(), &a.sin_addr) != 1) throw SetupError("'" + host + "' is not an IPv4 address");
    return a;
}

UniqueFd bound_socket(int type, const std::string& bind, int port) {
    UniqueFd fd(::socket(AF_INET, type | SOCK_CLOEXEC, 0));
    if (fd.get() < 0) throw SetupError(std::string("socket: ") + std::strerror(errno));
    const int one = 1;
    if (type == SOCK_STREAM) ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    const sockaddr_in a = address(bind, port);
    if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&a), sizeof a) != 0)
        throw SetupError("port " + std::to_string(port) + " on " + bind + " is in use or not ours (" + std::strerror(errno) + ")");
    return fd;
}

int bound_port(int fd) {
    sockaddr_in a{};
    socklen_t len = sizeof a;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    return ntohs(a.sin_port);
}

void set_buffers(int fd) {
    const int bytes = 4 << 20;  // a stream burst must not overflow the default 208 KiB buffer
    ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bytes, sizeof bytes);
    ::setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bytes, sizeof bytes);
}

/// Waits for input on `polls` until `deadline_ns` (nanosecond resolution: poll's milliseconds
/// would make an open-loop sender up to 1 ms late by itself). False on timeout.
bool wait_input(std::vector<pollfd>& polls, std::int64_t deadline_ns) {
    const std::int64_t left = std::max<std::int64_t>(deadline_ns - now_ns(), 0);
    const timespec ts{static_cast<time_t>(left / 1'000'000'000), static_cast<long>(left % 1'000'000'000)};
    return ::ppoll(polls.data(), polls.size(), &ts, nullptr) > 0;
}

bool write_frame(int fd, const char* data, int size) {
    char frame[4 + kMaxPayload];
    const auto len = static_cast<std::uint32_t>(size);
    std::memcpy(frame, &len, 4);
    std::memcpy(frame + 4, data, static_cast<std::size_t>(size));
    std::size_t sent = 0, total = 4 + static_cast<std::size_t>(size);
    while (sent < total) {
        const ssize_t w = ::send(fd, frame + sent, total - sent, MSG_NOSIGNAL);
        if (w < 0) {
            if (errno == EINTR) continue;
            return false;
        }
        sent += static_cast<std::size_t>(w);
    }
    return true;
}

/// Reads length-prefixed frames through a buffer: one recv() usually brings a whole frame
/// (or several), where reading the prefix and then the body costs two system calls (that
/// second call made the tcp round trip 1.3x sockperf's).
class FrameReader {
public:
    FrameReader() : buf_(4 * (4 + kMaxPayload)) {}
    /// Whether a whole frame is buffered (then poll would not report it).
    bool has_frame() const {
        if (end_ - start_ < 4) return false;
        std::uint32_t len = 0;
        std::memcpy(&len, buf_.data() + start_, 4);
        return end_ - start_ >= 4 + len;
    }
    /// The next frame into `out` (blocking until it is whole); its size, or -1 when the
    /// connection closed or sent a frame larger than `capacity`.
    int next(int fd, char* out, int capacity) {
        while (!has_frame()) {
            if (start_ > 0) {  // keep the partial frame at the front
                std::memmove(buf_.data(), buf_.data() + start_, end_ - start_);
                end_ -= start_;
                start_ = 0;
            }
            if (end_ >= 4) {
                std::uint32_t len = 0;
                std::memcpy(&len, buf_.data(), 4);
                if (len > static_cast<std::uint32_t>(capacity)) return -1;
            }
            const ssize_t r = ::recv(fd, buf_.data() + end_, buf_.size() - end_, 0);
            if (r <= 0) {
                if (r < 0 && errno == EINTR) continue;
                return -1;
            }
            end_ += static_cast<std::size_t>(r);
        }
        std::uint32_t len = 0;
        std::memcpy(&len, buf_.data() + start_, 4);
        if (len > static_cast<std::uint32_t>(capacity)) return -1;
        std::memcpy(out, buf_.data() + start_ + 4, len);
        start_ += 4 + len;
        if (start_ == end_) start_ = end_ = 0;
        return static_cast<int>(len);
    }

private:
    std::vector<char> buf_;
    std::size_t start_ = 0, end_ = 0;
};

// ---- udp -------------------------------------------------------------------------------------

class UdpServer final : public Server {
public:
    UdpServer(const std::string& bind, int port, int payload, Responder& r) : fd_(bound_socket(SOCK_DGRAM, bind, port)) {
        set_buffers(fd_.get());
        thread_ = std::jthread([this, payload, &r](std::stop_token stop) {
            std::vector<char> in(kMaxPayload), out(static_cast<std::size_t>(std::max(payload, kHeaderBytes)) + kMaxPayload);
            pollfd p{fd_.get(), POLLIN, 0};
            while (!stop.stop_requested()) {
                if (::poll(&p, 1, 100) <= 0) continue;
                sockaddr_in from{};
                socklen_t len = sizeof from;
                const ssize_t n = ::recvfrom(fd_.get(), in.data(), in.size(), 0, reinterpret_cast<sockaddr*>(&from), &len);
                if (n <= 0) continue;
                const int reply = r.handle(in.data(), static_cast<int>(n), out.data(), now_ns());
                if (reply > 0) ::sendto(fd_.get(), out.data(), static_cast<std::size_t>(reply), 0, reinterpret_cast<sockaddr*>(&from), len);
            }
        });
    }
    int port() const override { return bound_port(fd_.get()); }

private:
    UniqueFd fd_;
    std::jthread thread_;  // last: stopped and joined before the socket closes
};

class UdpClient final : public Client {
public:
    explicit UdpClient(const std::vector<Endpoint>& peers) {
        for (const auto& e : peers) {
            UniqueFd fd(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
            set_buffers(fd.get());
            const sockaddr_in a = address(e.host, e.port);
            if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&a), sizeof a) != 0)
                throw SetupError("udp peer " + e.host + ":" + std::to_string(e.port) + ": " + std::strerror(errno));
            polls_.push_back({fd.get(), POLLIN, 0});
            fds_.push_back(std::move(fd));
        }
    }
    bool send(int peer, const char* data, int size) override {
        return ::send(fds_[static_cast<std::size_t>(peer)].get(), data, static_cast<std::size_t>(size), 0) == size;
    }
    int recv(char* buf, int capacity, std::int64_t deadline_ns) override {
        do {
            if (wait_input(polls_, deadline_ns))
                for (auto& p : polls_)
                    if (p.revents & (POLLIN | POLLERR)) {  // recv also clears a pending ICMP error, which
                        // poll would otherwise report at once until the deadline (a busy loop)
                        const ssize_t n = ::recv(p.fd, buf, static_cast<std::size_t>(capacity), MSG_DONTWAIT);
                        if (n > 0) return static_cast<int>(n);
                    }
        } while (now_ns() < deadline_ns);
        return -1;
    }

private:
    std::vector<UniqueFd> fds_;
    std::vector<pollfd> polls_;
};

// ---- tcp (length-prefixed frames, TCP_NODELAY) ------------------------------------------------

void no_delay(int fd) {
    const int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

class TcpServer final : public Server {
public:
    TcpServer(const std::string& bind, int port, int payload, Responder& r) : fd_(bound_socket(SOCK_STREAM, bind, port)) {
        if (::listen(fd_.get(), 64) != 0) throw SetupError(std::string("listen: ") + std::strerror(errno));
        accept_ = std::jthread([this, payload, &r](std::stop_token stop) {
            pollfd p{fd_.get(), POLLIN, 0};
            while (!stop.stop_requested()) {
                if (::poll(&p, 1, 100) <= 0) continue;
                const int c = ::accept4(fd_.get(), nullptr, nullptr, SOCK_CLOEXEC);
                if (c < 0) continue;
                no_delay(c);
                set_buffers(c);
                connections_.emplace_back([c, payload, &r](std::stop_token s) {
                    const UniqueFd conn(c);
                    std::vector<char> in(kMaxPayload), out(static_cast<std::size_t>(payload) + kMaxPayload);
                    FrameReader reader;
                    pollfd cp{c, POLLIN, 0};
                    while (!s.stop_requested()) {
                        if (!reader.has_frame() && ::poll(&cp, 1, 100) <= 0) continue;
                        const int n = reader.next(c, in.data(), kMaxPayload);
                        if (n < 0) return;
                        const int reply = r.handle(in.data(), n, out.data(), now_ns());
                        if (reply > 0 && !write_frame(c, out.data(), reply)) return;
                    }
                });
            }
        });
    }
    ~TcpServer() override {
        accept_.request_stop();
        accept_.join();
        connections_.clear();  // each stops and joins
    }
    int port() const override { return bound_port(fd_.get()); }

private:
    UniqueFd fd_;
    std::vector<std::jthread> connections_;
    std::jthread accept_;
};

class TcpClient final : public Client {
public:
    explicit TcpClient(const std::vector<Endpoint>& peers) {
        for (const auto& e : peers) {
            UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
            no_delay(fd.get());
            set_buffers(fd.get());
            const sockaddr_in a = address(e.host, e.port);
            if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&a), sizeof a) != 0)
                throw SetupError("tcp peer " + e.host + ":" + std::to_string(e.port) + ": " + std::strerror(errno));
            polls_.push_back({fd.get(), POLLIN, 0});
            fds_.push_back(std::move(fd));
            readers_.emplace_back();
        }
    }
    bool send(int peer, const char* data, int size) override {
        return write_frame(fds_[static_cast<std::size_t>(peer)].get(), data, size);
    }
    int recv(char* buf, int capacity, std::int64_t deadline_ns) override {
        for (std::size_t i = 0; i < readers_.size(); ++i)
            if (readers_[i].has_frame()) return readers_[i].next(polls_[i].fd, buf, capacity);
        do {
            if (wait_input(polls_, deadline_ns))
                for (std::size_t i = 0; i < polls_.size(); ++i)
                    if (polls_[i].revents & (POLLIN | POLLHUP)) return readers_[i].next(polls_[i].fd, buf, capacity);
        } while (now_ns() < deadline_ns);
        return -1;
    }

private:
    std::vector<UniqueFd> fds_;
    std::vector<pollfd> polls_;
    std::vector<FrameReader> readers_;
};

#ifdef JITTERLAB_HAVE_CAF_IO
// ---- caf-io (CAF 0.17 remoting over its BASP protocol on TCP) -------------------------------

caf::actor_system_config& caf_config(caf::actor_system_config& cfg) {
    cfg.load<caf::io::middleman>();
    cfg.set("scheduler.max-threads", static_cast<std::size_t>(2));
    return cfg;
}

caf::behavior responder_actor(caf::event_based_actor* self, Responder* r, int payload) {
    auto out = std::make_shared<std::vector<char>>(static_cast<std::size_t>(payload) + kMaxPayload);
    return {[=](const std::string& message) {
        const int reply = r->handle(message.data(), static_cast<int>(message.size()), out->data(), now_ns());
        if (reply > 0) self->send(caf::actor_cast<caf::actor>(self->current_sender()), std::string(out->data(), static_cast<std::size_t>(reply)));
    }};
}

class CafServer final : public Server {
public:
    CafServer(const std::string& bind, int port, int payload, Responder& r) : system_(caf_config(cfg_)) {
        actor_ = system_.spawn(responder_actor, &r, payload);
        auto published = system_.middleman().publish(actor_, static_cast<std::uint16_t>(port), bind.c_str(), true);
        if (!published) throw SetupError("caf-io: cannot publish on " + bind + ":" + std::to_string(port) + ": " + system_.render(published.error()));
        port_ = *published;
    }
    ~CafServer() override { caf::anon_send_exit(actor_, caf::exit_reason::user_shutdown); }
    int port() const override { return port_; }

private:
    caf::actor_system_config cfg_;
    caf::actor_system system_;
    caf::actor actor_;
    int port_ = 0;
};

class CafClient final : public Client {
public:
    explicit CafClient(const std::vector<Endpoint>& peers) : system_(caf_config(cfg_)), self_(system_) {
        for (const auto& e : peers) {
            auto remote = system_.middleman().remote_actor(e.host, static_cast<std::uint16_t>(e.port));
            if (!remote) throw SetupError("caf-io peer " + e.host + ":" + std::to_string(e.port) + ": " + system_.render(remote.error()));
            peers_.push_back(*remote);
        }
    }
    bool send(int peer, const char* data, int size) override {
        self_->send(peers_[static_cast<std::size_t>(peer)], std::string(data, static_cast<std::size_t>(size)));
        return true;
    }
    int recv(char* buf, int capacity, std::int64_t deadline_ns) override {
        int got = -1;
        const std::int64_t left = std::max<std::int64_t>(deadline_ns - now_ns(), 0);
        self_->receive(
            [&](const std::string& message) {
                got = std::min(static_cast<int>(message.size()), capacity);
                std::memcpy(buf, message.data(), static_cast<std::size_t>(got));
            },
            caf::after(std::chrono::nanoseconds(left)) >> [] {});
        return got;
    }

private:
    caf::actor_system_config cfg_;
    caf::actor_system system_;
    caf::scoped_actor self_;
    std::vector<caf::actor> peers_;
};
#endif

}  // namespace

std::vector<std::string> transports() {
#ifdef JITTERLAB_HAVE_CAF_IO
    return {"udp", "tcp", "caf-io"};
#else
    return {"udp", "tcp"};
#endif
}

std::unique_ptr<Server> make_server(const std::string& transport, const std::string& bind, int port, int payload,
                                    Responder& responder) {
    if (transport == "udp") return std::make_unique<UdpServer>(bind, port, payload, responder);
    if (transport == "tcp") return std::make_unique<TcpServer>(bind, port, payload, responder);
#ifdef JITTERLAB_HAVE_CAF_IO
    if (transport == "caf-io") return std::make_unique<CafServer>(bind, port, payload, responder);
#endif
    throw SetupError("transport '" + transport + "' is not built into this agent");
}

std::unique_ptr<Client> make_client(const std::string& transport, const std::vector<Endpoint>& peers, int /*payload*/) {
    if (transport == "udp") return std::make_unique<UdpClient>(peers);
    if (transport == "tcp") return std::make_unique<TcpClient>(peers);
#ifdef JITTERLAB_HAVE_CAF_IO
    if (transport == "caf-io") return std::make_unique<CafClient>(peers);
#endif
    throw SetupError("transport '" + transport + "' is not built into this agent");
}

}  // namespace jitterlab::net
