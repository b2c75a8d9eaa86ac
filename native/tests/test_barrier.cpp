#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "jitterlab/barrier.hpp"

using jitterlab::RoundBarrier;

class EveryWaitMode : public ::testing::TestWithParam<jitterlab::WaitMode> {};

// No waiter leaves round k before every participant has arrived in round k.
TEST_P(EveryWaitMode, NobodyPassesBeforeAllArrive) {
    constexpr int kThreads = 6;
    constexpr int kRounds = 2000;
    RoundBarrier barrier(kThreads, nullptr, GetParam());
    std::vector<std::atomic<int>> arrived(kRounds);
    std::atomic<bool> violated{false};
    std::vector<std::jthread> threads;
    for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back([&] {
            for (int r = 0; r < kRounds; ++r) {
                arrived[r].fetch_add(1);
                ASSERT_TRUE(barrier.arrive_and_wait());
                if (arrived[r].load() != kThreads) violated = true;
            }
        });
    }
    threads.clear();
    EXPECT_FALSE(violated.load());
}

INSTANTIATE_TEST_SUITE_P(Modes, EveryWaitMode,
                         ::testing::Values(jitterlab::WaitMode::block, jitterlab::WaitMode::yield));

// Receivers arrive without waiting; the round still needs them.
TEST(RoundBarrier, ArriveWithoutWaitingCountsTowardsTheRound) {
    RoundBarrier barrier(2);
    std::atomic<bool> passed{false};
    std::jthread waiter([&] {
        barrier.arrive_and_wait();
        passed = true;
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_FALSE(passed.load()) << "one of two participants must not complete the round";
    barrier.arrive();
    waiter.join();
    EXPECT_TRUE(passed.load());
}

TEST(RoundBarrier, StopIsSeenByEveryWaiterOfTheSameRound) {
    constexpr int kThreads = 4;
    std::atomic<bool> stop{false};
    RoundBarrier barrier(kThreads, &stop);
    std::atomic<int> saw_stop{0};
    std::vector<std::jthread> threads;
    for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back([&, t] {
            for (int r = 0;; ++r) {
                if (t == 0 && r == 100) stop = true;
                if (!barrier.arrive_and_wait()) {
                    saw_stop.fetch_add(1);
                    return;
                }
            }
        });
    }
    threads.clear();
    EXPECT_EQ(saw_stop.load(), kThreads);
}
