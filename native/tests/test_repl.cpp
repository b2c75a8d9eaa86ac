// The replication benchmark: its wire format, and a real server and client fleet on loopback.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "../repl/cpu_stat.hpp"
#include "../repl/endpoint.hpp"
#include "../repl/netns.hpp"
#include "jitterlab/clock.hpp"

namespace rp = jitterlab::repl;

TEST(ReplProtocol, PoseHeaderRoundTrips) {
    std::vector<std::byte> buf(rp::kPoseHeader);
    rp::write_pose_header(buf.data(), {rp::Kind::pose, 7, 42, rp::kPoseHeader, 123456789});
    rp::PoseHeader h;
    ASSERT_TRUE(rp::read_pose_header(buf, h));
    EXPECT_EQ(h.kind, rp::Kind::pose);
    EXPECT_EQ(h.client, 7);
    EXPECT_EQ(h.seq, 42u);
    EXPECT_EQ(h.t_send_ns, 123456789);
    buf[0] = std::byte{0};  // not our magic
    EXPECT_FALSE(rp::read_pose_header(buf, h));
    EXPECT_FALSE(rp::read_pose_header(std::span<const std::byte>(buf.data(), 10), h));  // cut short
}

TEST(ReplProtocol, DatagramsNeverExceed1200Bytes) {
    EXPECT_EQ(rp::kMaxPose, 1172u);
    EXPECT_EQ(rp::poses_per_datagram(144), 8u);  // 28 + 8 * 144 = 1180
    EXPECT_EQ(rp::poses_per_datagram(rp::kMaxPose), 1u);
    EXPECT_EQ(rp::datagrams_for(124, 144), 16u);
    EXPECT_EQ(rp::datagrams_for(0, 144), 0u);
}

TEST(ReplLoopback, EveryObserverGetsEveryOtherPose) {
    constexpr int kClients = 4, kObservers = 2;
    rp::Server server(kClients, 200, 144, "127.0.0.1", 0);
    const std::int64_t t0 = jitterlab::now_ns() + 20'000'000;
    const rp::Schedule schedule{t0, t0 + 100'000'000, t0 + 500'000'000, t0 + 650'000'000};
    rp::ClientFleet fleet(0, kClients, kClients, kObservers, 50, 144, "127.0.0.1", server.port(), schedule, 50'000'000);
    std::atomic<bool> stop{false};
    {
        std::jthread s([&] { server.run(schedule, stop); });
        std::jthread send([&] { fleet.send_loop(schedule, stop); });
        std::jthread receive([&] { fleet.receive_loop(schedule, stop); });
    }
    const auto& fs = fleet.stats();
    EXPECT_EQ(fs.poses_sent, kClients * 50 * 4 / 10);  // 0.4 s at 50 Hz
    // observers see the other 3 avatars' poses of the window (a pose near its end may still be in flight)
    EXPECT_GE(fs.updates.size(), static_cast<std::size_t>(kObservers * 3 * 20 - 6));
    for (const auto& u : fs.updates) {
        EXPECT_GT(u.t_recv_ns, u.t_send_ns);
        EXPECT_NE(u.pair % kClients, u.pair / kClients);  // nobody gets their own pose back
    }
    EXPECT_EQ(server.stats().pose_bytes_in, fs.bytes_out);
    // what the server read in its own window (issue 27 item 10): whole poses, about what was
    // sent (a pose sent just before the window may be read in it, one near its end after it)
    const auto& ss = server.stats();
    EXPECT_EQ(ss.pose_bytes_received, 144 * ss.pose_datagrams_received);
    EXPECT_GE(ss.pose_datagrams_received, fs.poses_sent / 2);
    EXPECT_LE(ss.pose_datagrams_received, fs.poses_sent + kClients);
    EXPECT_GT(fs.pongs, 0);
    // each pong carries the start of the tick that answered it: after the ping, before the pong was read
    ASSERT_EQ(fs.ping_tick_ns.size(), fs.ping_rtt_ns.size());
    ASSERT_EQ(fs.ping_send_ns.size(), fs.ping_rtt_ns.size());
    for (std::size_t i = 0; i < fs.ping_rtt_ns.size(); ++i) {
        EXPECT_GE(fs.ping_tick_ns[i], fs.ping_send_ns[i]);
        EXPECT_LE(fs.ping_tick_ns[i], fs.ping_send_ns[i] + fs.ping_rtt_ns[i]);
    }
    EXPECT_EQ(server.stats().bad_datagrams, 0);
    // every counted tick ran on some CPU; the thread's user + system time is its CPU time
    // (both from the scheduler's runtime; rusage rounds to microseconds)
    std::int64_t ticks = 0;
    for (const auto n : ss.ticks_on_cpu) ticks += n;
    EXPECT_EQ(ticks, static_cast<std::int64_t>(ss.tick_start_ns.size()));
    EXPECT_NEAR(static_cast<double>(ss.times.user_ns + ss.times.sys_ns), static_cast<double>(ss.cpu_ns), 5e6);
}

TEST(ReplLoopback, ClientsSplitAcrossFleetsAreOneFleet) {
    // issue 27 item 8: one fleet per node, each with its share of the clients; the observers
    // (in the first) see every other avatar, the fleets' sends interleave on one schedule
    constexpr int kClients = 5, kObservers = 2;
    rp::Server server(kClients, 200, 144, "127.0.0.1", 0);
    const std::int64_t t0 = jitterlab::now_ns() + 20'000'000;
    const rp::Schedule schedule{t0, t0 + 100'000'000, t0 + 500'000'000, t0 + 650'000'000};
    rp::ClientFleet a(0, 2, kClients, kObservers, 50, 144, "127.0.0.1", server.port(), schedule, 50'000'000);
    rp::ClientFleet b(2, 3, kClients, kObservers, 50, 144, "127.0.0.1", server.port(), schedule, 50'000'000);
    std::atomic<bool> stop{false};
    {
        std::jthread s([&] { server.run(schedule, stop); });
        std::jthread sa([&] { a.send_loop(schedule, stop); });
        std::jthread ra([&] { a.receive_loop(schedule, stop); });
        std::jthread sb([&] { b.send_loop(schedule, stop); });
        std::jthread rb([&] { b.receive_loop(schedule, stop); });
    }
    EXPECT_EQ(a.stats().poses_sent, 2 * 50 * 4 / 10);
    EXPECT_EQ(b.stats().poses_sent, 3 * 50 * 4 / 10);
    EXPECT_TRUE(b.stats().updates.empty());  // no observers there
    EXPECT_EQ(b.stats().pings_sent, 0);
    std::vector<int> seen(kClients * kClients, 0);
    for (const auto& u : a.stats().updates) ++seen[static_cast<std::size_t>(u.pair)];
    for (int observer = 0; observer < kObservers; ++observer)
        for (int avatar = 0; avatar < kClients; ++avatar)
            if (avatar != observer) {
                EXPECT_GE(seen[observer * kClients + avatar], 18) << observer << " sees " << avatar;
            }
    std::vector<rp::FleetStats*> both{&a.stats(), &b.stats()};
    const auto all = rp::combined(both);
    EXPECT_EQ(all.poses_sent, kClients * 50 * 4 / 10);
    EXPECT_EQ(server.stats().pose_bytes_in, all.bytes_out);
    EXPECT_EQ(all.lag_ns.size(), static_cast<std::size_t>(kClients * 50 * 4 / 10));
}

TEST(ReplNetns, AMissingNamespaceIsAUsageProblem) {
    EXPECT_THROW(rp::NetnsScope("jl-no-such-namespace-here"), rp::UsageProblem);
    EXPECT_THROW(rp::NetnsScope("../etc"), rp::UsageProblem);
    const rp::NetnsScope nothing("");  // an empty name changes nothing
}

TEST(ReplCpuStat, ParsesEveryCpuLineInNanoseconds) {
    const std::string text =
        "cpu  10 1 20 300 4 0 5 2 0 0\n"
        "cpu0 7 1 12 150 3 0 4 1 0 0\n"
        "cpu1 3 0 8 150 1 0 1 1 0 0\n"
        "intr 12345 0 0\n"
        "cpu2 broken\n"
        "ctxt 999\n";
    const auto cpus = rp::parse_proc_stat(text, 100);  // USER_HZ 100: one tick is 10 ms
    ASSERT_EQ(cpus.size(), 2u);
    EXPECT_EQ(cpus[0].cpu, 0);
    EXPECT_EQ(cpus[1].cpu, 1);
    EXPECT_EQ(cpus[0].ns[0], 70'000'000);   // user
    EXPECT_EQ(cpus[0].ns[2], 120'000'000);  // system
    EXPECT_EQ(cpus[0].ns[6], 40'000'000);   // softirq
    EXPECT_EQ(cpus[1].ns[7], 10'000'000);   // steal
    auto later = cpus;
    later[1].ns[6] += 30'000'000;
    later.erase(later.begin());  // a CPU gone offline is left out
    const auto d = rp::difference(cpus, later);
    ASSERT_EQ(d.size(), 1u);
    EXPECT_EQ(d[0].cpu, 1);
    EXPECT_EQ(d[0].ns[6], 30'000'000);
    EXPECT_EQ(d[0].ns[0], 0);
    EXPECT_TRUE(rp::parse_proc_stat(text, 0).empty());
}

TEST(ReplCpuStat, UserTimeIsSpinningAndSystemTimeIsSystemCalls) {
    // Until the thread has had 200 ms of CPU (not of wall time): the kernel attributes time
    // by ticks, so a thread that a loaded machine let run only briefly would have too few
    // ticks to tell user from system time (a fresh-clone CI failure at load 9).
    auto spin = [](auto body) {
        const auto t0 = rp::thread_times();
        const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
        for (;;) {
            body();
            const auto used = rp::thread_times() - t0;
            if (used.user_ns + used.sys_ns >= 200'000'000 || std::chrono::steady_clock::now() > give_up) {
                return used;
            }
        }
    };
    volatile std::uint64_t x = 0;
    const auto user = spin([&] {
        for (int k = 0; k < 100000; ++k) x = x + 1;
    });
    // reading /dev/zero: the kernel clears the buffer, nearly all of it system time
    const int zero = ::open("/dev/zero", O_RDONLY | O_CLOEXEC);
    ASSERT_GE(zero, 0);
    std::vector<char> buffer(1 << 20);
    const auto sys = spin([&] { [[maybe_unused]] auto n = ::read(zero, buffer.data(), buffer.size()); });
    ::close(zero);
    EXPECT_GT(user.user_ns, user.sys_ns);
    EXPECT_GT(sys.sys_ns, sys.user_ns);
    EXPECT_FALSE(rp::read_proc_stat().empty());
}
