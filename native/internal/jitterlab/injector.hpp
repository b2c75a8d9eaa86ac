// The latency injection engine (thesis ch. 6 §7.1): a model loaded from a model file
// (docs/model-format.md), the availability schedule it implies, and a bounded queue that
// releases items when they are due. The Python reference is jitterlab.model.simulate_delays.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <limits>
#include <queue>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace jitterlab {

inline constexpr std::int64_t kNever = std::numeric_limits<std::int64_t>::max();

/// A model file that cannot be used; the message names the file and the field.
class ModelError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

/// xoshiro256** seeded through splitmix64: the same draws for the same seed everywhere.
class Rng {
public:
    explicit Rng(std::uint64_t seed) noexcept;
    std::uint64_t next() noexcept;
    /// Uniform in [0, 1) with 53 random bits.
    double uniform() noexcept { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

private:
    std::uint64_t s_[4];
};

/// A distribution as its quantile function sampled at p = (i + 0.5) / n, ascending, ns.
struct QuantileFunction {
    std::vector<double> values;
    /// Inverse-transform draw, linear between stored points (one value: no draw is used).
    double draw(Rng& rng) const noexcept;
};

struct SpikeCategory {
    int index = 0;
    QuantileFunction duration;      // added to the base delay when a spike is due
    QuantileFunction interarrival;  // time to this category's next spike
};

struct LatencyModel {
    bool sine = false;  // base = max(0, mean + amplitude * sin(2 pi t / period))
    double sine_mean_ns = 0, sine_amplitude_ns = 0, sine_period_ns = 1;
    QuantileFunction base;  // used when !sine
    std::vector<SpikeCategory> categories;

    double base_delay(std::int64_t t_ns, Rng& rng) const noexcept;

    /// Parses and checks a model document; `where` prefixes every error (usually the path).
    static LatencyModel parse(std::string_view json_text, const std::string& where);
    static LatencyModel load(const std::string& path);
    /// A model that adds nothing (a pass-through stage).
    static LatencyModel zero();

private:
    static LatencyModel parse_document(std::string_view json_text, const std::string& where);
};

/// The availability schedule: `available_at(t)` for items arriving at t, in arrival order.
/// Each item gets the base delay, plus a drawn spike duration for every category whose
/// spike is due; items leave in order (a spike holds back what queues behind it) unless
/// `reorder` gives every item its own delay.
class DelaySchedule {
public:
    DelaySchedule(LatencyModel model, std::uint64_t seed, bool reorder);
    std::int64_t available_at(std::int64_t arrival_ns);
    bool reorder() const noexcept { return reorder_; }

private:
    LatencyModel model_;
    Rng rng_;
    bool reorder_;
    bool started_ = false;
    std::vector<double> next_spike_;
    std::int64_t previous_ = std::numeric_limits<std::int64_t>::min();
};

/// A bounded queue of items released at their scheduled time. A full queue drops the
/// arriving item (and counts it) without touching the schedule: memory never grows past
/// `capacity` items.
template <typename T>
class DelayQueue {
public:
    struct Entry {
        std::int64_t available_at;
        std::uint64_t order;  // keeps equal times in arrival order
        std::int64_t arrival;
        T item;
        bool operator>(const Entry& other) const {
            return available_at != other.available_at ? available_at > other.available_at : order > other.order;
        }
    };

    DelayQueue(LatencyModel model, std::uint64_t seed, bool reorder, std::size_t capacity)
        : schedule_(std::move(model), seed, reorder), capacity_(capacity) {}

    /// Schedules `item`; returns its availability time, or -1 when the queue is full.
    std::int64_t push(std::int64_t arrival_ns, T item) {
        if (size() >= capacity_) {
            ++dropped_;
            return -1;
        }
        const std::int64_t at = schedule_.available_at(arrival_ns);
        Entry e{at, pushed_++, arrival_ns, std::move(item)};
        if (schedule_.reorder()) heap_.push(std::move(e));
        else fifo_.push_back(std::move(e));
        return at;
    }
    /// When the next item is due (kNever when empty).
    std::int64_t next_due() const {
        if (schedule_.reorder()) return heap_.empty() ? kNever : heap_.top().available_at;
        return fifo_.empty() ? kNever : fifo_.front().available_at;
    }
    /// Moves the next item due at or before `now` into `out`; false when none is due.
    bool pop_due(std::int64_t now, Entry& out) {
        if (next_due() > now) return false;
        if (schedule_.reorder()) {
            out = heap_.top();  // priority_queue gives only const access to its top
            heap_.pop();
        } else {
            out = std::move(fifo_.front());
            fifo_.pop_front();
        }
        return true;
    }
    std::size_t size() const { return schedule_.reorder() ? heap_.size() : fifo_.size(); }
    std::size_t capacity() const { return capacity_; }
    std::uint64_t dropped() const { return dropped_; }

private:
    DelaySchedule schedule_;
    std::size_t capacity_;
    std::uint64_t pushed_ = 0;
    std::uint64_t dropped_ = 0;
    std::deque<Entry> fifo_;
    std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> heap_;
};

/// Waits until CLOCK_MONOTONIC reaches `deadline_ns`: sleeps while more than `spin_ns`
/// remain, then spins, so the wake-up is accurate to about a microsecond.
void wait_until(std::int64_t deadline_ns, std::int64_t spin_ns = 60'000) noexcept;

/// Lowers this thread's timer slack to 1 ns, so sleeps end when asked (default: 50 us).
void tighten_timer_slack() noexcept;

}  // namespace jitterlab
