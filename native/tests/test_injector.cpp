// The injection engine: model checking, the availability schedule's semantics, bounds.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "jitterlab/injector.hpp"

namespace jl = jitterlab;

namespace {

/// Base 1 ms; one spike category of 5 ms every 10 ms (both deterministic).
jl::LatencyModel spiky() {
    return jl::LatencyModel::parse(R"({"kind":"jitterlab.model","schema_version":1,
        "base":{"kind":"quantiles","quantiles_ns":[1000000]},
        "categories":[{"category":1,"rate_hz":100,"duration_quantiles_ns":[5000000],
                       "interarrival_quantiles_ns":[10000000]}]})",
                                   "test");
}

std::string model_error(const std::string& text) {
    try {
        jl::LatencyModel::parse(text, "m.json");
    } catch (const jl::ModelError& e) {
        return e.what();
    }
    return "";
}

}  // namespace

TEST(Injector, SpikeHoldsBackTheItemsBehindIt) {
    jl::DelaySchedule schedule(spiky(), 1, false);
    std::vector<std::int64_t> delays;
    for (std::int64_t t = 0; t <= 14'000'000; t += 1'000'000) delays.push_back(schedule.available_at(t) - t);
    // Items at 0..9 ms: base only. At 10 ms the spike is due: 1 + 5 ms; the items queued
    // behind it leave no earlier than it does: 5, 4, 3, 2 ms, then back to the base.
    const std::vector<std::int64_t> want = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 6, 5, 4, 3, 2};
    ASSERT_EQ(delays.size(), want.size());
    for (std::size_t i = 0; i < want.size(); ++i) EXPECT_EQ(delays[i], want[i] * 1'000'000) << "item " << i;
}

TEST(Injector, ReorderGivesEveryItemItsOwnDelay) {
    jl::DelayQueue<int> queue(spiky(), 1, true, 100);
    for (int i = 0; i <= 12; ++i) queue.push(i * 1'000'000LL, i);
    // Item 10 waits 6 ms (due at 16 ms); items 11 and 12 are due at 12 and 13 ms and overtake it.
    std::vector<int> order;
    jl::DelayQueue<int>::Entry e{};
    while (queue.pop_due(jl::kNever - 1, e)) order.push_back(e.item);
    EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 12, 10}));
}

TEST(Injector, PopReleasesOnlyWhatIsDueInOrder) {
    jl::DelayQueue<int> queue(spiky(), 1, false, 100);
    for (int i = 0; i < 5; ++i) queue.push(i * 100LL, i);
    jl::DelayQueue<int>::Entry e{};
    EXPECT_FALSE(queue.pop_due(999'999, e));
    EXPECT_EQ(queue.next_due(), 1'000'000);
    ASSERT_TRUE(queue.pop_due(1'000'250, e));
    EXPECT_EQ(e.item, 0);
    ASSERT_TRUE(queue.pop_due(1'000'250, e));
    EXPECT_EQ(e.item, 1);
    ASSERT_TRUE(queue.pop_due(1'000'250, e));
    EXPECT_EQ(e.item, 2);
    EXPECT_FALSE(queue.pop_due(1'000'250, e));
    EXPECT_EQ(queue.size(), 2u);
}

TEST(Injector, FullQueueDropsAndCountsWithoutGrowing) {
    jl::DelayQueue<int> queue(spiky(), 1, false, 3);
    for (int i = 0; i < 10; ++i) queue.push(i, i);
    EXPECT_EQ(queue.size(), 3u);
    EXPECT_EQ(queue.dropped(), 7u);
}

TEST(Injector, SameSeedSameDrawsAndDrawsStayInsideTheQuantiles) {
    const auto model = jl::LatencyModel::parse(R"({"kind":"jitterlab.model","schema_version":1,
        "base":{"kind":"quantiles","quantiles_ns":[100,200,400]},"categories":[]})",
                                               "test");
    jl::DelaySchedule a(model, 42, true), b(model, 42, true), c(model, 43, true);
    bool differs = false;
    for (std::int64_t t = 0; t < 1000; ++t) {
        const auto da = a.available_at(t * 1000) - t * 1000;
        EXPECT_EQ(da, b.available_at(t * 1000) - t * 1000);
        differs |= da != c.available_at(t * 1000) - t * 1000;
        EXPECT_GE(da, 100);
        EXPECT_LE(da, 400);
    }
    EXPECT_TRUE(differs);
}

TEST(Injector, SineBaseFollowsThePeriod) {
    const auto model = jl::LatencyModel::parse(R"({"kind":"jitterlab.model","schema_version":1,
        "base":{"kind":"sine","mean_ns":1000,"amplitude_ns":500,"period_ns":4000}})",
                                               "test");
    jl::DelaySchedule schedule(model, 0, true);
    EXPECT_EQ(schedule.available_at(0), 1000);
    EXPECT_EQ(schedule.available_at(1000) - 1000, 1500);
    EXPECT_EQ(schedule.available_at(3000) - 3000, 500);
}

TEST(Injector, BadModelsNameTheFieldInOneLine) {
    EXPECT_EQ(model_error("{"), "m.json: not JSON");
    EXPECT_EQ(model_error(R"({"kind":"other","schema_version":1})"),
              "m.json: not a jitterlab model (kind must be 'jitterlab.model')");
    EXPECT_EQ(model_error(R"({"kind":"jitterlab.model","schema_version":1,"base":{"kind":"quantiles","quantiles_ns":[3,2]}})"),
              "m.json: base.quantiles_ns is not monotone (quantiles must not decrease)");
    EXPECT_EQ(model_error(R"({"kind":"jitterlab.model","schema_version":1,"base":{"kind":"quantiles","quantiles_ns":[-1]}})"),
              "m.json: base.quantiles_ns holds a negative value");
    EXPECT_EQ(model_error(R"({"kind":"jitterlab.model","schema_version":2,"base":{}})"), "m.json: schema_version is not 1");
    EXPECT_EQ(model_error(R"({"kind":"jitterlab.model","schema_version":1,"base":{"kind":"quantiles","quantiles_ns":[1]},
        "categories":[{"rate_hz":1,"duration_quantiles_ns":[1],"interarrival_quantiles_ns":[0]}]})"),
              "m.json: categories[0].interarrival_quantiles_ns must not be all zero");
}

// Seeded mutations of a valid model (run under the sanitizer build in CI; the long run is
// benchmarks/fuzz_native.sh): each is accepted or refused with ModelError, nothing else.
TEST(Injector, MutatedModelsAreAcceptedOrRefusedNeverAnythingElse) {
    const std::string valid = R"({"kind":"jitterlab.model","schema_version":1,"base":{"kind":"quantiles","quantiles_ns":[1000,2000,3000]},
        "categories":[{"category":1,"rate_hz":2.5,"count":3,"share":0.1,"duration_quantiles_ns":[5000,9000],"interarrival_quantiles_ns":[1e8,4e8]}]})";
    const std::vector<std::string> odd = {"null", "true", "\"x\"", "-1", "1e400", "[]", "{}", "[5]", "\"1\"", "0.5"};
    std::uint64_t state = 42;
    auto next = [&state](std::uint64_t n) {
        state = state * 6364136223846793005ULL + 1442695040888963407ULL;
        return (state >> 33) % n;
    };
    int accepted = 0, refused = 0;
    for (int i = 0; i < 5000; ++i) {
        std::string text = valid;
        for (std::uint64_t k = 0, edits = 1 + next(3); k < edits; ++k) {
            const std::size_t at = next(text.size() + 1);
            switch (next(4)) {
                case 0: if (at < text.size()) text[at] = static_cast<char>(next(256)); break;
                case 1: if (at < text.size()) text.erase(at, 1 + next(8)); break;
                case 2: text.insert(at, odd[next(odd.size())]); break;
                default: text.resize(at); break;
            }
        }
        try {
            auto model = jitterlab::LatencyModel::parse(text, "m.json");
            jitterlab::DelaySchedule schedule(std::move(model), 1, false);
            for (std::int64_t t = 0; t < 16; ++t) (void)schedule.available_at(t * 1'000'000);
            ++accepted;
        } catch (const jitterlab::ModelError&) {
            ++refused;
        }
    }
    EXPECT_GT(refused, 0);
    EXPECT_GT(accepted + refused, 4999);
}
