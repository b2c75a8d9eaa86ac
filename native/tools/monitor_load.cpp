// jitterlab-monitor-load: records samples into a monitor channel at a set rate, as an
// application would, and measures what one record costs (benchmarks/monitor_overhead.py,
// tests). Prints one JSON object on stdout.
#include <jitterlab/monitor_c.h>
#include <x86intrin.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "../src/tool_util.hpp"

namespace {

constexpr const char* kTool = "jitterlab-monitor-load";
std::uint64_t tsc() {
  _mm_lfence();
  const std::uint64_t t = __rdtsc();
  _mm_lfence();
  return t;
}

double tsc_per_ns() {
  const std::int64_t c0 = jl_monitor_now_ns();
  const std::uint64_t t0 = tsc();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const std::int64_t c1 = jl_monitor_now_ns();
  const std::uint64_t t1 = tsc();
  return static_cast<double>(t1 - t0) / static_cast<double>(c1 - c0);
}

double percentile(std::vector<std::uint64_t>& v, double p) {
  if (v.empty()) return 0;
  const auto k = static_cast<std::size_t>(p * static_cast<double>(v.size() - 1));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
  return static_cast<double>(v[k]);
}

}  // namespace

int main(int argc, char** argv) {
  using namespace jitterlab;
  std::string channel, trial;
  std::int64_t count = 1'000'000, rate = 0, latency = 1'000'000, jitter = 0, seed = 1;
  bool cost = false;
  tool::Option samples =
      tool::int_option("--samples", "N", "samples to record (default 1000000; old spelling --count)", count, 1, 2'000'000'000);
  samples.old = "--count";
  tool::read_options(kTool, argc, argv, "--channel NAME [options]",
                     "Records synthetic samples into a monitor channel: a load for jitterlab monitor serve.",
                     {
                         tool::text_option("--channel", "NAME", "the monitor channel", channel),
                         samples,
                         tool::int_option("--rate", "HZ", "samples per second, paced (0: as fast as possible; default 0)",
                                          rate, 0, 100'000'000),
                         tool::int_option("--latency-ns", "L", "the latency recorded (default 1000000)", latency, 0,
                                          INT64_MAX / 4),
                         tool::int_option("--jitter-ns", "S", "normal jitter SD added to it (default 0)", jitter, 0,
                                          INT64_MAX / 4),
                         tool::text_option("--trial", "TAG", "record the samples inside a trial with this tag", trial),
                         tool::switch_option("--cost", "time every call with the TSC: record (with its clock read) and span",
                                             cost),
                         tool::int_option("--seed", "S", "seed of the jitter (default 1)", seed, 0, INT64_MAX),
                     });
  if (channel.empty()) tool::usage_error(kTool, "--channel is required");
  tool::install_signal_handlers();
  char err[256] = {0};
  jl_monitor* m = jl_monitor_open(channel.c_str(), 0, err, sizeof err);
  if (!m) tool::usage_error(kTool, err);
  if (!trial.empty() && jl_monitor_trial_begin(m, trial.c_str()) < 0) tool::usage_error(kTool, "--trial: tag too long");
  std::mt19937_64 rng(static_cast<std::uint64_t>(seed));
  std::normal_distribution<double> noise(0.0, static_cast<double>(jitter));
  std::vector<std::uint64_t> costs, span_costs;
  if (cost) {
    costs.reserve(static_cast<std::size_t>(count) / 2 + 1);
    span_costs.reserve(static_cast<std::size_t>(count) / 2 + 1);
  }
  const double per_ns = cost ? tsc_per_ns() : 1.0;
  std::uint64_t empty = cost ? ~0ULL : 0;  // the cost of the timing itself: the least of empty pairs
  for (int i = 0; cost && i < 10'000; ++i) {
    const std::uint64_t a = tsc();
    const std::uint64_t b = tsc();
    empty = std::min(empty, b - a);
  }
  std::int64_t dropped = 0, done = 0;
  const std::int64_t start = jl_monitor_now_ns();
  for (; done < count && !tool::g_signal; ++done) {
    if (rate > 0) {
      const std::int64_t due = start + done * 1'000'000'000 / rate;
      while (jl_monitor_now_ns() < due) {
      }
    }
    const std::int64_t value = jitter ? std::max<std::int64_t>(0, latency + static_cast<std::int64_t>(noise(rng))) : latency;
    if (cost) {
      // even calls: record (takes the clock); odd calls: span (the caller has both times,
      // like HdrHistogram's record of a value it is given)
      const bool with_clock = done % 2 == 0;
      const std::int64_t end = start + done;
      const std::uint64_t t0 = tsc();
      dropped += with_clock ? jl_monitor_record(m, value) : jl_monitor_span(m, end - value, end);
      const std::uint64_t t1 = tsc();
      (with_clock ? costs : span_costs).push_back(t1 - t0 > empty ? t1 - t0 - empty : 0);
    } else {
      dropped += jl_monitor_record(m, value);
    }
  }
  const std::int64_t seconds_ns = jl_monitor_now_ns() - start;
  if (!trial.empty()) jl_monitor_trial_end(m);
  std::printf("{\"recorded\": %lld, \"dropped\": %lld, \"seconds\": %.6f, \"rate\": %.1f",
              static_cast<long long>(done - dropped), static_cast<long long>(dropped), seconds_ns / 1e9,
              done / (seconds_ns / 1e9));
  if (cost) {
    auto ns = [&](double ticks) { return ticks / per_ns; };
    std::printf(", \"cost_p50_ns\": %.2f, \"cost_p99_ns\": %.2f, \"cost_p999_ns\": %.2f",
                ns(percentile(costs, 0.5)), ns(percentile(costs, 0.99)), ns(percentile(costs, 0.999)));
    std::printf(", \"span_p50_ns\": %.2f, \"span_p99_ns\": %.2f, \"span_p999_ns\": %.2f",
                ns(percentile(span_costs, 0.5)), ns(percentile(span_costs, 0.99)), ns(percentile(span_costs, 0.999)));
    std::vector<std::uint64_t> clock_costs;  // the clock read alone, for comparison
    for (int i = 0; i < 100'000; ++i) {
      const std::uint64_t t0 = tsc();
      (void)jl_monitor_now_ns();
      const std::uint64_t t1 = tsc();
      clock_costs.push_back(t1 - t0 > empty ? t1 - t0 - empty : 0);
    }
    std::printf(", \"clock_p50_ns\": %.2f, \"clock_p99_ns\": %.2f", ns(percentile(clock_costs, 0.5)),
                ns(percentile(clock_costs, 0.99)));
  }
  std::printf(", \"ring_dropped_total\": %llu}\n", static_cast<unsigned long long>(jl_monitor_dropped(m)));
  jl_monitor_close(m);
  return 0;
}
