// jitterlab-repl: seed 003 §7.3's multi-user replication experiment on loopback. A server
// thread ticks at --server-tick Hz and replicates to every client the latest pose of every
// other client that changed; a client-fleet thread sends each client's pose at --rate Hz on
// a fixed schedule and lets the first --observers clients record every update they get.
//
// Output in --out: samples.jlraw (pair = observer * clients + avatar; t_send = when the avatar's
// client sent the pose, t_recv = when the observer read it), harness.json (counters, pings,
// placements), generator_lag.i64 (actual minus scheduled send time of every pose) and
// server_ticks.i64 (start and busy time of every server tick). Progress: "progress NS" on stdout.
//
// Across hosts (issue 27 item 8, `repl bench --hosts`), one process per host plays one part:
// `--role server` (the server only) or `--role fleet` (one client fleet sending to
// --server-address): it says "serving PORT" or "ready" on stdout, waits for "go" on stdin and
// starts its schedule then; "stop" or the end of stdin stops it early. With `--out -` the files
// are written to a private temporary folder and sent on stdout ("file NAME BYTES", the bytes,
// then "end") instead, so the coordinator needs no file transfer.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "../src/harness_json.hpp"
#include "../src/tool_util.hpp"
#include "cpu_stat.hpp"
#include "endpoint.hpp"
#include "netns.hpp"
#include "jitterlab/clock.hpp"
#include "jitterlab/cpu_wake.hpp"
#include "jitterlab/floor.hpp"

namespace jl = jitterlab;
namespace rp = jitterlab::repl;

namespace {

constexpr const char* kTool = "jitterlab-repl";
constexpr int kSpareFds = 16;  // stdio, epoll, the server socket, output files

struct Options {
    int clients = 10, observers = 2, payload = 144, port = 0;
    double rate_hz = 90, tick_hz = 120;
    std::int64_t duration_ns = 30'000'000'000, warmup_ns = 1'000'000'000, ping_interval_ns = 100'000'000;
    std::int64_t grace_ns = 250'000'000;
    std::string address = "127.0.0.1";
    int pin_server = -1, pin_clients = -1;
    // across nodes: the server's sockets in one namespace, each fleet's in another, sending
    // to the server at the address that node reaches it by (none: one fleet, here, to --address)
    std::string server_netns;
    struct Fleet {
        std::string netns, server_address;
    };
    std::vector<Fleet> fleets;
    jl::PolicyRequest policy;
    bool mlock = true;
    std::string out_dir = ".";
    // across hosts: this process's part ("all": server and every fleet, here)
    std::string role = "all";
    int first_client = 0, fleet_clients = 0;  // --role fleet: which clients
    std::string server_address;               // --role fleet: where the server is
    bool stream_out = false;                  // --out -: files on stdout
};

Options parse(int argc, char** argv) {
    namespace t = jl::tool;
    Options o;
    auto fleet = [&o](t::ArgReader& a) {
        const std::string spec = a.value();
        const auto at = spec.find('@');
        if (at == std::string::npos || at == 0 || at + 1 == spec.size())
            t::usage_error(kTool, "--fleet takes NETNS@ADDRESS, got '" + spec + "'");
        o.fleets.push_back({spec.substr(0, at), spec.substr(at + 1)});
    };
    auto role = [&o](t::ArgReader& a) {
        o.role = a.value();
        if (o.role != "all" && o.role != "server" && o.role != "fleet")
            t::usage_error(kTool, "--role takes all, server or fleet, got '" + o.role + "'");
    };
    t::read_options(
        kTool, argc, argv, "--out DIR [options]",
        "Seed 003 §7.3: N clients send poses at --rate Hz; a server ticking at --server-tick Hz replicates\n"
        "every changed pose to every other client; observers record each update's latency.\n"
        "--out - sends the output files on stdout ('file NAME BYTES', bytes, 'end').",
        {
            t::int_option("--clients", "N", "clients, observers included (default 10)", o.clients, 2, 4000),
            t::int_option("--observers", "K", "clients that record every update (default 2)", o.observers, 1, 4000),
            t::real_option("--rate", "HZ", "pose rate per client, in (0, 1000] (default 90)", o.rate_hz, 0, 1000),
            t::real_option("--server-tick", "HZ", "server tick rate (default 120)", o.tick_hz, 0, 10000),
            t::int_option("--payload", "BYTES", "pose size, header included, 24..1172 (default 144)", o.payload,
                          rp::kPoseHeader, rp::kMaxPose),
            t::int_option("--duration-ns", "NS", "measured time (default 30 s)", o.duration_ns, 1'000'000,
                          86'400'000'000'000),
            t::int_option("--warmup-ns", "NS", "unmeasured time first (default 1 s)", o.warmup_ns, 0, 3'600'000'000'000),
            t::int_option("--ping-interval-ns", "NS", "observers' ping period (default 100 ms)", o.ping_interval_ns,
                          1'000'000, 60'000'000'000),
            t::text_option("--address", "A", "server address (default 127.0.0.1)", o.address),
            t::int_option("--port", "P", "server port (default 0: any free)", o.port, 0, 65535),
            t::int_option("--pin-server", "CPU", "pin the server thread (-1: not pinned)", o.pin_server, -1, 4095),
            t::int_option("--pin-clients", "CPU", "pin the client threads (-1: not pinned)", o.pin_clients, -1, 4095),
            t::text_option("--server-netns", "NS", "make the server's socket in network namespace NS (root)",
                           o.server_netns),
            {"--fleet", "NS@ADDRESS",
             "a client fleet in namespace NS sending to the server at ADDRESS;\n"
             "repeat it to split the clients evenly across nodes (observers in the first)",
             fleet},
            {"--role", "all|server|fleet",
             "across hosts: this process runs the server only, or one fleet only; it\n"
             "prints 'serving PORT' or 'ready', then waits for 'go' on stdin (default all)",
             role},
            t::int_option("--first-client", "I", "--role fleet: its first client, of --clients", o.first_client, 0, 3999),
            t::int_option("--fleet-clients", "C", "--role fleet: how many clients, I … I+C−1", o.fleet_clients, 1, 4000),
            t::text_option("--server-address", "A", "--role fleet: the server's address (with --port)", o.server_address),
        },
        t::common_options(kTool, o.policy, o.mlock, o.out_dir));
    t::check_policy(kTool, o.policy);
    o.stream_out = o.out_dir == "-";
    if (o.role == "fleet") {
        if (o.server_address.empty() || o.port == 0 || o.fleet_clients == 0)
            jl::tool::usage_error(kTool, "--role fleet needs --server-address, --port and --fleet-clients");
        if (o.first_client + o.fleet_clients > o.clients)
            jl::tool::usage_error(kTool, "--first-client + --fleet-clients exceeds --clients");
        if (o.first_client == 0 && o.observers > o.fleet_clients)
            jl::tool::usage_error(kTool, "--observers must be at most the first fleet's clients");
        if (!o.fleets.empty() || !o.server_netns.empty())
            jl::tool::usage_error(kTool, "--role fleet takes no --fleet or --server-netns");
        o.fleets.push_back({"", o.server_address});
    } else if (o.role == "server" && !o.fleets.empty()) {
        jl::tool::usage_error(kTool, "--role server takes no --fleet");
    }
    if (o.observers > o.clients) jl::tool::usage_error(kTool, "--observers cannot exceed --clients");
    if (o.fleets.empty() && o.role == "all") o.fleets.push_back({"", o.address});
    const auto fleets = std::max(static_cast<int>(o.fleets.size()), 1);
    if (fleets > o.clients) jl::tool::usage_error(kTool, "more --fleet nodes than clients");
    if (o.role == "all" && o.observers > o.clients / fleets)
        jl::tool::usage_error(kTool, "--observers must be at most the first fleet's " + std::to_string(o.clients / fleets) +
                                         " clients");
    rlimit limit{};
    ::getrlimit(RLIMIT_NOFILE, &limit);
    const auto needed = static_cast<rlim_t>(o.clients + kSpareFds);
    if (limit.rlim_cur != RLIM_INFINITY && limit.rlim_cur < needed)
        jl::tool::usage_error(kTool, std::to_string(o.clients) + " clients need " + std::to_string(needed) +
                                         " file descriptors but the limit is " + std::to_string(limit.rlim_cur) +
                                         ": raise it with ulimit -n " + std::to_string(needed));
    return o;
}

/// Pins and schedules the calling thread. The pacer (the thread that sends on schedule) runs
/// SCHED_FIFO one level above what the others asked for: under SCHED_OTHER a running reader
/// keeps the CPU until its slice ends (EEVDF's run-to-parity, about 1 ms here), which showed
/// up as p99 send lag near 1 ms at 125 clients; with the pacer on FIFO it was below 0.1 ms.
jl::ThreadPlacement place(const Options& o, const char* role, int cpu, bool pacer = false) {
    ::prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);  // wake at the deadline, not up to 50 µs after it
    jl::ThreadPlacement p;
    p.role = role;
    p.affinity_error = cpu >= 0 ? jl::apply_affinity({cpu}) : "";
    jl::PolicyRequest request = o.policy;
    if (pacer) {
        if (request.policy == jl::Policy::other) request = {jl::Policy::fifo, 1, 0, 0, 0};
        else request.priority = std::min(request.priority + 1, 99);
    }
    p.policy_error = jl::apply_policy(request);
    jl::read_back(p);
    return p;
}

constexpr std::int64_t kProgressNs = 200'000'000;

/// Every CPU's /proc/stat accounting over the measured window (issue 27 item 9).
class KernelWindow {
public:
    bool started() const { return t_start_ >= 0; }
    bool ended() const { return t_end_ >= 0; }
    void start() {
        t_start_ = jl::now_ns();
        before_ = rp::read_proc_stat();
        udp_before_ = udp_rows();
    }
    void end() {
        t_end_ = jl::now_ns();
        after_ = rp::read_proc_stat();
        udp_after_ = udp_rows();
    }
    /// This host's /proc/net/snmp "Udp:" rows at the window's start and end (across hosts the
    /// coordinator cannot read them itself: it takes their difference, host by host).
    jl::Json udp_json() const { return {{"before", udp_before_}, {"after", udp_after_}}; }
    jl::Json json() const {
        jl::Json cpus = jl::Json::array();
        for (const auto& c : rp::difference(before_, after_)) {
            jl::Json one = {{"cpu", c.cpu}};
            for (std::size_t k = 0; k < c.ns.size(); ++k) one[std::string(rp::kCpuStatFields[k]) + "_ns"] = c.ns[k];
            cpus.push_back(one);
        }
        return {{"window_ns", ended() ? t_end_ - t_start_ : 0}, {"cpus", cpus}};
    }

private:
    static std::string udp_rows() {
        std::ifstream in("/proc/net/snmp");
        std::string line, rows;
        while (std::getline(in, line))
            if (line.rfind("Udp:", 0) == 0) rows += line + "\n";
        return rows;
    }
    std::int64_t t_start_ = -1, t_end_ = -1;
    std::vector<rp::CpuStat> before_, after_;
    std::string udp_before_, udp_after_;
};

jl::Json times_json(const rp::ThreadTimes& t) { return {{"user_ns", t.user_ns}, {"sys_ns", t.sys_ns}}; }

template <typename T>
void write_binary(const std::string& path, const std::vector<T>& values) {
    const std::string tmp = path + ".tmp";
    {
        std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
        out.write(reinterpret_cast<const char*>(values.data()), static_cast<std::streamsize>(values.size() * sizeof(T)));
        if (!out) throw std::runtime_error("cannot write " + tmp);
    }
    if (std::rename(tmp.c_str(), path.c_str()) != 0) throw std::runtime_error("cannot rename " + tmp);
}

/// Across hosts: the line that says this part is ready, then "go" from the coordinator; false
/// when stdin ended or said "stop" first.
bool wait_for_go(const std::string& ready) {
    std::printf("%s\n", ready.c_str());
    std::fflush(stdout);
    std::string line;
    while (std::getline(std::cin, line)) {
        if (line == "go") return true;
        if (line == "stop") return false;
    }
    return false;
}

/// Across hosts: "stop" or the end of stdin (the coordinator or its ssh went away) stops the run.
void watch_stdin(std::atomic<bool>& stopped) {
    std::thread([&stopped] {
        std::string line;
        while (std::getline(std::cin, line))
            if (line == "stop") break;
        stopped.store(true);
    }).detach();
}

/// `--out -`: a private folder for the files, removed once they are sent.
std::string private_out_dir() {
    const char* base = std::getenv("TMPDIR");
    std::string pattern = std::string(base && *base ? base : "/tmp") + "/jitterlab-repl-XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr) {
        std::fprintf(stderr, "%s: error: cannot make a temporary folder: %s\n", kTool, std::strerror(errno));
        std::exit(2);
    }
    return pattern;
}

/// Every output file on stdout ("file NAME BYTES", its bytes), then "end"; the folder removed.
void send_files(const std::string& dir) {
    for (const char* name : {"samples.jlraw", "generator_lag.i64", "server_ticks.i64", "harness.json"}) {
        const std::string path = dir + "/" + name;
        std::ifstream in(path, std::ios::binary);
        if (!in) continue;
        const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        std::printf("file %s %zu\n", name, bytes.size());
        std::fwrite(bytes.data(), 1, bytes.size(), stdout);
    }
    std::printf("end\n");
    std::fflush(stdout);
    std::error_code ignored;
    std::filesystem::remove_all(dir, ignored);
}

}  // namespace

int main(int argc, char** argv) {
    jl::tool::install_signal_handlers();
    Options o = parse(argc, argv);
    if (o.stream_out) o.out_dir = private_out_dir();
    jl::tool::require_writable_dir(kTool, o.out_dir);
    const bool has_server = o.role != "fleet";
    const std::string out_dir = o.out_dir;
    struct SendOnExit {  // --out -: whatever was written goes to the coordinator, on every way out
        std::string dir;
        ~SendOnExit() {
            if (!dir.empty()) send_files(dir);
        }
    } send_on_exit{o.stream_out ? out_dir : std::string()};
    const std::int64_t started_realtime = jl::realtime_ns();
    const jl::ClockOverhead clock = jl::measure_clock_overhead(200'000);
    const std::string mlock_error = o.mlock ? jl::lock_memory() : "";
    const jl::CpuWakeHold cpu_awake;

    const auto fleet_count = o.fleets.size();
    const std::size_t first_fleet_slot = has_server ? 1 : 0;
    std::vector<jl::ThreadPlacement> placements(first_fleet_slot + 2 * fleet_count);
    KernelWindow kernel;
    std::atomic<bool> stop{false}, coordinator_stop{false};
    try {
        std::optional<rp::Server> made;
        if (has_server) {
            const rp::NetnsScope in(o.server_netns);
            made.emplace(o.clients, o.tick_hz, o.payload, o.address, o.port);
        }
        const int port = has_server ? made->port() : o.port;
        if (o.role != "all") {
            // the version last: the coordinator refuses a part of another release
            const std::string version = std::string(" version=") + JITTERLAB_VERSION;
            if (!wait_for_go(has_server ? "serving " + std::to_string(port) + version : "ready" + version)) {
                std::fprintf(stderr, "%s: the coordinator stopped before the start\n", kTool);
                return 130;
            }
            watch_stdin(coordinator_stop);
        }
        // across hosts every part starts its schedule the same lead after "go" (its sockets are
        // made within it); here, time to make every fleet's sockets first
        const std::int64_t lead = o.role != "all" ? 100'000'000
                                                  : 50'000'000 + 20'000'000 * static_cast<std::int64_t>(fleet_count);
        const std::int64_t t0 = jl::now_ns() + lead;
        rp::Schedule schedule{t0, t0 + o.warmup_ns, t0 + o.warmup_ns + o.duration_ns,
                              t0 + o.warmup_ns + o.duration_ns + o.grace_ns};
        // fleet f has clients ⌊N f / F⌋ … ⌊N (f + 1) / F⌋ − 1
        std::vector<std::unique_ptr<rp::ClientFleet>> fleets;
        auto fleet_first = [&](std::size_t f) {
            if (o.role == "fleet") return o.first_client;
            return static_cast<int>(static_cast<std::int64_t>(o.clients) * f / fleet_count);
        };
        auto fleet_size = [&](std::size_t f) {
            if (o.role == "fleet") return o.fleet_clients;
            return static_cast<int>(static_cast<std::int64_t>(o.clients) * (f + 1) / fleet_count) - fleet_first(f);
        };
        for (std::size_t f = 0; f < fleet_count; ++f) {
            const rp::NetnsScope in(o.fleets[f].netns);
            fleets.push_back(std::make_unique<rp::ClientFleet>(fleet_first(f), fleet_size(f), o.clients, o.observers,
                                                               o.rate_hz, o.payload, o.fleets[f].server_address, port,
                                                               schedule, o.ping_interval_ns));
        }
        {
            std::optional<std::jthread> server_thread;
            if (has_server)
                server_thread.emplace([&] {
                    placements[0] = place(o, "server", o.pin_server);
                    made->run(schedule, stop);
                });
            std::vector<std::jthread> fleet_threads;
            for (std::size_t f = 0; f < fleet_count; ++f) {
                const std::string suffix = fleet_count > 1 ? "-" + std::to_string(f) : "";
                fleet_threads.emplace_back([&, f, suffix] {
                    placements[first_fleet_slot + 2 * f] =
                        place(o, ("clients-send" + suffix).c_str(), o.pin_clients, true);
                    fleets[f]->send_loop(schedule, stop);
                });
                fleet_threads.emplace_back([&, f, suffix] {
                    placements[first_fleet_slot + 1 + 2 * f] =
                        place(o, ("clients-receive" + suffix).c_str(), o.pin_clients);
                    fleets[f]->receive_loop(schedule, stop);
                });
            }
            // Progress every 200 ms; /proc/stat read when the window opens and when it closes.
            const std::int64_t total = o.warmup_ns + o.duration_ns;
            std::int64_t next_progress = jl::now_ns() + kProgressNs;
            while (jl::now_ns() < schedule.t_stop) {
                std::int64_t wake = next_progress;
                if (!kernel.started()) wake = std::min(wake, schedule.t_measure_start);
                else if (!kernel.ended()) wake = std::min(wake, schedule.t_measure_end);
                const timespec ts{static_cast<time_t>(wake / 1'000'000'000), static_cast<long>(wake % 1'000'000'000)};
                ::clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr);
                const std::int64_t now = jl::now_ns();
                if (!kernel.started() && now >= schedule.t_measure_start) kernel.start();
                if (kernel.started() && !kernel.ended() && now >= schedule.t_measure_end) kernel.end();
                if (now >= next_progress) {
                    next_progress += kProgressNs;
                    std::printf("progress %lld %lld\n", static_cast<long long>(std::clamp<std::int64_t>(now - t0, 0, total)),
                                static_cast<long long>(total));
                    std::fflush(stdout);
                }
                if (jl::tool::g_signal != 0 || coordinator_stop.load()) {
                    stop.store(true);
                    break;
                }
            }
        }
        if (kernel.started() && !kernel.ended()) kernel.end();  // interrupted inside the window
        const bool interrupted = jl::tool::g_signal != 0 || coordinator_stop.load();
        const std::int64_t t_end = std::min(jl::now_ns(), schedule.t_measure_end);
        std::vector<rp::FleetStats*> parts;
        for (auto& f : fleets) parts.push_back(&f->stats());
        rp::FleetStats fs = rp::combined(parts);
        rp::ServerStats no_server;
        const rp::ServerStats& ss = has_server ? made->stats() : no_server;
        jl::RawSampleWriter writer(o.out_dir + "/samples.jlraw");
        writer.write(fs.updates);
        writer.finish(interrupted);
        write_binary(o.out_dir + "/generator_lag.i64", fs.lag_ns);
        std::vector<std::int64_t> ticks;
        ticks.reserve(ss.tick_start_ns.size() * 2);
        for (std::size_t k = 0; k < ss.tick_start_ns.size(); ++k) {
            ticks.push_back(ss.tick_start_ns[k]);
            ticks.push_back(ss.tick_busy_ns[k]);
        }
        write_binary(o.out_dir + "/server_ticks.i64", ticks);

        jl::Json j;
        j["harness"] = "native";
        j["tool"] = "repl";
        j["harness_version"] = JITTERLAB_VERSION;
        j["technique"] = "repl-udp";
        j["pairs"] = o.observers * (o.clients - 1);
        j["repl"] = {{"clients", o.clients},
                     {"observers", o.observers},
                     {"rate_hz", o.rate_hz},
                     {"server_tick_hz", o.tick_hz},
                     {"payload_bytes", o.payload},
                     {"max_datagram_bytes", rp::kMaxDatagram},
                     {"poses_per_datagram", rp::poses_per_datagram(static_cast<std::size_t>(o.payload))},
                     {"address", o.address},
                     {"port", port},
                     {"server_netns", o.server_netns},
                     {"role", o.role}};
        jl::Json nodes = jl::Json::array();
        for (std::size_t f = 0; f < fleet_count; ++f)
            nodes.push_back({{"netns", o.fleets[f].netns},
                             {"server_address", o.fleets[f].server_address},
                             {"first_client", fleet_first(f)},
                             {"clients", fleet_size(f)}});
        j["repl"]["fleets"] = nodes;
        j["repl"]["server"] = {{"pose_datagrams_in", ss.pose_datagrams_in}, {"pose_bytes_in", ss.pose_bytes_in},
                               {"ping_datagrams_in", ss.ping_datagrams_in}, {"ping_bytes_in", ss.ping_bytes_in},
                               {"pose_datagrams_received", ss.pose_datagrams_received},
                               {"pose_bytes_received", ss.pose_bytes_received},
                               {"datagrams_out", ss.datagrams_out},         {"bytes_out", ss.bytes_out},
                               {"poses_out", ss.poses_out},                 {"send_failures", ss.send_failures},
                               {"bad_datagrams", ss.bad_datagrams},         {"ticks", ss.tick_start_ns.size()},
                               {"late_ticks", ss.late_ticks},               {"cpu_ns", ss.cpu_ns},
                               {"window_ns", ss.window_ns},                 {"rcvbuf_bytes", ss.rcvbuf_bytes},
                               {"sndbuf_bytes", ss.sndbuf_bytes}};
        j["repl"]["clients_fleet"] = {{"poses_sent", fs.poses_sent},         {"bytes_out", fs.bytes_out},
                                      {"send_failures", fs.send_failures},   {"datagrams_in", fs.datagrams_in},
                                      {"bytes_in", fs.bytes_in},             {"bad_datagrams", fs.bad_datagrams},
                                      {"pings_sent", fs.pings_sent},         {"pongs", fs.pongs},
                                      {"send_cpu_ns", fs.send_cpu_ns},       {"receive_cpu_ns", fs.receive_cpu_ns},
                                      {"window_ns", fs.window_ns},           {"rcvbuf_bytes", fs.rcvbuf_bytes},
                                      {"updates_recorded", fs.updates.size()}};
        j["repl"]["cpu_time"] = {
            {"threads",
             {{"server", times_json(ss.times)}, {"clients_send", times_json(fs.send_times)},
              {"clients_receive", times_json(fs.receive_times)}}},
            {"server_ticks_on_cpu", ss.ticks_on_cpu},
            {"proc_stat", kernel.json()},
            {"ticks_per_s", ::sysconf(_SC_CLK_TCK)}};
        j["repl"]["ping_rtt_ns"] = fs.ping_rtt_ns;
        j["repl"]["ping_send_ns"] = fs.ping_send_ns;
        j["repl"]["ping_tick_ns"] = fs.ping_tick_ns;
        j["repl"]["udp_snmp"] = kernel.udp_json();
        j["repl"]["ping_phase"] = {{"interval_ns", o.ping_interval_ns}, {"seed", rp::kPingPhaseSeed}, {"distribution", "uniform"}};
        j["policy_requested"] = jl::policy_json(o.policy);
        j["pm_qos"] = {{"cpu_dma_latency_us", 0}, {"obtained", cpu_awake.held()}, {"error", cpu_awake.error()}};
        j["mlock"] = jl::mlock_json(o.mlock, mlock_error);
        j["placements"] = jl::placements_json(placements);
        std::vector<jl::Warning> warnings;
        for (const auto& p : placements) jl::placement_warnings(warnings, p);
        if (!cpu_awake.held())
            warnings.push_back({jl::WarningCode::pm_qos_refused, "/dev/cpu_dma_latency could not be held at 0 (" +
                                                                     cpu_awake.error() + "); idle vCPUs wake slowly and add generator lag"});
        j["warnings"] = warnings;
        const std::string why = jl::tool::g_signal != 0 ? std::string("interrupted by ") + jl::tool::signal_name()
                                : coordinator_stop.load() ? std::string("stopped by the coordinator")
                                                          : std::string();
        jl::set_status(j, interrupted, why,
                       started_realtime, schedule.t_measure_start, t_end);
        j["floor"] = {{"clock_overhead_ns", jl::clock_overhead_json(clock)}};
        jl::tool::write_file_atomically(o.out_dir + "/harness.json", jl::json_text(j));
        return interrupted ? 130 : 0;
    } catch (const rp::UsageProblem& e) {
        jl::tool::usage_error(kTool, e.what());
    } catch (const std::exception& e) {
        std::fprintf(stderr, "%s: %s\n", kTool, e.what());
        return 1;
    }
}
