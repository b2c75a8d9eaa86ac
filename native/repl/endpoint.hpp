// The replication server and its client fleet (docs/replication.md): the server is one
// tick loop, the fleet a pacer thread (sends on schedule) and a receiver loop (epoll), all
// over non-blocking UDP sockets with every buffer allocated up front, so the send and
// receive paths never allocate.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <atomic>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "cpu_stat.hpp"
#include "jitterlab/runfile.hpp"
#include "jitterlab/unique_fd.hpp"
#include "protocol.hpp"

namespace jitterlab::repl {

/// Bad input the user can fix (a port in use, too few file descriptors): exit code 2.
struct UsageProblem : std::runtime_error {
    using std::runtime_error::runtime_error;
};

/// When each phase begins and ends, on CLOCK_MONOTONIC; shared by the server and the fleet.
struct Schedule {
    std::int64_t t_first_send = 0;     // clients start sending (warm-up begins)
    std::int64_t t_measure_start = 0;  // counters and samples start
    std::int64_t t_measure_end = 0;    // clients stop sending
    std::int64_t t_stop = 0;           // last in-flight updates drained
    bool in_window(std::int64_t t) const noexcept { return t >= t_measure_start && t < t_measure_end; }
};

struct ServerStats {
    std::int64_t pose_datagrams_in = 0, pose_bytes_in = 0;
    std::int64_t ping_datagrams_in = 0, ping_bytes_in = 0;
    // poses the server read during its window (by when it read them, not when they were sent):
    // what arrived, which differs from what was sent when the server falls behind or the
    // kernel drops; payload bytes (the wire adds 28 B of IPv4 and UDP header per datagram)
    std::int64_t pose_datagrams_received = 0, pose_bytes_received = 0;
    std::int64_t datagrams_out = 0, bytes_out = 0, poses_out = 0;
    std::int64_t send_failures = 0;  // datagrams the kernel refused (EAGAIN, ENOBUFS)
    std::int64_t bad_datagrams = 0;
    std::int64_t late_ticks = 0;     // ticks that began after their slot had passed
    std::int64_t cpu_ns = 0;         // the server thread's CPU time in the window
    ThreadTimes times;               // the same split into user and system time
    std::vector<std::int64_t> ticks_on_cpu;  // ticks in the window by the CPU they ran on
    std::int64_t window_ns = 0;
    int rcvbuf_bytes = 0, sndbuf_bytes = 0;
    std::vector<std::int64_t> tick_start_ns, tick_busy_ns;  // every tick in the window
};

struct FleetStats {
    std::int64_t poses_sent = 0, bytes_out = 0, send_failures = 0;
    std::int64_t datagrams_in = 0, bytes_in = 0, bad_datagrams = 0;
    std::int64_t pings_sent = 0, pongs = 0;
    std::int64_t send_cpu_ns = 0, receive_cpu_ns = 0, window_ns = 0;
    ThreadTimes send_times, receive_times;  // the same split into user and system time
    int rcvbuf_bytes = 0;
    std::vector<std::int64_t> lag_ns;        // actual send time minus scheduled, every pose in the window
    std::vector<std::int64_t> ping_rtt_ns;   // observers' round trips
    std::vector<std::int64_t> ping_send_ns;  // when each of those pings was sent (same order)
    std::vector<std::int64_t> ping_tick_ns;  // when the server tick that answered it began (the server's clock)
    std::vector<SampleRecord> updates;       // observers: pair = observer * clients + avatar
};

/// Every fleet's statistics as one fleet's (counts summed, records joined, the longest window).
FleetStats combined(std::vector<FleetStats*> fleets);

/// Nanoseconds of CPU the calling thread has used.
std::int64_t thread_cpu_ns() noexcept;

/// A UDP socket bound to `address:port` (port 0: any free one), non-blocking, with buffers
/// of `buffer_bytes` asked for (SO_*BUFFORCE as root). Throws UsageProblem for a port in use.
UniqueFd bind_udp(const std::string& address, int port, int buffer_bytes);
int bound_port(int fd);
int socket_buffer(int fd, int option);

class Server {
public:
    Server(int clients, double tick_hz, int payload, const std::string& address, int port);
    int port() const { return bound_port(fd_.get()); }
    /// Ticks until `schedule.t_stop` or until `stop` is set.
    void run(const Schedule& schedule, const std::atomic<bool>& stop);
    const ServerStats& stats() const { return stats_; }

private:
    void drain(std::int64_t now, const Schedule& schedule);
    void replicate(std::uint32_t tick, std::int64_t t_tick, bool counted);

    int clients_;
    std::int64_t period_ns_;
    std::size_t payload_;
    UniqueFd fd_;
    std::vector<std::byte> poses_;         // latest pose of each client
    std::vector<std::uint32_t> latest_seq_;
    std::vector<char> known_, changed_;
    std::vector<std::uint16_t> changed_list_;
    std::vector<sockaddr_in> addresses_;
    std::vector<std::byte> in_buffers_, out_buffers_;
    std::vector<mmsghdr> in_msgs_, out_msgs_;
    std::vector<iovec> in_iov_, out_iov_;
    std::vector<sockaddr_in> in_names_;
    ServerStats stats_;
};

/// The seed of the observers' ping phases (recorded in harness.json's repl block).
inline constexpr std::uint64_t kPingPhaseSeed = 20'261'125;

class ClientFleet {
public:
    /// Clients `first` … `first + count − 1` of `total` (one fleet per node when the clients
    /// are split across nodes), one socket each connected to the server; its first
    /// `observers` record what they get (observers are clients 0 … observers − 1, so only the
    /// fleet with `first` = 0 has any).
    ClientFleet(int first, int count, int total, int observers, double rate_hz, int payload, const std::string& server,
                int port, const Schedule& schedule, std::int64_t ping_interval_ns);
    /// The pacer: sends every client's poses (and the observers' pings) on schedule. It has
    /// a thread of its own so that reading what the server sends never delays a send.
    void send_loop(const Schedule& schedule, const std::atomic<bool>& stop);
    /// The receiver: reads every socket until `schedule.t_stop` or `stop`.
    void receive_loop(const Schedule& schedule, const std::atomic<bool>& stop);
    FleetStats& stats() { return stats_; }

private:
    std::int64_t due(std::int64_t j) const noexcept;
    void send_pose(int client, std::int64_t t_due, const Schedule& schedule);
    void send_pings(const Schedule& schedule);
    void receive(int i, const Schedule& schedule);

    int first_, clients_, total_, observers_;  // clients_: this fleet's
    double rate_hz_;
    std::size_t payload_;
    std::int64_t t_first_;
    std::int64_t ping_interval_ns_;
    std::vector<UniqueFd> sockets_;
    std::vector<std::uint32_t> seq_;
    std::vector<std::byte> pose_;
    std::vector<std::byte> in_buffers_;
    std::vector<mmsghdr> in_msgs_;
    std::vector<iovec> in_iov_;
    std::uint32_t ping_seq_ = 0;
    FleetStats stats_;
};

}  // namespace jitterlab::repl
