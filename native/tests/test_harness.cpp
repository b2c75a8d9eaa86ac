#include <gtest/gtest.h>

#include <thread>

#include <set>

#include "../bench/harness.hpp"
#include "../bench/techniques.hpp"

using namespace jitterlab;

namespace {

HarnessConfig small_config(const std::string& technique, int pairs) {
    HarnessConfig c;
    c.technique = technique;
    c.pairs = pairs;
    c.samples = 2000;
    c.warmup = 50;
    c.block_ints = 4096;
    c.mlock = false;
    return c;
}

}  // namespace

class EveryThreadTechnique : public ::testing::TestWithParam<std::string> {};

// Each technique delivers every sample of every pair, in order, with positive latency.
TEST_P(EveryThreadTechnique, RecordsEverySampleWithPositiveLatency) {
    const auto cfg = small_config(GetParam(), 2);
    RunState state(cfg);
    run_threaded(state);
    EXPECT_EQ(state.error(), "");
    for (const auto& r : state.recorders) {
        ASSERT_EQ(r->recorded.load(), cfg.samples);
        for (const auto& s : r->samples) {
            ASSERT_GT(s.t_recv_ns, s.t_send_ns);
        }
        for (std::size_t i = 1; i < r->samples.size(); ++i) ASSERT_GT(r->samples[i].t_send_ns, r->samples[i - 1].t_recv_ns - 1);
    }
}

INSTANTIATE_TEST_SUITE_P(Techniques, EveryThreadTechnique,
                         ::testing::Values("mutex", "spin", "spsc", "futex", "pipe", "unix"));

TEST(Harness, StopRequestEndsTheRunEarlyAndKeepsSamples) {
    auto cfg = small_config("futex", 1);
    cfg.samples = 100'000'000 / 100;  // far more than the test waits for
    RunState state(cfg);
    std::jthread stopper([&] {
        while (state.recorded_total() < 100) std::this_thread::yield();
        state.stop_requested = true;
    });
    run_threaded(state);
    const auto recorded = state.recorded_total();
    EXPECT_GE(recorded, 100);
    EXPECT_LT(recorded, cfg.samples);
}

TEST(Harness, SpinningOversubscriptionFallsBackToYield) {
    auto cfg = small_config("spin", 8);  // 16 spinning threads on a small machine
    cfg.samples = 200;
    RunState state(cfg);
    run_threaded(state);
    if (allowed_cpus().size() < 16) {
        EXPECT_EQ(state.spin_mode, SpinMode::yield);
        EXPECT_FALSE(state.spin_fallback_reason.empty());
    }
    EXPECT_EQ(state.recorded_total(), 8 * 200);
}

TEST(Harness, CompactPinningPutsAPairOnOneCpu) {
    const std::vector<int> allowed = {0, 1};
    const auto plan = plan_cpus("compact", 4, allowed);
    EXPECT_EQ(plan[0], plan[1]);
    EXPECT_EQ(plan[2], plan[3]);
    const auto spread = plan_cpus("spread", 2, allowed);
    EXPECT_NE(spread[0], spread[1]);
    EXPECT_EQ(plan_cpus("1,0", 2, allowed)[0], std::vector<int>{1});
    EXPECT_THROW(plan_cpus("x", 2, allowed), std::invalid_argument);
}

TEST(Harness, RefusedPolicyIsAWarningNotAFailure) {
    auto cfg = small_config("mutex", 1);
    cfg.samples = 100;
    cfg.policy.policy = Policy::fifo;
    cfg.policy.priority = 99;
    RunState state(cfg);
    run_threaded(state);
    EXPECT_EQ(state.error(), "");
    EXPECT_EQ(state.recorded_total(), 100);
    for (const auto& p : state.placements()) {
        if (p.policy_error.empty()) EXPECT_EQ(p.policy, "fifo");
        else EXPECT_EQ(p.policy, "other");
    }
}

// One registry holds every technique, including the actor one and the floor: none is
// special-cased by name outside it.
TEST(Registry, HoldsEveryTechniqueOnceWithItsKind) {
    std::set<std::string> names;
    for (const auto& t : techniques()) {
        EXPECT_TRUE(names.insert(t.info.name).second) << t.info.name << " listed twice";
        if (t.kind == TechniqueKind::threads) {
            EXPECT_TRUE(t.make) << t.info.name;
        }
        if (t.kind == TechniqueKind::actors) {
            EXPECT_TRUE(t.run) << t.info.name;
        }
        if (!t.available) {
            EXPECT_FALSE(t.unavailable_reason.empty()) << t.info.name;
        }
    }
    ASSERT_NE(find_technique("caf"), nullptr);
    EXPECT_EQ(find_technique("caf")->kind, TechniqueKind::actors);
    ASSERT_NE(find_technique("c2c"), nullptr);
    EXPECT_EQ(find_technique("c2c")->kind, TechniqueKind::floor);
    EXPECT_EQ(find_technique("nosuch"), nullptr);
    EXPECT_EQ(thread_techniques().size(), 6u);
}
