// The injection engine: model loading and checking, the availability schedule, waiting,
// and the C API.
#include "jitterlab/injector.hpp"

#include <sys/prctl.h>
#include <time.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "jitterlab/clock.hpp"
#include "jitterlab/injector_c.h"

namespace jitterlab {

namespace {

std::uint64_t splitmix64(std::uint64_t& x) noexcept {
    std::uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

std::uint64_t rotl(std::uint64_t x, int k) noexcept { return (x << k) | (x >> (64 - k)); }

using json = nlohmann::json;

[[noreturn]] void fail(const std::string& where, const std::string& what) { throw ModelError(where + ": " + what); }

constexpr double kMinMeanGapNs = 1000.0;

QuantileFunction quantiles(const json& value, const std::string& what, const std::string& where) {
    if (!value.is_array() || value.empty()) fail(where, what + " must be a non-empty list of numbers");
    constexpr std::size_t kMaxPoints = 1'000'000;  // the Python validator has the same bound
    if (value.size() > kMaxPoints) fail(where, what + " has too many points (at most 1000000)");
    QuantileFunction q;
    q.values.reserve(value.size());
    for (const auto& v : value) {
        if (!v.is_number()) fail(where, what + " must be a list of numbers");
        const double x = v.get<double>();
        if (!std::isfinite(x)) fail(where, what + " holds a value that is not finite");
        if (x < 0) fail(where, what + " holds a negative value");
        if (!q.values.empty() && x < q.values.back())
            fail(where, what + " is not monotone (quantiles must not decrease)");
        q.values.push_back(x);
    }
    return q;
}

double number(const json& object, const char* key, const std::string& where, const std::string& what) {
    const auto it = object.find(key);
    if (it == object.end() || !it->is_number()) fail(where, what);
    return it->get<double>();
}

}  // namespace

Rng::Rng(std::uint64_t seed) noexcept {
    for (auto& word : s_) word = splitmix64(seed);
}

std::uint64_t Rng::next() noexcept {
    const std::uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const std::uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
}

double QuantileFunction::draw(Rng& rng) const noexcept {
    const std::size_t n = values.size();
    if (n == 1) return values[0];
    // Position u*n - 0.5 between the stored points, clamped at both ends (numpy.interp).
    const double position = rng.uniform() * static_cast<double>(n) - 0.5;
    if (position <= 0) return values.front();
    if (position >= static_cast<double>(n - 1)) return values.back();
    const auto i = static_cast<std::size_t>(position);
    const double frac = position - static_cast<double>(i);
    return values[i] + frac * (values[i + 1] - values[i]);
}

double LatencyModel::base_delay(std::int64_t t_ns, Rng& rng) const noexcept {
    if (sine) {
        constexpr double kTwoPi = 6.283185307179586;
        return std::max(0.0, sine_mean_ns + sine_amplitude_ns * std::sin(kTwoPi * static_cast<double>(t_ns) / sine_period_ns));
    }
    return base.draw(rng);
}

LatencyModel LatencyModel::parse(std::string_view json_text, const std::string& where) {
    try {
        return parse_document(json_text, where);
    } catch (const json::exception& e) {  // a field of the wrong JSON type
        throw ModelError(where + ": " + e.what());
    }
}

LatencyModel LatencyModel::parse_document(std::string_view json_text, const std::string& where) {
    const json doc = json::parse(json_text, nullptr, false);
    if (doc.is_discarded()) fail(where, "not JSON");
    if (!doc.is_object() || doc.value("kind", "") != "jitterlab.model")
        fail(where, "not a jitterlab model (kind must be 'jitterlab.model')");
    if (!doc.contains("schema_version") || doc["schema_version"] != 1) fail(where, "schema_version is not 1");
    LatencyModel m;
    const json base = doc.value("base", json::object());
    const std::string kind = base.is_object() ? base.value("kind", "") : "";
    if (kind == "sine") {
        const std::string need = "a sine base needs mean_ns, amplitude_ns and period_ns";
        m.sine = true;
        m.sine_mean_ns = number(base, "mean_ns", where, need);
        m.sine_amplitude_ns = number(base, "amplitude_ns", where, need);
        m.sine_period_ns = number(base, "period_ns", where, need);
        if (m.sine_mean_ns < 0 || m.sine_period_ns <= 0) fail(where, "a sine base needs mean_ns >= 0 and period_ns > 0");
    } else if (kind == "quantiles") {
        m.base = quantiles(base.value("quantiles_ns", json()), "base.quantiles_ns", where);
    } else {
        fail(where, "base.kind must be 'quantiles' or 'sine'");
    }
    const json categories = doc.value("categories", json::array());
    if (!categories.is_array()) fail(where, "categories must be a list");
    for (std::size_t n = 0; n < categories.size(); ++n) {
        const json& c = categories[n];
        const std::string label = "categories[" + std::to_string(n) + "]";
        if (!c.is_object()) fail(where, label + " must be an object");
        const auto rate = c.find("rate_hz");
        if (rate == c.end() || !rate->is_number() || !std::isfinite(rate->get<double>()) || rate->get<double>() < 0)
            fail(where, label + ".rate_hz must be a number >= 0");
        for (const char* key : {"category", "count"})
            if (c.contains(key) && !c[key].is_number_integer()) fail(where, label + ": " + key + " must be an integer");
        if (c.contains("share") && !c["share"].is_number()) fail(where, label + ": share must be a number");
        SpikeCategory category;
        category.index = c.value("category", static_cast<int>(n) + 1);
        category.duration = quantiles(c.value("duration_quantiles_ns", json()), label + ".duration_quantiles_ns", where);
        category.interarrival =
            quantiles(c.value("interarrival_quantiles_ns", json()), label + ".interarrival_quantiles_ns", where);
        if (category.interarrival.values.back() <= 0)
            fail(where, label + ".interarrival_quantiles_ns must not be all zero");
        double sum = 0;
        for (double v : category.interarrival.values) sum += v;
        // Spikes closer than 1 µs on average are no model of a system, and would keep the
        // schedule drawing gaps instead of releasing items (the Python validator agrees).
        if (sum / static_cast<double>(category.interarrival.values.size()) < kMinMeanGapNs)
            fail(where, label + ".interarrival_quantiles_ns must average at least 1 us");
        m.categories.push_back(std::move(category));
    }
    return m;
}

LatencyModel LatencyModel::load(const std::string& path) {
    std::ifstream in(path);
    if (!in) fail(path, "cannot read the model file");
    std::ostringstream text;
    text << in.rdbuf();
    return parse(text.str(), path);
}

LatencyModel LatencyModel::zero() {
    LatencyModel m;
    m.base.values = {0.0};
    return m;
}

DelaySchedule::DelaySchedule(LatencyModel model, std::uint64_t seed, bool reorder)
    : model_(std::move(model)), rng_(seed), reorder_(reorder) {}

std::int64_t DelaySchedule::available_at(std::int64_t arrival_ns) {
    const double now = static_cast<double>(arrival_ns);
    if (!started_) {  // the first spike of each category is due one drawn gap after the first item
        started_ = true;
        for (const auto& c : model_.categories) next_spike_.push_back(now + c.interarrival.draw(rng_));
    }
    double delay = model_.base_delay(arrival_ns, rng_);
    for (std::size_t k = 0; k < model_.categories.size(); ++k) {
        if (now >= next_spike_[k]) {
            delay += model_.categories[k].duration.draw(rng_);
            next_spike_[k] = now + model_.categories[k].interarrival.draw(rng_);
        }
    }
    std::int64_t available = arrival_ns + std::llround(delay);
    if (!reorder_) available = std::max(available, previous_);  // in order: a spike holds back what follows
    previous_ = available;
    return available;
}

void wait_until(std::int64_t deadline_ns, std::int64_t spin_ns) noexcept {
    const std::int64_t sleep_until = deadline_ns - spin_ns;
    if (now_ns() < sleep_until) {
        timespec ts{static_cast<time_t>(sleep_until / 1'000'000'000), static_cast<long>(sleep_until % 1'000'000'000)};
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR) {
        }
    }
    while (now_ns() < deadline_ns) cpu_relax();
}

void tighten_timer_slack() noexcept { ::prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0); }

}  // namespace jitterlab

// ---- C API ----

struct jl_injector {
    jitterlab::DelayQueue<std::uint64_t> queue;
};

extern "C" {

jl_injector* jl_injector_create(const char* model_path, uint64_t seed, int reorder, size_t capacity, char* err,
                                size_t err_size) {
    try {
        auto model = jitterlab::LatencyModel::load(model_path);
        auto injector = std::make_unique<jl_injector>(
            jl_injector{jitterlab::DelayQueue<std::uint64_t>(std::move(model), seed, reorder != 0, capacity)});
        return injector.release();  // owned by the caller until jl_injector_destroy
    } catch (const std::exception& e) {
        if (err != nullptr && err_size > 0) {
            std::strncpy(err, e.what(), err_size - 1);
            err[err_size - 1] = '\0';
        }
        return nullptr;
    }
}

void jl_injector_destroy(jl_injector* injector) { std::unique_ptr<jl_injector> owned(injector); }

int64_t jl_injector_push(jl_injector* injector, int64_t arrival_ns, uint64_t tag) {
    return injector->queue.push(arrival_ns, tag);
}

int jl_injector_pop_due(jl_injector* injector, int64_t now_ns, uint64_t* tag, int64_t* available_at) {
    jitterlab::DelayQueue<std::uint64_t>::Entry e{};
    if (!injector->queue.pop_due(now_ns, e)) return 0;
    *tag = e.item;
    *available_at = e.available_at;
    return 1;
}

int64_t jl_injector_next_due(const jl_injector* injector) { return injector->queue.next_due(); }
size_t jl_injector_size(const jl_injector* injector) { return injector->queue.size(); }
uint64_t jl_injector_dropped(const jl_injector* injector) { return injector->queue.dropped(); }
int64_t jl_now_ns(void) { return jitterlab::now_ns(); }
void jl_wait_until(int64_t deadline_ns) { jitterlab::wait_until(deadline_ns); }

}  // extern "C"
