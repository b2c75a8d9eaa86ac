// jitterlab-repl: seed 003 §7.3's multi-user replication experiment on loopback. A server
// thread ticks at --server-tick Hz and replicates to every client the latest pose of every
// other client that changed; a client-fleet thread sends each client's pose at --rate Hz on
// a fixed schedule and lets the first --observers clients record every update they get.
//
// Output in --out: samples.jlraw (pair = observer * clients + avatar; t_send = when the avatar's
// client sent the pose, t_recv = when the observer read it), harness.json (counters, pings,
// placements), generator_lag.i64 (actual minus scheduled send time of every pose) and
// server_ticks.i64 (start and busy time of every server tick). Progress: "progress NS" on stdout.
#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "../src/harness_json.hpp"
#include "../src/tool_util.hpp"
#include "endpoint.hpp"
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
    jl::PolicyRequest policy;
    bool mlock = true;
    std::string out_dir = ".";
};

const std::string kUsage = std::string(
    "usage: jitterlab-repl --out DIR [options]\n"
    "Seed 003 §7.3: N clients send poses at --rate Hz; a server ticking at --server-tick Hz replicates\n"
    "every changed pose to every other client; observers record each update's latency.\n"
    "  --clients N               clients, observers included (default 10)\n"
    "  --observers K             clients that record every update (default 2)\n"
    "  --rate HZ                 pose rate per client, in (0, 1000] (default 90)\n"
    "  --server-tick HZ          server tick rate (default 120)\n"
    "  --payload BYTES           pose size, header included, 24..1172 (default 144)\n"
    "  --duration-ns NS          measured time (default 30 s)\n"
    "  --warmup-ns NS            unmeasured time first (default 1 s)\n"
    "  --ping-interval-ns NS     observers' ping period (default 100 ms)\n"
    "  --address A --port P      server address (default 127.0.0.1) and port (default 0: any free)\n"
    "  --pin-server CPU          pin the server thread (-1: not pinned); likewise --pin-clients\n"
    "  --pin-clients CPU\n") +
    jl::tool::kCommonUsage;

Options parse(int argc, char** argv) {
    Options o;
    jl::tool::ArgReader args(kTool, argc, argv, kUsage.c_str());
    auto value = [&] { return args.value(); };
    auto integer = [&](std::int64_t lo, std::int64_t hi) { return args.integer(lo, hi); };
    while (args.next()) {
        const std::string& flag = args.flag();
        if (flag == "--clients") o.clients = static_cast<int>(integer(2, 4000));
        else if (flag == "--observers") o.observers = static_cast<int>(integer(1, 4000));
        else if (flag == "--rate") o.rate_hz = args.real(0, 1000);
        else if (flag == "--server-tick") o.tick_hz = args.real(0, 10000);
        else if (flag == "--payload") o.payload = static_cast<int>(integer(rp::kPoseHeader, rp::kMaxPose));
        else if (flag == "--duration-ns") o.duration_ns = integer(1'000'000, 86'400'000'000'000);
        else if (flag == "--warmup-ns") o.warmup_ns = integer(0, 3'600'000'000'000);
        else if (flag == "--ping-interval-ns") o.ping_interval_ns = integer(1'000'000, 60'000'000'000);
        else if (flag == "--address") o.address = value();
        else if (flag == "--port") o.port = static_cast<int>(integer(0, 65535));
        else if (flag == "--pin-server") o.pin_server = static_cast<int>(integer(-1, 4095));
        else if (flag == "--pin-clients") o.pin_clients = static_cast<int>(integer(-1, 4095));
        else if (!jl::tool::parse_common_flag(kTool, flag, value, o.policy, o.mlock, o.out_dir))
            jl::tool::usage_error(kTool, "unknown option '" + flag + "'");
    }
    jl::tool::check_policy(kTool, o.policy);
    if (o.observers > o.clients) jl::tool::usage_error(kTool, "--observers cannot exceed --clients");
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

}  // namespace

int main(int argc, char** argv) {
    jl::tool::install_signal_handlers();
    const Options o = parse(argc, argv);
    jl::tool::require_writable_dir(kTool, o.out_dir);
    const std::int64_t started_realtime = jl::realtime_ns();
    const jl::ClockOverhead clock = jl::measure_clock_overhead(200'000);
    const std::string mlock_error = o.mlock ? jl::lock_memory() : "";
    const jl::CpuWakeHold cpu_awake;

    std::vector<jl::ThreadPlacement> placements(3);
    std::atomic<bool> stop{false};
    try {
        rp::Server server(o.clients, o.tick_hz, o.payload, o.address, o.port);
        const std::int64_t t0 = jl::now_ns() + 50'000'000;  // time for both threads to start
        rp::Schedule schedule{t0, t0 + o.warmup_ns, t0 + o.warmup_ns + o.duration_ns,
                              t0 + o.warmup_ns + o.duration_ns + o.grace_ns};
        rp::ClientFleet fleet(o.clients, o.observers, o.rate_hz, o.payload, o.address, server.port(), schedule,
                              o.ping_interval_ns);
        {
            std::jthread server_thread([&] {
                placements[0] = place(o, "server", o.pin_server);
                server.run(schedule, stop);
            });
            std::jthread pacer_thread([&] {
                placements[1] = place(o, "clients-send", o.pin_clients, true);
                fleet.send_loop(schedule, stop);
            });
            std::jthread receiver_thread([&] {
                placements[2] = place(o, "clients-receive", o.pin_clients);
                fleet.receive_loop(schedule, stop);
            });
            const std::int64_t total = o.warmup_ns + o.duration_ns;
            while (jl::now_ns() < schedule.t_stop) {
                std::this_thread::sleep_for(std::chrono::milliseconds(200));
                std::printf("progress %lld %lld\n", static_cast<long long>(std::clamp<std::int64_t>(jl::now_ns() - t0, 0, total)),
                            static_cast<long long>(total));
                std::fflush(stdout);
                if (jl::tool::g_signal != 0) {
                    stop.store(true);
                    break;
                }
            }
        }
        const bool interrupted = jl::tool::g_signal != 0;
        const std::int64_t t_end = std::min(jl::now_ns(), schedule.t_measure_end);
        auto& fs = fleet.stats();
        jl::RawSampleWriter writer(o.out_dir + "/samples.jlraw");
        writer.write(fs.updates);
        writer.finish(interrupted);
        write_binary(o.out_dir + "/generator_lag.i64", fs.lag_ns);
        const auto& ss = server.stats();
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
                     {"port", server.port()}};
        j["repl"]["server"] = {{"pose_datagrams_in", ss.pose_datagrams_in}, {"pose_bytes_in", ss.pose_bytes_in},
                               {"ping_datagrams_in", ss.ping_datagrams_in}, {"ping_bytes_in", ss.ping_bytes_in},
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
        j["repl"]["ping_rtt_ns"] = fs.ping_rtt_ns;
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
        jl::set_status(j, interrupted, interrupted ? std::string("interrupted by ") + jl::tool::signal_name() : std::string(),
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
