// jitterlab-inject: latency injection on live data (thesis ch. 6 §7.1).
//
//   jitterlab-inject proxy --listen [HOST:]PORT --forward HOST:PORT (--model FILE | --zero)
//                          [--tcp] [--seed S] [--reorder] [--queue-limit N] [--queue-bytes B]
//                          [--stats-interval S] [--stats-json FILE] [--duration S]
//                          [--record FILE [--record-limit N]] [--spin-us US] [--busy-poll]
//   jitterlab-inject probe --target HOST:PORT --receive [HOST:]PORT --samples N --rate HZ
//                          [--size B] [--drain-ms MS] --out DIR
//
// The proxy forwards UDP datagrams (or one TCP stream at a time) from --listen to --forward,
// each item released when the model's availability queue says so; replies travel back
// undelayed. The probe sends timestamped datagrams at a fixed rate and records when each
// comes back, as a raw sample file, so `jitterlab inject validate` can store it as a run.
// --record makes the proxy write every forwarded item's arrival and release time the same way.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "../src/harness_json.hpp"
#include "../src/tool_util.hpp"
#include "jitterlab/clock.hpp"
#include "jitterlab/injector.hpp"
#include "jitterlab/runfile.hpp"
#include "jitterlab/unique_fd.hpp"

namespace jl = jitterlab;
namespace tool = jitterlab::tool;

namespace {

constexpr const char* kTool = "jitterlab-inject";
constexpr std::size_t kMaxDatagram = 65536;
constexpr int kBatch = 32;

// ---------------------------------------------------------------- addresses and sockets

struct Address {
    sockaddr_storage storage{};
    socklen_t length = 0;
    std::string text;
    const sockaddr* sa() const { return reinterpret_cast<const sockaddr*>(&storage); }
};

/// "HOST:PORT", "[V6]:PORT" or, where `default_host` is given, a bare "PORT".
Address parse_address(const std::string& flag, const std::string& text, const char* default_host, bool tcp) {
    std::string host = default_host ? default_host : "";
    std::string port = text;
    const auto colon = text.rfind(':');
    if (colon != std::string::npos) {
        host = text.substr(0, colon);
        port = text.substr(colon + 1);
        if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
    }
    if (host.empty() || port.empty() || port.find_first_not_of("0123456789") != std::string::npos || port.size() > 5 ||
        std::stoi(port) > 65535)
        tool::usage_error(kTool, flag + " expects HOST:PORT" + (default_host ? " or PORT" : "") + ", got '" + text + "'");
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = tcp ? SOCK_STREAM : SOCK_DGRAM;
    hints.ai_flags = AI_NUMERICSERV;
    addrinfo* found = nullptr;
    if (const int rc = ::getaddrinfo(host.c_str(), port.c_str(), &hints, &found); rc != 0 || found == nullptr)
        tool::usage_error(kTool, flag + " '" + text + "': " + ::gai_strerror(rc));
    Address a;
    std::memcpy(&a.storage, found->ai_addr, found->ai_addrlen);
    a.length = found->ai_addrlen;
    a.text = text;
    ::freeaddrinfo(found);
    return a;
}


std::string errno_text() { return std::strerror(errno); }

jl::UniqueFd bound_socket(const Address& a, int type, const std::string& flag) {
    jl::UniqueFd fd(::socket(a.storage.ss_family, type | SOCK_CLOEXEC, 0));
    if (fd.get() < 0) tool::usage_error(kTool, "socket: " + errno_text());
    const int one = 1;
    ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd.get(), a.sa(), a.length) != 0) tool::usage_error(kTool, "cannot bind " + flag + " " + a.text + ": " + errno_text());
    return fd;
}

void set_nonblocking(int fd) { ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK); }

/// Writes all of `data` to a blocking stream socket; false when the peer is gone.
bool write_all(int fd, const char* data, std::size_t size) {
    while (size > 0) {
        const ssize_t n = ::send(fd, data, size, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        data += n;
        size -= static_cast<std::size_t>(n);
    }
    return true;
}

// ---------------------------------------------------------------- statistics

/// Log-linear histogram of non-negative nanoseconds: 64 sub-buckets per octave (< 1.6 %).
class LogHistogram {
public:
    void record(std::int64_t value) {
        const auto v = static_cast<std::uint64_t>(std::max<std::int64_t>(value, 0));
        ++counts_[index(v)];
        ++count_;
        sum_ += static_cast<double>(v);
        max_ = std::max(max_, v);
    }
    std::uint64_t count() const { return count_; }
    double mean() const { return count_ ? sum_ / static_cast<double>(count_) : 0.0; }
    double max() const { return static_cast<double>(max_); }
    /// The midpoint of the bucket holding quantile q (q in [0, 1]).
    double quantile(double q) const {
        if (count_ == 0) return 0.0;
        const auto rank = static_cast<std::uint64_t>(std::ceil(q * static_cast<double>(count_)));
        std::uint64_t seen = 0;
        for (std::size_t i = 0; i < counts_.size(); ++i) {
            seen += counts_[i];
            if (seen >= std::max<std::uint64_t>(rank, 1)) return std::min(midpoint(i), max());
        }
        return max();
    }

private:
    static std::size_t index(std::uint64_t v) {
        if (v < 128) return static_cast<std::size_t>(v);
        const int msb = 63 - __builtin_clzll(v);
        const int shift = msb - 6;
        return 128 + static_cast<std::size_t>(msb - 7) * 64 + static_cast<std::size_t>((v >> shift) - 64);
    }
    static double midpoint(std::size_t i) {
        if (i < 128) return static_cast<double>(i);
        const std::size_t octave = (i - 128) / 64;
        const int shift = static_cast<int>(octave) + 1;
        const double low = static_cast<double>((64 + (i - 128) % 64) << shift);
        return low + static_cast<double>(1ULL << shift) / 2;
    }
    std::array<std::uint64_t, 128 + 57 * 64> counts_{};
    std::uint64_t count_ = 0;
    double sum_ = 0;
    std::uint64_t max_ = 0;
};

std::string format_ns(double ns) {
    char buf[32];
    if (ns < 1e3) std::snprintf(buf, sizeof buf, "%.0f ns", ns);
    else if (ns < 1e6) std::snprintf(buf, sizeof buf, "%.1f us", ns / 1e3);
    else if (ns < 1e9) std::snprintf(buf, sizeof buf, "%.2f ms", ns / 1e6);
    else std::snprintf(buf, sizeof buf, "%.2f s", ns / 1e9);
    return buf;
}

jl::Json histogram_json(const LogHistogram& h) {
    return {{"count", h.count()}, {"mean", h.mean()}, {"p50", h.quantile(0.5)}, {"p90", h.quantile(0.9)},
            {"p99", h.quantile(0.99)}, {"p999", h.quantile(0.999)}, {"max", h.max()}};
}

// ---------------------------------------------------------------- proxy

struct ProxyOptions {
    std::string listen, forward, model_path, stats_json, record_path;
    std::int64_t record_limit = 10'000'000;
    bool zero = false, tcp = false, reorder = false, busy_poll = false;
    std::uint64_t seed = 0;
    std::int64_t queue_limit = 65'536, queue_bytes = 64LL << 20;
    double stats_interval_s = 10, duration_s = 0;
    std::int64_t spin_ns = 60'000;  // spin (not sleep) for this last stretch before an item is due
};

struct ProxyStats {
    std::uint64_t received = 0, forwarded = 0, dropped_full = 0, dropped_bytes = 0, discarded_at_exit = 0, replies = 0;
    std::uint64_t send_errors = 0, connections = 0;
    LogHistogram delay;  // realised: forward time - arrival
    LogHistogram late;   // forward time - scheduled availability
};

struct Item {
    std::vector<char> bytes;
};

class Proxy {
public:
    explicit Proxy(const ProxyOptions& o)
        : o_(o),
          queue_(o.zero ? jl::LatencyModel::zero() : load_model(o.model_path), o.seed, o.reorder,
                 static_cast<std::size_t>(o.queue_limit)) {}

    int run() {
        const Address listen = parse_address("--listen", o_.listen, "127.0.0.1", o_.tcp);
        const Address forward = parse_address("--forward", o_.forward, nullptr, o_.tcp);
        jl::tighten_timer_slack();
        if (!o_.record_path.empty()) records_.reserve(static_cast<std::size_t>(std::min<std::int64_t>(o_.record_limit, 1'000'000)));
        started_ = jl::now_ns();
        next_stats_ = o_.stats_interval_s > 0 ? started_ + static_cast<std::int64_t>(o_.stats_interval_s * 1e9) : jl::kNever;
        deadline_ = o_.duration_s > 0 ? started_ + static_cast<std::int64_t>(o_.duration_s * 1e9) : jl::kNever;
        if (o_.tcp) run_tcp(listen, forward);
        else run_udp(listen, forward);
        stats_.discarded_at_exit += queue_.size();
        report(true);
        if (!o_.record_path.empty()) {  // every forwarded item: arrival and release, as a raw sample file
            jl::RawSampleWriter writer(o_.record_path);
            writer.write(records_);
            writer.finish(false);
        }
        return 0;
    }

private:
    static jl::LatencyModel load_model(const std::string& path) {
        try {
            return jl::LatencyModel::load(path);
        } catch (const jl::ModelError& e) {
            tool::usage_error(kTool, e.what());
        }
    }

    bool stopping() const { return tool::g_signal != 0 || jl::now_ns() >= deadline_; }

    void announce(int fd) {
        sockaddr_storage local{};
        socklen_t len = sizeof local;
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len);
        char host[NI_MAXHOST], port[NI_MAXSERV];
        ::getnameinfo(reinterpret_cast<sockaddr*>(&local), len, host, sizeof host, port, sizeof port,
                      NI_NUMERICHOST | NI_NUMERICSERV);
        std::printf("listening %s %s:%s forward %s\n", o_.tcp ? "tcp" : "udp", host, port, o_.forward.c_str());
        std::fflush(stdout);
    }

    /// Queues an item that arrived at `t`, within both the item and the byte limit.
    bool admit(std::int64_t t, const char* data, std::size_t size) {
        ++stats_.received;
        if (queued_bytes_ + static_cast<std::int64_t>(size) > o_.queue_bytes) {
            ++stats_.dropped_bytes;
            return false;
        }
        if (queue_.push(t, Item{std::vector<char>(data, data + size)}) < 0) {
            ++stats_.dropped_full;
            return false;
        }
        queued_bytes_ += static_cast<std::int64_t>(size);
        return true;
    }

    /// Sends everything due now through `send`; returns false when the peer is gone.
    template <typename SendFn>
    bool release_due(SendFn&& send) {
        jl::DelayQueue<Item>::Entry e{};
        while (queue_.pop_due(jl::now_ns(), e)) {
            queued_bytes_ -= static_cast<std::int64_t>(e.item.bytes.size());
            const std::int64_t t = jl::now_ns();  // released: the send's own cost is the network's, not ours
            const bool ok = send(e.item.bytes);
            if (!ok) {
                ++stats_.send_errors;
                if (o_.tcp) return false;
                continue;
            }
            ++stats_.forwarded;
            if (!o_.record_path.empty() && records_.size() < static_cast<std::size_t>(o_.record_limit))
                records_.push_back({0, 0, static_cast<std::int64_t>(stats_.forwarded - 1), e.arrival, t});
            stats_.delay.record(t - e.arrival);
            stats_.late.record(t - e.available_at);
        }
        return true;
    }

    /// Blocks in ppoll until input, the next stats line, the end of the run, or the next
    /// due item less the spin window (then `spin_to_next_due` takes over).
    int wait_for_input(pollfd* fds, nfds_t n) const {
        const std::int64_t due = queue_.next_due();
        std::int64_t wake = std::min(next_stats_, deadline_);
        if (due != jl::kNever) wake = std::min(wake, due - o_.spin_ns);
        if (o_.busy_poll) wake = 0;  // never sleep: input is seen within a microsecond, at a core's cost
        const std::int64_t wait = std::clamp<std::int64_t>(wake - jl::now_ns(), 0, 200'000'000);  // 200 ms: signals
        timespec ts{static_cast<time_t>(wait / 1'000'000'000), static_cast<long>(wait % 1'000'000'000)};
        return ::ppoll(fds, n, &ts, nullptr);
    }

    /// Inside the spin window, spins on the clock until the next item is due: a sleep's
    /// wake-up is tens of microseconds late here, a spin a few tens of nanoseconds. Input
    /// meanwhile waits in the socket with its kernel receive time, so nothing is mis-stamped.
    void spin_to_next_due() const {
        const std::int64_t due = queue_.next_due();
        if (due == jl::kNever || due - jl::now_ns() > o_.spin_ns) return;
        while (jl::now_ns() < due) jl::cpu_relax();
    }

    void maybe_report() {
        if (jl::now_ns() >= next_stats_) {
            report(false);
            next_stats_ += static_cast<std::int64_t>(o_.stats_interval_s * 1e9);
        }
    }

    void run_udp(const Address& listen, const Address& forward) {
        jl::UniqueFd in = bound_socket(listen, SOCK_DGRAM, "--listen");
        jl::UniqueFd up(::socket(forward.storage.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0));
        if (up.get() < 0 || ::connect(up.get(), forward.sa(), forward.length) != 0)
            tool::usage_error(kTool, "cannot use --forward " + forward.text + ": " + errno_text());
        const int big = 8 << 20, one = 1;
        ::setsockopt(in.get(), SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
        ::setsockopt(in.get(), SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof one);  // kernel receive times
        set_nonblocking(in.get());
        set_nonblocking(up.get());
        announce(in.get());

        std::vector<char> buffers(kBatch * kMaxDatagram);
        std::array<iovec, kBatch> iov{};
        std::array<mmsghdr, kBatch> msgs{};
        std::array<sockaddr_storage, kBatch> sources{};
        constexpr std::size_t kControl = CMSG_SPACE(sizeof(timespec));
        std::vector<char> control(kBatch * kControl);
        sockaddr_storage client{};
        socklen_t client_len = 0;
        auto send_up = [&](const std::vector<char>& bytes) {
            return ::send(up.get(), bytes.data(), bytes.size(), 0) >= 0;
        };
        // Reads up to `batches` batches of waiting datagrams (bounded, so releases are not
        // starved under a flood); each arrival is the kernel's receive time.
        auto read_input = [&](int batches) {
            int n = kBatch;
            for (; n == kBatch && batches > 0; --batches) {
                for (int i = 0; i < kBatch; ++i) {
                    iov[i] = {buffers.data() + static_cast<std::size_t>(i) * kMaxDatagram, kMaxDatagram};
                    msgs[i].msg_hdr = {};
                    msgs[i].msg_hdr.msg_iov = &iov[i];
                    msgs[i].msg_hdr.msg_iovlen = 1;
                    msgs[i].msg_hdr.msg_name = &sources[i];
                    msgs[i].msg_hdr.msg_namelen = sizeof(sockaddr_storage);
                    msgs[i].msg_hdr.msg_control = control.data() + static_cast<std::size_t>(i) * kControl;
                    msgs[i].msg_hdr.msg_controllen = kControl;
                }
                n = ::recvmmsg(in.get(), msgs.data(), kBatch, MSG_DONTWAIT, nullptr);
                const std::int64_t now = jl::now_ns();
                const std::int64_t realtime_minus_mono = jl::realtime_ns() - now;
                for (int i = 0; i < n; ++i) {
                    // Arrival = the kernel's receive time (CLOCK_REALTIME, mapped onto CLOCK_MONOTONIC).
                    std::int64_t t = now;
                    for (cmsghdr* c = CMSG_FIRSTHDR(&msgs[i].msg_hdr); c != nullptr; c = CMSG_NXTHDR(&msgs[i].msg_hdr, c)) {
                        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS) {
                        timespec ts{};
                        std::memcpy(&ts, CMSG_DATA(c), sizeof ts);
                        t = std::min(now, static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec - realtime_minus_mono);
                        }
                    }
                    admit(t, static_cast<const char*>(iov[i].iov_base), msgs[i].msg_len);
                    client = sources[i];
                    client_len = msgs[i].msg_hdr.msg_namelen;
                }
            }
        };
        while (!stopping()) {
            spin_to_next_due();
            release_due(send_up);
            maybe_report();
            pollfd fds[2] = {{in.get(), POLLIN, 0}, {up.get(), POLLIN, 0}};
            if (wait_for_input(fds, 2) < 0 && errno != EINTR) break;
            read_input(8);
            // Replies go back to the latest sender at once (only the forward path is delayed).
            char reply[kMaxDatagram];
            for (ssize_t r; (r = ::recv(up.get(), reply, sizeof reply, MSG_DONTWAIT)) >= 0;) {
                if (client_len > 0) ::sendto(in.get(), reply, static_cast<std::size_t>(r), 0,
                                             reinterpret_cast<sockaddr*>(&client), client_len);
                ++stats_.replies;
            }
        }
        read_input(std::numeric_limits<int>::max());  // account for what arrived before the stop
    }

    void run_tcp(const Address& listen, const Address& forward) {
        jl::UniqueFd server = bound_socket(listen, SOCK_STREAM, "--listen");
        if (::listen(server.get(), 16) != 0) tool::usage_error(kTool, "cannot listen on " + listen.text + ": " + errno_text());
        announce(server.get());
        while (!stopping()) {
            maybe_report();
            pollfd accept_fd{server.get(), POLLIN, 0};
            if (::poll(&accept_fd, 1, 100) <= 0) continue;
            jl::UniqueFd client(::accept4(server.get(), nullptr, nullptr, SOCK_CLOEXEC));
            if (client.get() < 0) continue;
            jl::UniqueFd up(::socket(forward.storage.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0));
            if (::connect(up.get(), forward.sa(), forward.length) != 0) {
                std::fprintf(stderr, "%s: warning[%s]: cannot connect to --forward %s: %s\n", kTool,
                             std::string(jl::warning_code_name(jl::WarningCode::forward_unreachable)).c_str(),
                             forward.text.c_str(), errno_text().c_str());
                continue;
            }
            ++stats_.connections;
            const int one = 1;
            ::setsockopt(up.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
            ::setsockopt(client.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
            relay_tcp(client.get(), up.get());
        }
    }

    /// One connection: the client's bytes go up when due, the server's come back at once.
    /// A full queue stops reading from the client, so TCP's flow control pushes back.
    void relay_tcp(int client, int up) {
        std::vector<char> buffer(kMaxDatagram);
        bool client_open = true, up_open = true, up_shut = false;
        auto send_up = [&](const std::vector<char>& bytes) { return write_all(up, bytes.data(), bytes.size()); };
        while (up_open && !stopping()) {
            spin_to_next_due();
            if (!release_due(send_up)) break;
            maybe_report();
            if (!client_open && queue_.size() == 0 && !up_shut) {
                ::shutdown(up, SHUT_WR);  // everything delivered: pass the client's end on
                up_shut = true;
            }
            const bool room = queue_.size() < static_cast<std::size_t>(o_.queue_limit) && queued_bytes_ < o_.queue_bytes;
            pollfd fds[2] = {{client_open && room ? client : -1, POLLIN, 0}, {up, POLLIN, 0}};
            if (wait_for_input(fds, 2) < 0 && errno != EINTR) break;
            if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) {
                const ssize_t n = ::recv(client, buffer.data(), buffer.size(), MSG_DONTWAIT);
                if (n > 0) admit(jl::now_ns(), buffer.data(), static_cast<std::size_t>(n));
                else if (n == 0 || (errno != EAGAIN && errno != EINTR)) client_open = false;
            }
            if (fds[1].revents & (POLLIN | POLLHUP | POLLERR)) {
                const ssize_t n = ::recv(up, buffer.data(), buffer.size(), MSG_DONTWAIT);
                if (n > 0) {
                    ++stats_.replies;
                    if (!write_all(client, buffer.data(), static_cast<std::size_t>(n))) client_open = false;
                } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
                    up_open = false;
                }
            }
        }
        stats_.discarded_at_exit += queue_.size();
        jl::DelayQueue<Item>::Entry e{};
        while (queue_.pop_due(jl::kNever - 1, e)) {
        }
        queued_bytes_ = 0;
    }

    void report(bool final) {
        const auto& s = stats_;
        std::fprintf(stderr,
                     "%s: %s%llu in, %llu forwarded, %llu dropped (queue full), %llu queued; injected delay p50 %s p99 %s max "
                     "%s; late p50 %s p99 %s\n",
                     kTool, final ? "done: " : "", static_cast<unsigned long long>(s.received),
                     static_cast<unsigned long long>(s.forwarded),
                     static_cast<unsigned long long>(s.dropped_full + s.dropped_bytes),
                     static_cast<unsigned long long>(queue_.size()), format_ns(s.delay.quantile(0.5)).c_str(),
                     format_ns(s.delay.quantile(0.99)).c_str(), format_ns(s.delay.max()).c_str(),
                     format_ns(s.late.quantile(0.5)).c_str(), format_ns(s.late.quantile(0.99)).c_str());
        if (!final || o_.stats_json.empty()) return;
        const jl::Json j = {{"tool", kTool},
                            {"mode", o_.tcp ? "tcp" : "udp"},
                            {"model", o_.zero ? std::string("zero") : o_.model_path},
                            {"seed", o_.seed},
                            {"reorder", o_.reorder},
                            {"queue_limit", o_.queue_limit},
                            {"queue_bytes", o_.queue_bytes},
                            {"elapsed_s", static_cast<double>(jl::now_ns() - started_) / 1e9},
                            {"received", s.received},
                            {"forwarded", s.forwarded},
                            {"dropped_queue_full", s.dropped_full},
                            {"dropped_queue_bytes", s.dropped_bytes},
                            {"discarded_at_exit", s.discarded_at_exit},
                            {"send_errors", s.send_errors},
                            {"replies", s.replies},
                            {"connections", s.connections},
                            {"delay_ns", histogram_json(s.delay)},
                            {"late_ns", histogram_json(s.late)}};
        tool::write_file_atomically(o_.stats_json, jl::json_text(j));
    }

    ProxyOptions o_;
    jl::DelayQueue<Item> queue_;
    ProxyStats stats_;
    std::int64_t queued_bytes_ = 0;
    std::vector<jl::SampleRecord> records_;
    std::int64_t started_ = 0, next_stats_ = jl::kNever, deadline_ = jl::kNever;
};

int run_proxy(int argc, char** argv) {
    ProxyOptions o;
    auto spin_us = [&o](tool::ArgReader& a) { o.spin_ns = a.integer(0, 10'000) * 1'000; };
    tool::read_options(
        kTool, argc, argv, "proxy --listen [HOST:]PORT --forward HOST:PORT (--model FILE | --zero) [options]",
        "Delays each datagram (or the TCP stream) by the latency model before forwarding it.",
        {
            tool::text_option("--listen", "[HOST:]PORT", "where the proxy receives", o.listen),
            tool::text_option("--forward", "HOST:PORT", "where it sends what it delayed", o.forward),
            tool::text_option("--model", "FILE", "the latency model (docs/model-format.md)", o.model_path),
            tool::switch_option("--zero", "no delay: the proxy's own cost", o.zero),
            tool::switch_option("--tcp", "one TCP stream at a time instead of UDP datagrams", o.tcp),
            tool::int_option("--seed", "S", "seed of the injector's draws (default 0)", o.seed, 0, INT64_MAX),
            tool::switch_option("--reorder", "independent delays instead of the in-order queue (UDP only)", o.reorder),
            tool::int_option("--queue-limit", "N", "most items held (default 65536); more are dropped and counted",
                             o.queue_limit, 1, 1LL << 30),
            tool::int_option("--queue-bytes", "B", "most bytes held", o.queue_bytes, kMaxDatagram, 1LL << 40),
            tool::switch_option("--busy-poll", "never sleep: microsecond-accurate, costs a core", o.busy_poll),
            {"--spin-us", "US", "spin (not sleep) for this last stretch before an item is due (default 60)", spin_us},
            tool::int_option("--stats-interval", "S", "print statistics every S seconds (0: only at exit)",
                             o.stats_interval_s, 0, 86'400),
            tool::text_option("--stats-json", "FILE", "write the final statistics as JSON", o.stats_json),
            tool::text_option("--record", "FILE", "record each item's arrival and release (raw sample file)",
                              o.record_path),
            tool::int_option("--record-limit", "N", "most items recorded", o.record_limit, 1, 1LL << 32),
            tool::int_option("--duration", "S", "stop after S seconds (0: until SIGINT/SIGTERM)", o.duration_s, 0,
                             86'400 * 365),
        });
    if (o.listen.empty() || o.forward.empty()) tool::usage_error(kTool, "proxy needs --listen and --forward");
    if (o.zero == !o.model_path.empty()) tool::usage_error(kTool, "proxy needs exactly one of --model FILE or --zero");
    if (o.tcp && o.reorder) tool::usage_error(kTool, "--reorder cannot apply to a TCP byte stream");
    tool::install_signal_handlers();
    return Proxy(o).run();
}

// ---------------------------------------------------------------- probe

struct ProbeOptions {
    std::string target, receive, out_dir = ".";
    std::int64_t count = 10'000, rate_hz = 1'000, size = 64, drain_ms = 2'000;
};

struct ProbePayload {
    std::uint64_t magic;
    std::int64_t seq;
    std::int64_t t_send_ns;
};
constexpr std::uint64_t kProbeMagic = 0x4a4c50524f424531ULL;  // "JLPROBE1"

int run_probe(int argc, char** argv) {
    ProbeOptions o;
    tool::Option samples =
        tool::int_option("--samples", "N", "datagrams (default 10000; old spelling --count)", o.count, 1, 100'000'000);
    samples.old = "--count";
    tool::read_options(
        kTool, argc, argv, "probe --target HOST:PORT --receive [HOST:]PORT [options]",
        "Sends timestamped datagrams to --target and records when each comes back on --receive.",
        {
            tool::text_option("--target", "HOST:PORT", "where the datagrams go", o.target),
            tool::text_option("--receive", "[HOST:]PORT", "where they come back", o.receive),
            samples,
            tool::int_option("--rate", "HZ", "datagrams per second (default 1000; 0: as fast as possible)", o.rate_hz, 0,
                             10'000'000),
            tool::int_option("--size", "BYTES", "datagram size (default 64)", o.size,
                             static_cast<std::int64_t>(sizeof(ProbePayload)), 65'000),
            tool::int_option("--drain-ms", "MS", "wait this long for the last datagrams (default 2000)", o.drain_ms, 0,
                             3'600'000),
            tool::text_option("--out", "DIR", "folder for samples.jlraw and harness.json", o.out_dir),
        });
    if (o.target.empty() || o.receive.empty()) tool::usage_error(kTool, "probe needs --target and --receive");
    tool::require_writable_dir(kTool, o.out_dir);
    const Address target = parse_address("--target", o.target, nullptr, false);
    const Address receive = parse_address("--receive", o.receive, "127.0.0.1", false);
    tool::install_signal_handlers();
    jl::tighten_timer_slack();

    jl::UniqueFd rx = bound_socket(receive, SOCK_DGRAM, "--receive");
    const int big = 8 << 20;
    ::setsockopt(rx.get(), SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
    timeval tv{0, 50'000};
    ::setsockopt(rx.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    jl::UniqueFd tx(::socket(target.storage.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0));
    if (tx.get() < 0 || ::connect(tx.get(), target.sa(), target.length) != 0)
        tool::usage_error(kTool, "cannot use --target " + target.text + ": " + errno_text());

    const auto n = static_cast<std::size_t>(o.count);
    std::vector<jl::SampleRecord> records(n, jl::SampleRecord{0, 0, -1, 0, 0});
    std::atomic<std::int64_t> sent{0}, received{0}, last_send{0};
    std::atomic<bool> sender_done{false};
    std::uint64_t duplicates = 0, foreign = 0, send_errors = 0;
    const std::int64_t started_realtime = jl::realtime_ns();
    const std::int64_t t_start = jl::now_ns();

    std::jthread receiver([&] {
        std::vector<char> buffer(kMaxDatagram);
        while (received.load() < o.count && tool::g_signal == 0) {
            const ssize_t r = ::recv(rx.get(), buffer.data(), buffer.size(), 0);
            const std::int64_t t = jl::now_ns();
            if (r < 0) {
                if (sender_done.load() && t - last_send.load() > o.drain_ms * 1'000'000) break;
                continue;
            }
            ProbePayload p{};
            if (static_cast<std::size_t>(r) < sizeof p) { ++foreign; continue; }
            std::memcpy(&p, buffer.data(), sizeof p);
            if (p.magic != kProbeMagic || p.seq < 0 || p.seq >= o.count) { ++foreign; continue; }
            auto& rec = records[static_cast<std::size_t>(p.seq)];
            if (rec.seq >= 0) { ++duplicates; continue; }
            rec = {0, 0, p.seq, p.t_send_ns, t};
            received.fetch_add(1);
        }
    });
    std::jthread sender([&] {
        std::vector<char> payload(static_cast<std::size_t>(o.size), 0);
        const std::int64_t period = o.rate_hz > 0 ? 1'000'000'000 / o.rate_hz : 0;
        const std::int64_t t0 = jl::now_ns() + 1'000'000;
        for (std::int64_t i = 0; i < o.count && tool::g_signal == 0; ++i) {
            if (period > 0) jl::wait_until(t0 + i * period);
            ProbePayload p{kProbeMagic, i, jl::now_ns()};
            std::memcpy(payload.data(), &p, sizeof p);
            if (::send(tx.get(), payload.data(), payload.size(), 0) < 0) ++send_errors;
            last_send.store(p.t_send_ns);
            sent.store(i + 1);
        }
        sender_done.store(true);
    });
    while (!sender_done.load() || (received.load() < o.count && receiver.joinable() &&
                                   jl::now_ns() - last_send.load() <= o.drain_ms * 1'000'000 + 200'000'000)) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        std::printf("progress %lld %lld\n", static_cast<long long>(received.load()), static_cast<long long>(o.count));
        std::fflush(stdout);
        if (tool::g_signal != 0) break;
    }
    sender.join();
    receiver.join();
    const bool interrupted = tool::g_signal != 0;

    std::vector<jl::SampleRecord> got;
    got.reserve(static_cast<std::size_t>(received.load()));
    for (const auto& r : records)
        if (r.seq >= 0) got.push_back(r);
    jl::RawSampleWriter writer(o.out_dir + "/samples.jlraw");
    writer.write(got);
    writer.finish(interrupted);

    const std::int64_t lost = sent.load() - static_cast<std::int64_t>(got.size());
    jl::Json j;
    j["harness"] = "native";
    j["tool"] = "inject-probe";
    j["harness_version"] = JITTERLAB_VERSION;
    j["target"] = o.target;
    j["receive"] = o.receive;
    j["rate_hz"] = o.rate_hz;
    j["size"] = o.size;
    j["sent"] = sent.load();
    j["received"] = static_cast<std::int64_t>(got.size());
    j["lost"] = lost;
    j["duplicates"] = duplicates;
    j["foreign"] = foreign;
    j["send_errors"] = send_errors;
    std::vector<jl::Warning> warnings;
    if (lost > 0)
        warnings.push_back({jl::WarningCode::datagrams_lost,
                            std::to_string(lost) + " of " + std::to_string(sent.load()) + " datagrams never came back"});
    j["warnings"] = warnings;
    jl::set_status(j, interrupted, interrupted ? std::string("interrupted by ") + tool::signal_name() : std::string(),
                   started_realtime, t_start, jl::now_ns());
    tool::write_file_atomically(o.out_dir + "/harness.json", jl::json_text(j));
    return interrupted ? 130 : 0;
}

}  // namespace

int main(int argc, char** argv) {
    tool::ArgReader args(kTool, argc, argv, "usage: jitterlab-inject proxy|probe [options]   (jitterlab-inject proxy --help, probe --help)\n");
    const std::string mode = args.next() ? args.flag() : "";
    if (mode == "proxy") return run_proxy(argc - 1, argv + 1);
    if (mode == "probe") return run_probe(argc - 1, argv + 1);
    tool::usage_error(kTool, "usage: jitterlab-inject proxy|probe [options] (got '" + mode + "')");
}
