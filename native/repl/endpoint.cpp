#include "endpoint.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <ctime>
#include <random>
#include <stdexcept>

#include "jitterlab/clock.hpp"

namespace jitterlab::repl {

namespace {

constexpr int kBatch = 64;              // datagrams per recvmmsg
constexpr std::size_t kSlot = 2048;     // receive slot: larger than any datagram of ours
constexpr int kSendChunk = 1024;        // UIO_MAXIOV: the most one sendmmsg takes
constexpr int kServerBuffer = 8 << 20;  // bytes asked for the server socket's buffers
constexpr int kClientBuffer = 1 << 20;

std::string errno_text(int e) { return std::strerror(e); }

sockaddr_in make_address(const std::string& address, int port) {
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(static_cast<std::uint16_t>(port));
    if (::inet_pton(AF_INET, address.c_str(), &sa.sin_addr) != 1)
        throw UsageProblem("not an IPv4 address: '" + address + "'");
    return sa;
}

void set_buffer(int fd, int force_option, int option, int bytes) {
    // As root SO_*BUFFORCE passes net.core.*mem_max; otherwise the kernel caps the request.
    if (::setsockopt(fd, SOL_SOCKET, force_option, &bytes, sizeof bytes) != 0)
        ::setsockopt(fd, SOL_SOCKET, option, &bytes, sizeof bytes);
}

void prepare_receive(std::vector<std::byte>& buffers, std::vector<mmsghdr>& msgs, std::vector<iovec>& iov,
                     sockaddr_in* names) {
    buffers.assign(static_cast<std::size_t>(kBatch) * kSlot, std::byte{0});
    msgs.assign(kBatch, mmsghdr{});
    iov.assign(kBatch, iovec{});
    for (int k = 0; k < kBatch; ++k) {
        iov[k] = {buffers.data() + static_cast<std::size_t>(k) * kSlot, kSlot};
        msgs[k].msg_hdr.msg_iov = &iov[k];
        msgs[k].msg_hdr.msg_iovlen = 1;
        if (names != nullptr) {
            msgs[k].msg_hdr.msg_name = &names[k];
            msgs[k].msg_hdr.msg_namelen = sizeof(sockaddr_in);
        }
    }
}

bool would_block(int e) { return e == EAGAIN || e == EWOULDBLOCK; }

}  // namespace

std::int64_t thread_cpu_ns() noexcept {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

UniqueFd bind_udp(const std::string& address, int port, int buffer_bytes) {
    UniqueFd fd(::socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (fd.get() < 0) {
        const int e = errno;
        if (e == EMFILE || e == ENFILE)
            throw UsageProblem("out of file descriptors (" + errno_text(e) + "); raise the limit with ulimit -n");
        throw std::runtime_error("socket: " + errno_text(e));
    }
    set_buffer(fd.get(), SO_RCVBUFFORCE, SO_RCVBUF, buffer_bytes);
    set_buffer(fd.get(), SO_SNDBUFFORCE, SO_SNDBUF, buffer_bytes);
    const sockaddr_in sa = make_address(address, port);
    if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&sa), sizeof sa) != 0) {
        const int e = errno;
        if (e == EADDRINUSE) throw UsageProblem("port " + std::to_string(port) + " on " + address + " is in use");
        throw std::runtime_error("bind " + address + ":" + std::to_string(port) + ": " + errno_text(e));
    }
    return fd;
}

int bound_port(int fd) {
    sockaddr_in sa{};
    socklen_t len = sizeof sa;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len);
    return ntohs(sa.sin_port);
}

int socket_buffer(int fd, int option) {
    int value = 0;
    socklen_t len = sizeof value;
    ::getsockopt(fd, SOL_SOCKET, option, &value, &len);
    return value;
}

// --- server ---------------------------------------------------------------------------

Server::Server(int clients, double tick_hz, int payload, const std::string& address, int port)
    : clients_(clients),
      period_ns_(static_cast<std::int64_t>(std::llround(1e9 / tick_hz))),
      payload_(static_cast<std::size_t>(payload)),
      fd_(bind_udp(address, port, kServerBuffer)),
      poses_(static_cast<std::size_t>(clients) * payload_),
      latest_seq_(clients, 0),
      known_(clients, 0),
      changed_(clients, 0),
      addresses_(clients) {
    changed_list_.reserve(clients);
    in_names_.assign(kBatch, sockaddr_in{});
    prepare_receive(in_buffers_, in_msgs_, in_iov_, in_names_.data());
    // The most any tick sends: every client gets every other client's pose.
    const std::size_t per_client = datagrams_for(static_cast<std::size_t>(clients - 1), payload_);
    const std::size_t total = per_client * static_cast<std::size_t>(clients);
    out_buffers_.assign(total * kMaxDatagram, std::byte{0});
    out_msgs_.assign(total, mmsghdr{});
    out_iov_.assign(total, iovec{});
    stats_.rcvbuf_bytes = socket_buffer(fd_.get(), SO_RCVBUF);
    stats_.sndbuf_bytes = socket_buffer(fd_.get(), SO_SNDBUF);
}

void Server::run(const Schedule& schedule, const std::atomic<bool>& stop) {
    const std::size_t ticks_expected =
        static_cast<std::size_t>((schedule.t_measure_end - schedule.t_measure_start) / period_ns_ + 2);
    stats_.tick_start_ns.reserve(ticks_expected);
    stats_.tick_busy_ns.reserve(ticks_expected);
    stats_.ticks_on_cpu.reserve(static_cast<std::size_t>(std::max(1L, ::sysconf(_SC_NPROCESSORS_CONF))));
    std::int64_t next = now_ns();
    std::int64_t cpu_at_start = -1, t_window_start = 0;
    ThreadTimes times_at_start;
    std::uint32_t tick = 0;
    while (!stop.load(std::memory_order_relaxed)) {
        if (next > now_ns()) {
            const timespec ts{static_cast<time_t>(next / 1'000'000'000), static_cast<long>(next % 1'000'000'000)};
            ::clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr);
        }
        const std::int64_t t_tick = now_ns();
        if (t_tick >= schedule.t_stop) break;
        const bool counted = schedule.in_window(t_tick);
        if (counted && cpu_at_start < 0) {
            cpu_at_start = thread_cpu_ns();
            times_at_start = thread_times();
            t_window_start = t_tick;
        }
        drain(t_tick, schedule);
        replicate(tick++, t_tick, counted);
        const std::int64_t t_done = now_ns();
        if (counted) {
            stats_.tick_start_ns.push_back(t_tick);
            stats_.tick_busy_ns.push_back(t_done - t_tick);
            stats_.cpu_ns = thread_cpu_ns() - cpu_at_start;
            stats_.times = thread_times() - times_at_start;
            stats_.window_ns = t_done - t_window_start;
            const int cpu = ::sched_getcpu();
            if (cpu >= 0) {
                if (static_cast<std::size_t>(cpu) >= stats_.ticks_on_cpu.size())
                    stats_.ticks_on_cpu.resize(static_cast<std::size_t>(cpu) + 1, 0);
                ++stats_.ticks_on_cpu[static_cast<std::size_t>(cpu)];
            }
        }
        next += period_ns_;
        if (next < t_done) {  // a game loop does not burst to catch up: the missed slots are lost
            if (counted) ++stats_.late_ticks;
            next = t_done;
        }
    }
}

void Server::drain(std::int64_t now, const Schedule& schedule) {
    const bool counted = schedule.in_window(now);
    for (;;) {
        for (auto& m : in_msgs_) m.msg_hdr.msg_namelen = sizeof(sockaddr_in);
        const int n = ::recvmmsg(fd_.get(), in_msgs_.data(), kBatch, MSG_DONTWAIT, nullptr);
        if (n <= 0) return;
        for (int k = 0; k < n; ++k) {
            const std::size_t len = in_msgs_[k].msg_len;
            const std::span<const std::byte> bytes(in_buffers_.data() + static_cast<std::size_t>(k) * kSlot, len);
            PoseHeader h;
            if (!read_pose_header(bytes, h) || h.client >= clients_) {
                if (counted) ++stats_.bad_datagrams;
                continue;
            }
            if (h.kind == Kind::ping) {
                std::byte* at = in_buffers_.data() + static_cast<std::size_t>(k) * kSlot;
                put(at + 4, static_cast<std::uint8_t>(Kind::pong));
                put(at + kPoseHeader, now);  // the tick that answers it: ping = tick wait + the way back
                ::sendto(fd_.get(), at, kPong, MSG_DONTWAIT, reinterpret_cast<const sockaddr*>(&in_names_[k]),
                         sizeof(sockaddr_in));
                if (counted) {
                    ++stats_.ping_datagrams_in;
                    stats_.ping_bytes_in += static_cast<std::int64_t>(len);
                }
                continue;
            }
            if (h.kind != Kind::pose || h.size != payload_) {
                if (counted) ++stats_.bad_datagrams;
                continue;
            }
            // A pose belongs to the window it was sent in (as the fleet counts it), not to
            // the tick that drained it: one sent just before the end is drained after it.
            if (schedule.in_window(h.t_send_ns)) {
                ++stats_.pose_datagrams_in;
                stats_.pose_bytes_in += static_cast<std::int64_t>(len);
            }
            if (counted) {
                ++stats_.pose_datagrams_received;
                stats_.pose_bytes_received += static_cast<std::int64_t>(len);
            }
            const auto c = h.client;
            addresses_[c] = in_names_[k];
            // Only a newer pose replaces the stored one (UDP may reorder).
            if (known_[c] && static_cast<std::int32_t>(h.seq - latest_seq_[c]) <= 0) continue;
            known_[c] = 1;
            latest_seq_[c] = h.seq;
            std::memcpy(poses_.data() + c * payload_, bytes.data(), payload_);
            if (!changed_[c]) {
                changed_[c] = 1;
                changed_list_.push_back(c);
            }
        }
        if (n < kBatch) return;
    }
}

void Server::replicate(std::uint32_t tick, std::int64_t t_tick, bool counted) {
    if (changed_list_.empty()) return;
    const std::size_t per = poses_per_datagram(payload_);
    std::size_t used = 0;  // datagrams filled this tick
    for (int c = 0; c < clients_; ++c) {
        if (!known_[c]) continue;  // no address yet
        std::size_t in_datagram = 0;
        std::byte* datagram = nullptr;
        for (const auto a : changed_list_) {
            if (a == c) continue;  // a client does not get its own pose back
            if (in_datagram == 0 || in_datagram == per) {
                datagram = out_buffers_.data() + used * kMaxDatagram;
                out_iov_[used] = {datagram, kServerHeader};
                out_msgs_[used].msg_hdr = msghdr{};
                out_msgs_[used].msg_hdr.msg_name = &addresses_[c];
                out_msgs_[used].msg_hdr.msg_namelen = sizeof(sockaddr_in);
                out_msgs_[used].msg_hdr.msg_iov = &out_iov_[used];
                out_msgs_[used].msg_hdr.msg_iovlen = 1;
                ++used;
                in_datagram = 0;
            }
            std::memcpy(datagram + kServerHeader + in_datagram * payload_, poses_.data() + a * payload_, payload_);
            ++in_datagram;
            out_iov_[used - 1].iov_len += payload_;
            write_server_header(datagram, {static_cast<std::uint16_t>(in_datagram), tick, t_tick});
        }
    }
    for (const auto a : changed_list_) changed_[a] = 0;
    const std::size_t poses = changed_list_.size();
    changed_list_.clear();
    std::size_t sent = 0;
    while (sent < used) {
        const auto chunk = static_cast<unsigned>(std::min<std::size_t>(used - sent, kSendChunk));
        const int n = ::sendmmsg(fd_.get(), out_msgs_.data() + sent, chunk, MSG_DONTWAIT);
        if (n < 0) {
            if (!would_block(errno) && errno != ENOBUFS && errno != ECONNREFUSED) break;
            if (counted) ++stats_.send_failures;  // this datagram is dropped; go on with the rest
            ++sent;
            continue;
        }
        for (int k = 0; k < n; ++k) {
            if (counted) {
                ++stats_.datagrams_out;
                stats_.bytes_out += out_msgs_[sent + static_cast<std::size_t>(k)].msg_len;
            }
        }
        sent += static_cast<std::size_t>(n);
    }
    if (counted) stats_.poses_out += static_cast<std::int64_t>(poses);
}

// --- client fleet ---------------------------------------------------------------------

ClientFleet::ClientFleet(int first, int count, int total, int observers, double rate_hz, int payload,
                         const std::string& server, int port, const Schedule& schedule, std::int64_t ping_interval_ns)
    : first_(first),
      clients_(count),
      total_(total),
      observers_(std::clamp(observers - first, 0, count)),
      rate_hz_(rate_hz),
      payload_(static_cast<std::size_t>(payload)),
      t_first_(schedule.t_first_send),
      ping_interval_ns_(ping_interval_ns),
      seq_(static_cast<std::size_t>(count), 0),
      pose_(kMaxPose, std::byte{0x5a}) {
    const int clients = count;
    const sockaddr_in target = make_address(server, port);
    sockets_.reserve(clients);
    for (int i = 0; i < clients; ++i) {
        UniqueFd fd = bind_udp("0.0.0.0", 0, kClientBuffer);
        if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&target), sizeof target) != 0)
            throw std::runtime_error("connect to " + server + ":" + std::to_string(port) + ": " + errno_text(errno));
        sockets_.push_back(std::move(fd));
    }
    stats_.rcvbuf_bytes = socket_buffer(sockets_[0].get(), SO_RCVBUF);
    prepare_receive(in_buffers_, in_msgs_, in_iov_, nullptr);
    const double window_s = static_cast<double>(schedule.t_measure_end - schedule.t_measure_start) / 1e9;
    stats_.lag_ns.reserve(static_cast<std::size_t>(clients * rate_hz * (window_s + 1)) + 1024);
    stats_.updates.reserve(static_cast<std::size_t>(observers_ * (total - 1) * rate_hz * (window_s + 1) * 1.05) + 1024);
    stats_.ping_send_ns.reserve(static_cast<std::size_t>(observers_ * (window_s + 1) * 1e9 / ping_interval_ns) + 16);
    stats_.ping_tick_ns.reserve(static_cast<std::size_t>(observers_ * (window_s + 1) * 1e9 / ping_interval_ns) + 16);
    stats_.ping_rtt_ns.reserve(static_cast<std::size_t>(observers_ * (window_s + 1) * 1e9 / ping_interval_ns) + 16);
}

std::int64_t ClientFleet::due(std::int64_t j) const noexcept {
    // Client k of N sends at t_first + (m + k/N) / rate: all clients on one period, evenly
    // spread, so event j of a fleet of n clients from `first` is client first + j mod n in
    // period m = j div n (one fleet of all N: t_first + j / (rate N)).
    const std::int64_t m = j / clients_, k = first_ + j % clients_;
    return t_first_ + std::llround(static_cast<double>(m * total_ + k) * 1e9 / (rate_hz_ * total_));
}

void ClientFleet::send_pose(int client, std::int64_t t_due, const Schedule& schedule) {
    const std::int64_t t_send = now_ns();
    write_pose_header(pose_.data(), {Kind::pose, static_cast<std::uint16_t>(first_ + client), seq_[client]++,
                                     static_cast<std::uint32_t>(payload_), t_send});
    const ssize_t n = ::send(sockets_[client].get(), pose_.data(), payload_, MSG_DONTWAIT);
    if (schedule.in_window(t_due)) stats_.lag_ns.push_back(t_send - t_due);  // lag: by schedule
    if (!schedule.in_window(t_send)) return;  // counts: by send time, as the server counts them
    if (n < 0) {
        ++stats_.send_failures;
        return;
    }
    ++stats_.poses_sent;
    stats_.bytes_out += n;
}

void ClientFleet::send_pings(const Schedule& schedule) {
    std::byte ping[kPoseHeader];
    for (int o = 0; o < observers_; ++o) {
        const std::int64_t t = now_ns();
        write_pose_header(ping, {Kind::ping, static_cast<std::uint16_t>(first_ + o), ping_seq_++, kPoseHeader, t});
        if (::send(sockets_[o].get(), ping, kPoseHeader, MSG_DONTWAIT) == static_cast<ssize_t>(kPoseHeader) &&
            schedule.in_window(t))
            ++stats_.pings_sent;
    }
}

void ClientFleet::receive(int i, const Schedule& schedule) {
    for (;;) {
        const int n = ::recvmmsg(sockets_[i].get(), in_msgs_.data(), kBatch, MSG_DONTWAIT, nullptr);
        if (n <= 0) return;
        const std::int64_t t_recv = now_ns();  // one read per batch: when the loop saw these
        const bool counted = schedule.in_window(t_recv);
        for (int k = 0; k < n; ++k) {
            const std::size_t len = in_msgs_[k].msg_len;
            if (counted) {
                ++stats_.datagrams_in;
                stats_.bytes_in += static_cast<std::int64_t>(len);
            }
            if (i >= observers_) continue;  // load clients only count what they receive
            const std::span<const std::byte> bytes(in_buffers_.data() + static_cast<std::size_t>(k) * kSlot, len);
            PoseHeader h;
            ServerHeader sh;
            if (read_pose_header(bytes, h) && h.kind == Kind::pong) {
                if (h.t_send_ns >= schedule.t_measure_start && h.t_send_ns < schedule.t_measure_end) {
                    ++stats_.pongs;
                    stats_.ping_rtt_ns.push_back(t_recv - h.t_send_ns);
                    stats_.ping_send_ns.push_back(h.t_send_ns);
                    stats_.ping_tick_ns.push_back(len >= kPong ? get<std::int64_t>(bytes.data() + kPoseHeader) : 0);
                }
                continue;
            }
            if (!read_server_header(bytes, sh) || kServerHeader + sh.count * payload_ > len) {
                ++stats_.bad_datagrams;
                continue;
            }
            for (std::size_t p = 0; p < sh.count; ++p) {
                if (!read_pose_header(bytes.subspan(kServerHeader + p * payload_, payload_), h)) {
                    ++stats_.bad_datagrams;
                    continue;
                }
                if (!schedule.in_window(h.t_send_ns)) continue;  // sent in the warm-up
                stats_.updates.push_back(
                    {(first_ + i) * total_ + h.client, 0, static_cast<std::int64_t>(h.seq), h.t_send_ns, t_recv});
            }
        }
        if (n < kBatch) return;
    }
}

void ClientFleet::send_loop(const Schedule& schedule, const std::atomic<bool>& stop) {
    // Pings go out at a uniformly random phase inside each ping interval (a fixed seed: the
    // same phases every run). On a fixed period they kept one phase against the server's tick
    // and the round trip showed that phase's wait, not the server (issue 27 item 7); at a
    // random phase the tick wait is uniform over one tick period (docs/replication.md).
    std::mt19937_64 phases(kPingPhaseSeed);
    std::uniform_int_distribution<std::int64_t> phase(0, ping_interval_ns_ - 1);
    std::int64_t j = 0, ping_slot = schedule.t_measure_start, cpu_at_start = -1;
    std::int64_t next_ping = ping_slot + phase(phases);
    ThreadTimes times_at_start;
    while (!stop.load(std::memory_order_relaxed)) {
        std::int64_t now = now_ns();
        if (cpu_at_start < 0 && now >= schedule.t_measure_start) {
            cpu_at_start = thread_cpu_ns();
            times_at_start = thread_times();
        }
        // every pose due in the window is sent, late if this thread was kept off the CPU
        // (as inside the window), also when it wakes only after the window's end: a fleet
        // sends its exact share whatever the machine's load
        for (std::int64_t t = due(j); t <= now && t < schedule.t_measure_end; t = due(j)) {
            send_pose(static_cast<int>(j % clients_), t, schedule);
            ++j;
            now = now_ns();
        }
        if (now >= schedule.t_measure_end) break;
        if (now >= next_ping) {
            send_pings(schedule);
            ping_slot += ping_interval_ns_;
            next_ping = ping_slot + phase(phases);
        }
        const std::int64_t next = std::min({due(j), next_ping, schedule.t_measure_end});
        const timespec ts{static_cast<time_t>(next / 1'000'000'000), static_cast<long>(next % 1'000'000'000)};
        ::clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr);
    }
    if (cpu_at_start >= 0) {
        stats_.send_cpu_ns = thread_cpu_ns() - cpu_at_start;
        stats_.send_times = thread_times() - times_at_start;
    }
    stats_.window_ns = std::min(now_ns(), schedule.t_measure_end) - schedule.t_measure_start;
}

void ClientFleet::receive_loop(const Schedule& schedule, const std::atomic<bool>& stop) {
    UniqueFd epoll(::epoll_create1(EPOLL_CLOEXEC));
    if (epoll.get() < 0) throw std::runtime_error("epoll: " + errno_text(errno));
    for (int i = 0; i < clients_; ++i) {
        epoll_event ev{};
        ev.events = EPOLLIN;
        ev.data.u32 = static_cast<std::uint32_t>(i);
        if (::epoll_ctl(epoll.get(), EPOLL_CTL_ADD, sockets_[i].get(), &ev) != 0)
            throw std::runtime_error("epoll_ctl: " + errno_text(errno));
    }
    std::vector<epoll_event> events(static_cast<std::size_t>(clients_));
    std::int64_t cpu_at_start = -1;
    ThreadTimes times_at_start;
    const auto window_done = [&] {
        stats_.receive_cpu_ns = thread_cpu_ns() - cpu_at_start;
        stats_.receive_times = thread_times() - times_at_start;
    };
    while (!stop.load(std::memory_order_relaxed)) {
        const std::int64_t now = now_ns();
        if (now >= schedule.t_stop) break;
        if (cpu_at_start < 0 && now >= schedule.t_measure_start) {
            cpu_at_start = thread_cpu_ns();
            times_at_start = thread_times();
        }
        if (stats_.receive_cpu_ns == 0 && cpu_at_start >= 0 && now >= schedule.t_measure_end) window_done();
        const int n = ::epoll_wait(epoll.get(), events.data(), static_cast<int>(events.size()), 20);
        for (int e = 0; e < n; ++e) receive(static_cast<int>(events[e].data.u32), schedule);
    }
    if (cpu_at_start >= 0 && stats_.receive_cpu_ns == 0) window_done();
}

FleetStats combined(std::vector<FleetStats*> fleets) {
    FleetStats all;
    for (FleetStats* f : fleets) {
        all.poses_sent += f->poses_sent;
        all.bytes_out += f->bytes_out;
        all.send_failures += f->send_failures;
        all.datagrams_in += f->datagrams_in;
        all.bytes_in += f->bytes_in;
        all.bad_datagrams += f->bad_datagrams;
        all.pings_sent += f->pings_sent;
        all.pongs += f->pongs;
        all.send_cpu_ns += f->send_cpu_ns;
        all.receive_cpu_ns += f->receive_cpu_ns;
        all.window_ns = std::max(all.window_ns, f->window_ns);
        all.send_times = {all.send_times.user_ns + f->send_times.user_ns, all.send_times.sys_ns + f->send_times.sys_ns};
        all.receive_times = {all.receive_times.user_ns + f->receive_times.user_ns,
                             all.receive_times.sys_ns + f->receive_times.sys_ns};
        if (all.rcvbuf_bytes == 0) all.rcvbuf_bytes = f->rcvbuf_bytes;
        auto join = [](auto& into, auto& from) {
            if (into.empty()) into = std::move(from);
            else into.insert(into.end(), from.begin(), from.end());
        };
        join(all.lag_ns, f->lag_ns);
        join(all.ping_rtt_ns, f->ping_rtt_ns);
        join(all.ping_send_ns, f->ping_send_ns);
        join(all.ping_tick_ns, f->ping_tick_ns);
        join(all.updates, f->updates);
    }
    return all;
}

}  // namespace jitterlab::repl
