// The OpenXR layer through the real Khronos loader: the test runtime (native/xr/test_runtime.cpp)
// turns the head at a known angular velocity, the test application (native/xr/testapp.hpp)
// infers from each pose it gets when that pose was valid, and the delays it infers must equal
// the model's schedule, the layer's own record in the monitor ring, and each other (eyes and
// head); the Khronos core validation layer sits below ours and must report nothing.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "jitterlab/injector.hpp"
#include "jitterlab/monitor_c.h"
#include "testapp.hpp"

namespace fs = std::filesystem;
namespace jl = jitterlab;

namespace {

constexpr double kOmega = 1.0;
constexpr std::int64_t kPeriod = 5'000'000;  // 5 ms display period: 200 frames a second
constexpr const char* kValidationLayer = "/usr/share/openxr/1/api_layers/explicit.d";

// A model with a base of 10..30 ms and one spike category (20..40 ms spikes every 100..300 ms).
std::string model_json() {
    std::ostringstream m;
    m << R"({"kind":"jitterlab.model","schema_version":1,"base":{"kind":"quantiles","quantiles_ns":[)";
    for (int i = 0; i < 64; ++i) m << (i ? "," : "") << 10'000'000 + i * 20'000'000 / 63;
    m << R"(]},"categories":[{"category":1,"rate_hz":5,"duration_quantiles_ns":[20000000,40000000],)"
      << R"("interarrival_quantiles_ns":[100000000,300000000]}]})";
    return m.str();
}

// The right hand's model: 40..60 ms, no spikes (another model than the head's and the left hand's).
std::string slow_model_json() {
    std::ostringstream m;
    m << R"({"kind":"jitterlab.model","schema_version":1,"base":{"kind":"quantiles","quantiles_ns":[)";
    for (int i = 0; i < 64; ++i) m << (i ? "," : "") << 40'000'000 + i * 20'000'000 / 63;
    m << R"(]},"categories":[]})";
    return m.str();
}

struct XrEnv {
    fs::path dir;
    std::string channel;
    XrEnv() {
        dir = fs::temp_directory_path() / ("jl-xr-test-" + std::to_string(::getpid()));
        fs::create_directories(dir);
        channel = "jl-xr-test-" + std::to_string(::getpid());
        std::ofstream(dir / "model.json") << model_json();
        std::ofstream(dir / "slow.json") << slow_model_json();
        ::setenv("XR_RUNTIME_JSON", (std::string(JL_XR_DIR) + "/runtime/jitterlab_xr_test_runtime.json").c_str(), 1);
        ::setenv("XR_API_LAYER_PATH", (std::string(JL_XR_DIR) + ":" + kValidationLayer).c_str(), 1);
        // The first layer named is nearest the application: validation checks what our layer calls.
        ::setenv("XR_ENABLE_API_LAYERS", "XR_APILAYER_JITTERLAB_latency:XR_APILAYER_LUNARG_core_validation", 1);
        ::setenv("XR_CORE_VALIDATION_EXPORT_TYPE", "text", 1);
        ::setenv("XR_CORE_VALIDATION_FILE_NAME", (dir / "validation.txt").c_str(), 1);
        ::setenv("JL_XR_TEST_PERIOD_NS", std::to_string(kPeriod).c_str(), 1);
        ::unsetenv("JL_XR_TEST_LOSS");
        ::unsetenv("JL_XR_TEST_OMEGA");
    }
    ~XrEnv() {
        jl_monitor_unlink(channel.c_str());
        for (const char* suffix : {".frame-interval", ".frame-time", ".pose-age", ".left", ".right", ".every"})
            jl_monitor_unlink((channel + suffix).c_str());
        std::error_code ec;
        fs::remove_all(dir, ec);
        for (const char* v : {"XR_RUNTIME_JSON", "XR_API_LAYER_PATH", "XR_ENABLE_API_LAYERS", "JITTERLAB_XR_CONFIG",
                              "XR_CORE_VALIDATION_EXPORT_TYPE", "XR_CORE_VALIDATION_FILE_NAME", "JL_XR_TEST_PERIOD_NS",
                              "JL_XR_TEST_LOSS", "JL_XR_TEST_OMEGA", "JITTERLAB_XR_TRIAL"})
            ::unsetenv(v);
    }
    void config(const std::string& text) {
        std::ofstream(dir / "xr.toml") << text;
        ::setenv("JITTERLAB_XR_CONFIG", (dir / "xr.toml").c_str(), 1);
    }
    std::string good_config(std::uint64_t seed) const {
        return "seed = " + std::to_string(seed) + "\n[head]\nmodel = \"model.json\"\nchannel = \"" + channel +
               "\"\n[frames]\nchannel_prefix = \"" + channel + "\"\n";
    }
    // The samples of a channel (`marks`: the trial marks too).
    std::vector<jl_monitor_event> drain(const std::string& name, bool marks = false) const {
        char err[256] = {0};
        jl_monitor* m = jl_monitor_open(name.c_str(), 0, err, sizeof err);
        EXPECT_NE(m, nullptr) << err;
        std::vector<jl_monitor_event> out(4096);
        const std::size_t n = m ? jl_monitor_drain(m, out.data(), out.size(), 0) : 0;
        if (m) jl_monitor_close(m);
        out.resize(n);
        if (!marks)
            out.erase(std::remove_if(out.begin(), out.end(),
                                     [](const jl_monitor_event& e) { return e.kind != JL_MONITOR_SAMPLE; }),
                      out.end());
        return out;
    }
    std::string validation_messages() const {
        std::ifstream f(dir / "validation.txt");
        std::stringstream ss;
        ss << f.rdbuf();
        return ss.str();
    }
};

std::vector<jitterlab::xr::testapp::Frame> run_app(int frames, double omega = kOmega) {
    std::string error;
    auto out = jitterlab::xr::testapp::run(frames, omega, error, false);
    EXPECT_EQ(error, "");
    return out;
}

// Two-sample Kolmogorov-Smirnov distance.
double ks_distance(std::vector<double> a, std::vector<double> b) {
    std::sort(a.begin(), a.end());
    std::sort(b.begin(), b.end());
    std::size_t i = 0, j = 0;
    double d = 0;
    while (i < a.size() && j < b.size()) {
        const double x = std::min(a[i], b[j]);
        while (i < a.size() && a[i] <= x) ++i;
        while (j < b.size() && b[j] <= x) ++j;
        d = std::max(d, std::abs(double(i) / a.size() - double(j) / b.size()));
    }
    return d;
}

constexpr double kTolNs = 20'000;  // float32 quaternions: about 0.1 us of angle at 1 rad/s, slerp well within

}  // namespace

TEST(XrLayer, DeliveredDelayFollowsTheModelFrameForFrameUnderValidation) {
    XrEnv env;
    const std::uint64_t seed = 7;
    env.config(env.good_config(seed));
    const int n = 600;
    const auto frames = run_app(n);
    ASSERT_EQ(frames.size(), std::size_t(n));
    const auto events = env.drain(env.channel, true);
    ASSERT_EQ(events.size(), std::size_t(n + 2)) << "one record per frame, the session's trial begin and end";
    EXPECT_EQ(events.front().kind, JL_MONITOR_TRIAL_BEGIN);
    EXPECT_EQ(std::string(events.front().tag, events.front().tag_len), "session-1");
    EXPECT_EQ(events.back().kind, JL_MONITOR_TRIAL_END);
    const std::vector<jl_monitor_event> recorded(events.begin() + 1, events.end() - 1);

    jl::DelaySchedule schedule(jl::LatencyModel::load((env.dir / "model.json").string()), seed, false);
    const XrTime first = frames.front().display;
    std::vector<double> steady;
    int startup = 0;
    for (int i = 0; i < n; ++i) {
        const auto& f = frames[i];
        ASSERT_TRUE(f.views_valid && f.head_valid) << "frame " << i;
        const double drawn = double(schedule.available_at(f.display) - f.display);
        const double rec = double(recorded[i].t_recv_ns - recorded[i].t_send_ns);
        EXPECT_EQ(recorded[i].t_recv_ns, f.display) << "frame " << i;
        // Eyes and head share the frame's d, and each equals what the layer recorded.
        EXPECT_NEAR(f.d_left, rec, kTolNs) << "frame " << i;
        EXPECT_NEAR(f.d_right, rec, kTolNs) << "frame " << i;
        EXPECT_NEAR(f.d_head, rec, kTolNs) << "frame " << i;
        EXPECT_NEAR(f.eye_distance, 0.064, 1e-5) << "frame " << i;
        EXPECT_LT(f.eye_error, 1e-5) << "frame " << i << ": the eyes are where the runtime's were at d";
        EXPECT_FALSE(f.velocity_valid) << "velocities of a delayed pose are marked invalid";
        // The hands are not configured here: their action spaces pass through undelayed.
        ASSERT_TRUE(f.hands_valid) << "frame " << i;
        EXPECT_NEAR(f.d_left_hand, 0.0, kTolNs) << "frame " << i;
        EXPECT_NEAR(f.d_right_hand, 0.0, kTolNs) << "frame " << i;
        if (f.display - drawn < double(first)) {
            // Start-up: the history is shorter than d; the oldest pose is handed out.
            ++startup;
            EXPECT_EQ(recorded[i].t_send_ns, first) << "frame " << i;
        } else {
            EXPECT_EQ(rec, drawn) << "frame " << i << ": the model's draw for this frame";
            steady.push_back(f.d_head);
        }
    }
    EXPECT_GT(startup, 0);
    EXPECT_LT(startup, 20);  // at most the longest delay (70 ms) in frames (>= 5 ms each)
    // KS: the inferred delays against the model's schedule under 40 other seeds, same frames.
    std::vector<double> reference;
    for (std::uint64_t s = 1000; s < 1040; ++s) {
        jl::DelaySchedule other(jl::LatencyModel::load((env.dir / "model.json").string()), s, false);
        for (const auto& f : frames) reference.push_back(double(other.available_at(f.display) - f.display));
    }
    const double d = ks_distance(steady, reference);
    const double n1 = double(steady.size()), n2 = double(reference.size());
    const double critical = 1.949 * std::sqrt((n1 + n2) / (n1 * n2));  // alpha = 0.001
    std::printf("xr KS distance %.4f over %zu frames (critical %.4f at alpha 0.001)\n", d, steady.size(), critical);
    EXPECT_LT(d, critical);

    // Frame timing: one display interval per frame after the first, a frame time per frame,
    // and the pose age at display equal to the delivered delay (the app locates at display time).
    const auto intervals = env.drain(env.channel + ".frame-interval");
    EXPECT_EQ(intervals.size(), std::size_t(n - 1));
    for (const auto& e : intervals) EXPECT_EQ((e.t_recv_ns - e.t_send_ns) % kPeriod, 0);
    EXPECT_EQ(env.drain(env.channel + ".frame-time").size(), std::size_t(n));
    const auto ages = env.drain(env.channel + ".pose-age");
    ASSERT_EQ(ages.size(), std::size_t(n));
    for (int i = 0; i < n; ++i) EXPECT_EQ(ages[i].t_recv_ns - ages[i].t_send_ns, recorded[i].t_recv_ns - recorded[i].t_send_ns);

    EXPECT_EQ(env.validation_messages(), "") << "the core validation layer reported";
}

// Far-apart history entries (50 ms frames at 8 rad/s: 0.4 rad between entries): lerping each
// eye's position alone would cut the chord (0.064 m * cos(0.2) = 0.0627 m at mid-interval);
// the layer interpolates the head and puts the eyes back at their offsets.
TEST(XrLayer, TheEyesKeepTheirDistanceBetweenFarApartHistoryEntries) {
    XrEnv env;
    ::setenv("JL_XR_TEST_PERIOD_NS", "50000000", 1);
    ::setenv("JL_XR_TEST_OMEGA", "8", 1);
    env.config(env.good_config(11));
    const auto frames = run_app(40, 8.0);
    ASSERT_EQ(frames.size(), 40u);
    int between = 0;  // frames whose delayed time falls strictly between two history entries
    for (std::size_t i = 0; i < frames.size(); ++i) {
        const auto& f = frames[i];
        ASSERT_TRUE(f.views_valid);
        EXPECT_NEAR(f.eye_distance, 0.064, 1e-5) << "frame " << i;
        EXPECT_LT(f.eye_error, 1e-5) << "frame " << i;
        EXPECT_NEAR(f.d_left, f.d_head, 20'000 * 8.0) << "frame " << i;  // float32 angles at 8 rad/s
        const std::int64_t phase = (std::int64_t(std::llround(f.d_left)) % 50'000'000 + 50'000'000) % 50'000'000;
        if (phase > 5'000'000 && phase < 45'000'000 && f.display - f.d_left > frames.front().display) ++between;
    }
    EXPECT_GT(between, 10) << "the test must interpolate between far-apart entries to mean anything";
    EXPECT_EQ(env.validation_messages(), "");
}

// Hands: the action spaces of /user/hand/left and /user/hand/right are delayed each by its own
// model and d, recorded each on its own channel; the head keeps its own d.
TEST(XrLayer, HandsAreDelayedBySubactionPathEachWithItsOwnModelAndChannel) {
    XrEnv env;
    const std::uint64_t seed = 21;
    env.config("seed = " + std::to_string(seed) + "\n[head]\nmodel = \"model.json\"\nchannel = \"" + env.channel +
               "\"\n[pose.left]\npath = \"/user/hand/left\"\nmodel = \"model.json\"\nchannel = \"" + env.channel +
               ".left\"\n[pose.right]\npath = \"/user/hand/right\"\nmodel = \"slow.json\"\nseed = 99\nchannel = \"" +
               env.channel + ".right\"\n");
    ::setenv("JITTERLAB_XR_TRIAL", "cond-A/p07", 1);
    const int n = 600;
    const auto frames = run_app(n);
    ASSERT_EQ(frames.size(), std::size_t(n));
    // Each channel: the session's trial (tagged JITTERLAB_XR_TRIAL) around its samples.
    std::vector<jl_monitor_event> head, left, right;
    for (auto [c, out] : {std::pair{env.channel, &head}, std::pair{env.channel + ".left", &left},
                          std::pair{env.channel + ".right", &right}}) {
        const auto all = env.drain(c, true);
        ASSERT_GE(all.size(), 2u) << c;
        EXPECT_EQ(all.front().kind, JL_MONITOR_TRIAL_BEGIN) << c;
        EXPECT_EQ(std::string(all.front().tag, all.front().tag_len), "cond-A/p07") << c;
        EXPECT_EQ(all.back().kind, JL_MONITOR_TRIAL_END) << c;
        out->assign(all.begin() + 1, all.end() - 1);
    }
    ASSERT_EQ(head.size(), std::size_t(n));
    ASSERT_EQ(left.size(), std::size_t(n));
    ASSERT_EQ(right.size(), std::size_t(n));
    ::unsetenv("JITTERLAB_XR_TRIAL");
    // Seeds: the file's plus the table's position among the pose tables, unless the table sets one.
    jl::DelaySchedule head_s(jl::LatencyModel::load((env.dir / "model.json").string()), seed, false);
    jl::DelaySchedule left_s(jl::LatencyModel::load((env.dir / "model.json").string()), seed + 1, false);
    jl::DelaySchedule right_s(jl::LatencyModel::load((env.dir / "slow.json").string()), 99, false);
    const XrTime first = frames.front().display;
    std::vector<double> steady_left, steady_right;
    int differ = 0;
    for (int i = 0; i < n; ++i) {
        const auto& f = frames[i];
        ASSERT_TRUE(f.hands_valid && f.head_valid) << "frame " << i;
        const double rh = double(head[i].t_recv_ns - head[i].t_send_ns);
        const double rl = double(left[i].t_recv_ns - left[i].t_send_ns);
        const double rr = double(right[i].t_recv_ns - right[i].t_send_ns);
        EXPECT_EQ(left[i].t_recv_ns, f.display);
        EXPECT_EQ(right[i].t_recv_ns, f.display);
        EXPECT_NEAR(f.d_head, rh, kTolNs) << "frame " << i;
        EXPECT_NEAR(f.d_left, rh, kTolNs) << "frame " << i;
        EXPECT_NEAR(f.d_left_hand, rl, kTolNs) << "frame " << i;
        EXPECT_NEAR(f.d_right_hand, rr, kTolNs) << "frame " << i;
        differ += std::abs(rl - rh) > 1e6;
        const double dl = double(left_s.available_at(f.display) - f.display);
        const double dr = double(right_s.available_at(f.display) - f.display);
        const double dh = double(head_s.available_at(f.display) - f.display);
        if (f.display - dh >= double(first)) {
            EXPECT_EQ(rh, dh) << "frame " << i;
        }
        if (f.display - dl >= double(first)) {
            EXPECT_EQ(rl, dl) << "frame " << i;
            steady_left.push_back(f.d_left_hand);
        }
        if (f.display - dr >= double(first)) {
            EXPECT_EQ(rr, dr) << "frame " << i;
            steady_right.push_back(f.d_right_hand);
        }
    }
    EXPECT_GT(differ, n / 2) << "the left hand draws its own d, not the head's";
    // KS of each hand's inferred delays against its own model's schedule under 40 other seeds.
    for (const auto& [steady, file] : {std::pair{&steady_left, "model.json"}, std::pair{&steady_right, "slow.json"}}) {
        std::vector<double> reference;
        for (std::uint64_t s = 2000; s < 2040; ++s) {
            jl::DelaySchedule other(jl::LatencyModel::load((env.dir / file).string()), s, false);
            for (const auto& f : frames) reference.push_back(double(other.available_at(f.display) - f.display));
        }
        const double d = ks_distance(*steady, reference);
        const double n1 = double(steady->size()), n2 = double(reference.size());
        const double critical = 1.949 * std::sqrt((n1 + n2) / (n1 * n2));  // alpha = 0.001
        std::printf("xr KS distance (%s hand) %.4f over %zu frames (critical %.4f at alpha 0.001)\n",
                    file == std::string("model.json") ? "left" : "right", d, steady->size(), critical);
        EXPECT_LT(d, critical) << file;
    }
    EXPECT_EQ(env.validation_messages(), "") << "the core validation layer reported";
}

// [every]: every space no other table claims (here the hands and the VIEW space: no [head])
// shares the every pose's d; the eyes follow it too.
TEST(XrLayer, EverySpaceSharesOneDelayPerFrame) {
    XrEnv env;
    env.config("seed = 4\n[every]\nmodel = \"model.json\"\nchannel = \"" + env.channel + ".every\"\n");
    const auto frames = run_app(200);
    const auto recorded = env.drain(env.channel + ".every");
    ASSERT_EQ(recorded.size(), frames.size()) << "one record per frame";
    jl::DelaySchedule schedule(jl::LatencyModel::load((env.dir / "model.json").string()), 4, false);
    for (std::size_t i = 0; i < frames.size(); ++i) {
        const auto& f = frames[i];
        const double rec = double(recorded[i].t_recv_ns - recorded[i].t_send_ns);
        for (double d : {f.d_left, f.d_right, f.d_head, f.d_left_hand, f.d_right_hand})
            EXPECT_NEAR(d, rec, kTolNs) << "frame " << i;
        const double drawn = double(schedule.available_at(f.display) - f.display);  // every frame: the schedule has state
        if (f.display - drawn >= double(frames.front().display)) {
            EXPECT_EQ(rec, drawn) << "frame " << i;
        }
    }
    EXPECT_EQ(env.validation_messages(), "");
}

TEST(XrLayer, TrackingLossPassesThroughAndRestartsTheHistory) {
    XrEnv env;
    env.config(env.good_config(3));
    ::setenv("JL_XR_TEST_LOSS", "300:600", 1);  // ms after xrBeginSession
    const auto frames = run_app(200);  // 1 s at 5 ms
    const auto recorded = env.drain(env.channel);
    int lost = 0;
    XrTime first_after = 0;
    std::size_t r = 0;
    for (const auto& f : frames) {
        EXPECT_EQ(f.views_valid, f.head_valid);
        if (!f.views_valid) {
            ++lost;
            first_after = 0;
            continue;
        }
        ASSERT_LT(r, recorded.size());
        const auto& rec = recorded[r++];
        EXPECT_EQ(rec.t_recv_ns, f.display);
        EXPECT_NEAR(f.d_head, double(rec.t_recv_ns - rec.t_send_ns), kTolNs);
        if (lost > 0 && first_after == 0) first_after = f.display;
        // After the loss, no pose from before it is handed out.
        if (lost > 0) {
            EXPECT_GE(rec.t_send_ns, first_after);
        }
    }
    EXPECT_GT(lost, 20);
    EXPECT_EQ(r, recorded.size()) << "nothing is recorded for a frame whose tracking was lost";
    EXPECT_EQ(env.validation_messages(), "");
}

std::string ring_note(const std::string& channel) {
    char err[256] = {0};
    jl_monitor* m = jl_monitor_open(channel.c_str(), 0, err, sizeof err);
    if (m == nullptr) return err;
    char note[256] = {0};
    jl_monitor_hint(m, note, sizeof note);
    jl_monitor_close(m);
    return note;
}

TEST(XrLayer, BadConfigOrModelSaysOneLineAndPassesThrough) {
    XrEnv env;
    // Each config starts with [frames] and names its poses' channels, so that the note goes to
    // this test's channels only (a pose table without one would mean xr.NAME).
    const std::string frames = "seed = 1\n[frames]\nchannel_prefix = \"" + env.channel + "\"\n";
    const std::string ch = "channel = \"" + env.channel + "\"\n";
    const std::vector<std::pair<std::string, std::string>> cases = {
        {frames + "[hands]\nmodel = \"model.json\"\n", "unknown table [hands]"},
        {frames + "[head]\nmodel = \"missing.json\"\n" + ch, "missing.json"},
        {frames + "[head]\nmodel = \"damaged.json\"\n" + ch, "damaged.json: not JSON"},
        {frames + "[head]\nmodel = \"model.json\"\nchannel = \"no/slash\"\n", "is not a channel name"},
        {frames + "[pose.left]\nmodel = \"model.json\"\nchannel = \"" + env.channel + ".left\"\n",
         "[pose.left] needs path"},
        {frames + "[pose.a]\npath = \"/user/hand/left\"\nmodel = \"model.json\"\nchannel = \"" + env.channel +
             ".left\"\n[pose.b]\npath = \"/user/hand/left\"\nmodel = \"model.json\"\nchannel = \"" + env.channel +
             ".right\"\n",
         "named by two tables"},
    };
    std::ofstream(env.dir / "damaged.json") << "{\"kind\": \"jitterlab.mo";
    for (const auto& [text, why] : cases) {
        env.config(text);
        testing::internal::CaptureStderr();
        const auto frames = run_app(20);
        const std::string err = testing::internal::GetCapturedStderr();
        std::size_t ours = 0;  // the validation layer says on stderr which output it uses
        for (std::size_t at = err.find("jitterlab xr layer:"); at != std::string::npos;
             at = err.find("jitterlab xr layer:", at + 1)) ++ours;
        EXPECT_EQ(ours, 1u) << err;
        EXPECT_NE(err.find(why), std::string::npos) << err;
        EXPECT_NE(err.find("passing every call through"), std::string::npos) << err;
        ASSERT_EQ(frames.size(), 20u);
        for (const auto& f : frames) {
            EXPECT_NEAR(f.d_head, 0.0, kTolNs) << "passed through undelayed";
            EXPECT_NEAR(f.d_left_hand, 0.0, kTolNs) << "passed through undelayed";
        }
        // The same line on the monitor: the note of the channels the config names.
        const std::string pid = "note: jitterlab xr layer (pid " + std::to_string(::getpid()) + "): ";
        std::vector<std::string> told = {env.channel + ".frame-interval"};
        if (text.find(ch) != std::string::npos) told.push_back(env.channel);  // [head]'s channel too
        for (const std::string& c : told) {
            const std::string note = ring_note(c);
            EXPECT_EQ(note.rfind(pid, 0), 0u) << c << ": " << note;
            EXPECT_NE(note.find(why.substr(0, 20)), std::string::npos) << c << ": " << note;
        }
        EXPECT_TRUE(env.drain(env.channel + ".frame-interval").empty()) << "nothing recorded";
    }
    // A good config again: the layer clears the note an earlier session left.
    env.config(env.good_config(2));
    run_app(3);
    EXPECT_EQ(ring_note(env.channel), "");
    EXPECT_EQ(ring_note(env.channel + ".frame-interval"), "");
    ::unsetenv("JITTERLAB_XR_CONFIG");
    testing::internal::CaptureStderr();
    run_app(5);
    EXPECT_NE(testing::internal::GetCapturedStderr().find("JITTERLAB_XR_CONFIG is not set"), std::string::npos);
    EXPECT_EQ(env.validation_messages(), "");
}

TEST(XrLayer, TheValidationLayerReportsAMisuse) {
    // The negative control of the "no validation message" checks: a wrong structure type.
    XrEnv env;
    env.config(env.good_config(1));
    std::string error;
    jitterlab::xr::testapp::run(3, kOmega, error, true);
    EXPECT_NE(error, "");
    EXPECT_NE(env.validation_messages(), "");
}
