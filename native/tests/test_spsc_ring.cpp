#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>
#include <thread>

#include "jitterlab/spsc_ring.hpp"

using jitterlab::SpscRing;

TEST(SpscRing, FifoOrderSingleThread) {
    SpscRing<int, 4> ring;
    EXPECT_FALSE(ring.try_pop().has_value());
    for (int i = 0; i < 4; ++i) EXPECT_TRUE(ring.try_push(i));
    EXPECT_FALSE(ring.try_push(99)) << "a full ring must refuse";
    for (int i = 0; i < 4; ++i) EXPECT_EQ(ring.try_pop().value(), i);
    EXPECT_FALSE(ring.try_pop().has_value());
}

TEST(SpscRing, WrapsAroundManyTimes) {
    SpscRing<std::uint64_t, 8> ring;
    for (std::uint64_t i = 0; i < 1000; ++i) {
        ASSERT_TRUE(ring.try_push(i));
        ASSERT_EQ(ring.try_pop().value(), i);
    }
}

// Under real concurrency every value arrives exactly once and in order.
TEST(SpscRing, ConcurrentProducerConsumerKeepsOrderAndLosesNothing) {
    constexpr std::uint64_t kCount = 2'000'000;
    SpscRing<std::uint64_t, 64> ring;
    std::uint64_t sum = 0;
    bool in_order = true;
    std::thread consumer([&] {
        std::uint64_t expected = 0;
        while (expected < kCount) {
            if (auto v = ring.try_pop()) {
                in_order &= (*v == expected);
                sum += *v;
                ++expected;
            } else {
                std::this_thread::yield();
            }
        }
    });
    for (std::uint64_t i = 0; i < kCount; ++i)
        while (!ring.try_push(i)) std::this_thread::yield();
    consumer.join();
    EXPECT_TRUE(in_order);
    EXPECT_EQ(sum, kCount * (kCount - 1) / 2);
}

// One cache-line transfer per message (issue 27 item 11): the consumer reads a slot and never
// writes it back, so the producer never has to fetch the line before it writes the next lap.
TEST(SpscRing, ConsumerNeverWritesASlot) {
    SpscRing<std::uint64_t, 4> ring;
    for (std::uint64_t lap = 0; lap < 3; ++lap) {
        for (std::uint64_t i = 0; i < 4; ++i) ASSERT_TRUE(ring.try_push(lap * 4 + i));
        std::vector<unsigned char> before(ring.slot_bytes_size());
        std::memcpy(before.data(), ring.slot_bytes(), before.size());
        for (std::uint64_t i = 0; i < 4; ++i) ASSERT_EQ(ring.try_pop().value(), lap * 4 + i);
        EXPECT_EQ(std::memcmp(before.data(), ring.slot_bytes(), before.size()), 0) << "lap " << lap;
    }
}

// The producer sees a full ring only through the consumer's published index: after the
// consumer frees one slot, exactly one more push succeeds.
TEST(SpscRing, FullUntilTheConsumerPublishesItsIndex) {
    SpscRing<int, 2> ring;
    EXPECT_TRUE(ring.try_push(1));
    EXPECT_TRUE(ring.try_push(2));
    EXPECT_FALSE(ring.try_push(3));
    EXPECT_EQ(ring.try_pop().value(), 1);
    EXPECT_TRUE(ring.try_push(3));
    EXPECT_FALSE(ring.try_push(4));
    EXPECT_EQ(ring.try_pop().value(), 2);
    EXPECT_EQ(ring.try_pop().value(), 3);
    EXPECT_FALSE(ring.try_pop().has_value());
}
