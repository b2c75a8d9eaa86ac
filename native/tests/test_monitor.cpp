// The live recorder's ring: what is recorded is drained in order, a full ring drops and
// counts, several writers lose nothing, trials carry their tags.
#include <gtest/gtest.h>
#include <jitterlab/monitor.hpp>
#include <jitterlab/monitor_c.h>
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

std::string unique_channel(const char* what) { return std::string("gtest-") + what + "-" + std::to_string(getpid()); }

struct Channel {
  explicit Channel(const char* what, std::size_t capacity = 1024) : name(unique_channel(what)) {
    jl_monitor_unlink(name.c_str());
    char err[256] = {0};
    reader = jl_monitor_open(name.c_str(), capacity, err, sizeof err);
    EXPECT_NE(reader, nullptr) << err;
  }
  ~Channel() {
    jl_monitor_close(reader);
    jl_monitor_unlink(name.c_str());
  }
  std::vector<jl_monitor_event> drain(std::size_t max = 1 << 20) {
    std::vector<jl_monitor_event> out(max);
    out.resize(jl_monitor_drain(reader, out.data(), out.size(), 1'000'000'000));
    return out;
  }
  std::string name;
  jl_monitor* reader = nullptr;
};

TEST(Monitor, RecordsAreDrainedInOrder) {
  Channel ch("order");
  jitterlab::Monitor writer(ch.name);
  for (int i = 0; i < 100; ++i) ASSERT_TRUE(writer.span(i, i + 10 * i));
  const auto events = ch.drain();
  ASSERT_EQ(events.size(), 100u);
  for (int i = 0; i < 100; ++i) {
    EXPECT_EQ(events[i].kind, JL_MONITOR_SAMPLE);
    EXPECT_EQ(events[i].t_send_ns, i);
    EXPECT_EQ(events[i].t_recv_ns - events[i].t_send_ns, 10 * i);
  }
  EXPECT_TRUE(ch.drain().empty());
}

TEST(Monitor, RecordTakesTheEndFromTheClock) {
  Channel ch("clock");
  const std::int64_t before = jl_monitor_now_ns();
  jitterlab::Monitor writer(ch.name);
  ASSERT_TRUE(writer.record(5000));
  const auto events = ch.drain();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_GE(events[0].t_recv_ns, before);
  EXPECT_EQ(events[0].t_recv_ns - events[0].t_send_ns, 5000);
}

TEST(Monitor, AFullRingDropsAndCountsWithoutBlocking) {
  Channel ch("full", 64);
  jitterlab::Monitor writer(ch.name);
  int dropped = 0;
  for (int i = 0; i < 100; ++i) dropped += writer.span(0, i) ? 0 : 1;
  EXPECT_EQ(dropped, 36);
  EXPECT_EQ(writer.dropped(), 36u);
  EXPECT_EQ(ch.drain().size(), 64u);
  EXPECT_TRUE(writer.span(0, 1));  // room again after the drain
}

TEST(Monitor, SeveralWritersLoseNothingWhileTheReaderDrains) {
  Channel ch("threads", 4096);
  constexpr int kThreads = 4, kEach = 50'000;
  std::atomic<int> running{kThreads};
  std::vector<std::thread> writers;
  for (int t = 0; t < kThreads; ++t) {
    writers.emplace_back([&, t] {
      jitterlab::Monitor w(ch.name);
      for (int i = 0; i < kEach;) i += w.span(t, i) ? 1 : 0;  // retry a drop: every sample must arrive
      running.fetch_sub(1);
    });
  }
  std::vector<int> next(kThreads, 0);
  std::size_t total = 0;
  while (running.load() > 0 || total < static_cast<std::size_t>(kThreads * kEach)) {
    for (const auto& e : ch.drain(1024)) {
      ASSERT_EQ(e.t_recv_ns, next[e.t_send_ns]);  // each writer's order is kept
      ++next[e.t_send_ns];
      ++total;
    }
  }
  for (auto& w : writers) w.join();
  EXPECT_EQ(total, static_cast<std::size_t>(kThreads * kEach));
}

TEST(Monitor, TrialsCarryTheirTags) {
  Channel ch("trial");
  jitterlab::Monitor writer(ch.name);
  {
    auto trial = writer.trial("cond-A/p07");
    writer.span(1, 2);
  }
  EXPECT_THROW(writer.trial(std::string(JL_MONITOR_TAG_MAX + 1, 'x')), std::invalid_argument);
  const auto events = ch.drain();
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[0].kind, JL_MONITOR_TRIAL_BEGIN);
  EXPECT_EQ(std::string(events[0].tag, events[0].tag_len), "cond-A/p07");
  EXPECT_EQ(events[1].kind, JL_MONITOR_SAMPLE);
  EXPECT_EQ(events[2].kind, JL_MONITOR_TRIAL_END);
  // every event names its writer (marks in t_send_ns, samples in their tag's first 8 bytes)
  std::uint64_t sample_writer = 0;
  std::memcpy(&sample_writer, events[1].tag, sizeof sample_writer);
  EXPECT_EQ(sample_writer >> 32, static_cast<std::uint64_t>(getpid()));
  EXPECT_EQ(static_cast<std::uint64_t>(events[0].t_send_ns), sample_writer);
  EXPECT_EQ(static_cast<std::uint64_t>(events[2].t_send_ns), sample_writer);
  jitterlab::Monitor other(ch.name);  // a second handle is a second writer
  other.span(3, 4);
  const auto more = ch.drain();
  ASSERT_EQ(more.size(), 1u);
  std::uint64_t other_writer = 0;
  std::memcpy(&other_writer, more[0].tag, sizeof other_writer);
  EXPECT_NE(other_writer, sample_writer);
}

TEST(Monitor, BadChannelNamesAndCapacitiesAreRefused) {
  char err[256] = {0};
  EXPECT_EQ(jl_monitor_open("no/slash", 0, err, sizeof err), nullptr);
  EXPECT_NE(std::string(err).find("channel name"), std::string::npos);
  EXPECT_EQ(jl_monitor_open("ok-name", 1000, err, sizeof err), nullptr);
  EXPECT_NE(std::string(err).find("power of two"), std::string::npos);
}

TEST(Monitor, ARingWhoseHeaderClaimsAnImpossibleCapacityIsRefused) {
  // the header is read from a file: capacity 0 made the mask all ones and 2^58 slots
  // overflowed the size check to 0; either let drain read far outside the mapping
  for (const std::uint64_t capacity : {std::uint64_t{0}, std::uint64_t{1} << 58, std::uint64_t{32}}) {
    Channel ch("header", 64);
    const std::string path = "/dev/shm/jitterlab-monitor-" + ch.name;
    const int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(pwrite(fd, &capacity, sizeof capacity, 16), static_cast<ssize_t>(sizeof capacity));
    close(fd);
    char err[256] = {0};
    EXPECT_EQ(jl_monitor_open(ch.name.c_str(), 0, err, sizeof err), nullptr) << capacity;
    EXPECT_NE(std::string(err).find("not a jitterlab monitor ring"), std::string::npos) << err;
  }
}

TEST(Monitor, TheHintReachesTheOtherSide) {
  Channel ch("hint");
  jitterlab::Monitor writer(ch.name);
  char buffer[128] = {0};
  EXPECT_EQ(jl_monitor_hint(ch.reader, buffer, sizeof buffer), 0u);
  char err[64] = {0};
  jl_monitor* other = jl_monitor_open(ch.name.c_str(), 0, err, sizeof err);
  ASSERT_NE(other, nullptr);
  EXPECT_EQ(jl_monitor_set_hint(other, "baseline-run"), 0);
  EXPECT_EQ(jl_monitor_hint(ch.reader, buffer, sizeof buffer), 12u);
  EXPECT_EQ(std::string(buffer), "baseline-run");
  jl_monitor_close(other);
}

}  // namespace
