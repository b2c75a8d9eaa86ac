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

double parse_double(const std::string& flag, const std::string& text, double lo, double hi) {
    try {
        std::size_t used = 0;
        const double v = std::stod(text, &used);
        if (used != text.size() || !(v > lo) || v > hi) throw std::out_of_range(text);
        return v;
    } catch (const std::logic_error&) {
        jl::tool::usage_error(kTool, flag + " expects a number in (" + std::to_string(static_cast<int>(lo)) + ", " +
                                         std::to_string(static_cast<int>(hi)) + "], got '" + text + "'");
    }
}

Options parse(int argc, char** argv) {
    Options o;
    jl::tool::ArgReader args(kTool, argc, argv, kUsage.c_str());
    auto value = [&] { return args.value(); };
    auto integer = [&](std::int64_t lo, std::int64_t hi) { return args.integer(lo, hi); };
    while (args.next()) {
        const std::string& flag = args.flag();
        if (flag == "--clients") o.clients = static_cast<int>(integer(2, 4000));
        else if (flag == "--observers") o.observers = static_cast<int>(integer(1, 4000));
        else if (flag == "--rate") o.rate_hz = parse_double(flag, value(), 0, 1000);
        else if (flag == "--server-tick") o.tick_hz = parse_double(flag, value(), 0, 10000);
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

/// Holds /dev/cpu_dma_latency at 0 µs while it lives (cyclictest's habit): a halted vCPU
/// or a deep C-state takes milliseconds to wake, which would show up as generator lag.
/// Returns the open descriptor, or an empty one and the reason it was refused.
std::pair<rp::UniqueFd, std::string> hold_cpu_awake() {
    rp::UniqueFd fd(::open("/dev/cpu_dma_latency", O_WRONLY | O_CLOEXEC));
    if (fd.get() < 0) return {rp::UniqueFd(), std::strerror(errno)};
    const std::int32_t zero = 0;
    if (::write(fd.get(), &zero, sizeof zero) != static_cast<ssize_t>(sizeof zero)) return {rp::UniqueFd(), std::strerror(errno)};
    return {std::move(fd), ""};
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
    const auto [pm_qos, pm_qos_error] = hold_cpu_awake();

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

        jl::JsonWriter j;
        j.begin_object();
        j.field("harness", "native").field("tool", "repl").field("harness_version", JITTERLAB_VERSION);
        j.field("technique", "repl-udp").field("pairs", o.observers * (o.clients - 1));
        j.key("repl").begin_object();
        j.field("clients", o.clients).field("observers", o.observers).field("rate_hz", o.rate_hz);
        j.field("server_tick_hz", o.tick_hz).field("payload_bytes", o.payload);
        j.field("max_datagram_bytes", static_cast<std::int64_t>(rp::kMaxDatagram));
        j.field("poses_per_datagram", static_cast<std::int64_t>(rp::poses_per_datagram(static_cast<std::size_t>(o.payload))));
        j.field("address", o.address).field("port", server.port());
        j.key("server").begin_object();
        j.field("pose_datagrams_in", ss.pose_datagrams_in).field("pose_bytes_in", ss.pose_bytes_in);
        j.field("ping_datagrams_in", ss.ping_datagrams_in).field("ping_bytes_in", ss.ping_bytes_in);
        j.field("datagrams_out", ss.datagrams_out).field("bytes_out", ss.bytes_out).field("poses_out", ss.poses_out);
        j.field("send_failures", ss.send_failures).field("bad_datagrams", ss.bad_datagrams);
        j.field("ticks", static_cast<std::int64_t>(ss.tick_start_ns.size())).field("late_ticks", ss.late_ticks);
        j.field("cpu_ns", ss.cpu_ns).field("window_ns", ss.window_ns);
        j.field("rcvbuf_bytes", ss.rcvbuf_bytes).field("sndbuf_bytes", ss.sndbuf_bytes);
        j.end_object();
        j.key("clients_fleet").begin_object();
        j.field("poses_sent", fs.poses_sent).field("bytes_out", fs.bytes_out).field("send_failures", fs.send_failures);
        j.field("datagrams_in", fs.datagrams_in).field("bytes_in", fs.bytes_in).field("bad_datagrams", fs.bad_datagrams);
        j.field("pings_sent", fs.pings_sent).field("pongs", fs.pongs);
        j.field("send_cpu_ns", fs.send_cpu_ns).field("receive_cpu_ns", fs.receive_cpu_ns).field("window_ns", fs.window_ns).field("rcvbuf_bytes", fs.rcvbuf_bytes);
        j.field("updates_recorded", static_cast<std::int64_t>(fs.updates.size()));
        j.end_object();
        j.key("ping_rtt_ns").values(fs.ping_rtt_ns);
        j.end_object();
        j.key("policy_requested").begin_object().field("policy", jl::policy_name(o.policy.policy)).field("priority", o.policy.priority).end_object();
        j.key("pm_qos").begin_object().field("cpu_dma_latency_us", 0).field("obtained", pm_qos_error.empty()).field("error", pm_qos_error).end_object();
        j.key("mlock").begin_object().field("requested", o.mlock).field("obtained", o.mlock && mlock_error.empty()).field("error", mlock_error).end_object();
        jl::write_placements(j, placements);
        std::vector<jl::Warning> warnings;
        for (const auto& p : placements) jl::placement_warnings(warnings, p);
        if (!pm_qos_error.empty())
            warnings.push_back({"pm-qos-refused", "/dev/cpu_dma_latency could not be held at 0 (" + pm_qos_error +
                                                      "); idle vCPUs wake slowly and add generator lag"});
        jl::write_warnings(j, warnings);
        j.field("status", interrupted ? "partial" : "complete");
        j.field("partial_reason", interrupted ? std::string("interrupted by ") + jl::tool::signal_name() : std::string());
        j.field("started_realtime_ns", started_realtime).field("t_start_ns", schedule.t_measure_start).field("t_end_ns", t_end);
        j.key("floor").begin_object();
        jl::write_clock_overhead(j, clock);
        j.end_object();
        j.end_object();
        jl::tool::write_file_atomically(o.out_dir + "/harness.json", j.str());
        return interrupted ? 130 : 0;
    } catch (const rp::UsageProblem& e) {
        jl::tool::usage_error(kTool, e.what());
    } catch (const std::exception& e) {
        std::fprintf(stderr, "%s: %s\n", kTool, e.what());
        return 1;
    }
}
