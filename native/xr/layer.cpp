// XR_APILAYER_JITTERLAB_latency: an OpenXR API layer that hands the application each pose it
// is configured for (the head, the action spaces of a subaction path such as a hand, or every
// space) as it was d earlier, d drawn per frame and per pose from a jitterlab latency model by
// the injection engine (jitterlab::DelaySchedule), and records the delay it delivered and the
// frame timing in monitor rings for `jitterlab monitor serve`. Semantics and limits: docs/xr.md.
//
// The frame path (xrWaitFrame/xrBeginFrame/xrEndFrame, xrLocateSpace, xrLocateViews) takes an
// uncontended mutex, reads CLOCK_MONOTONIC (vDSO) and writes the rings; it does not allocate:
// the pose histories are allocated when the instance is created.
#include <openxr/openxr.h>

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fstream>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "jitterlab/injector.hpp"
#include "jitterlab/monitor_c.h"
#include "loader_negotiation.h"
#include "xr_config.hpp"

namespace {

constexpr const char* kLayerName = "XR_APILAYER_JITTERLAB_latency";
constexpr std::size_t kHistory = 1024;  // poses kept per (space, base) pair: 11 s at 90 Hz
constexpr std::size_t kHistories = 16;  // (space, base) pairs and view configurations
constexpr std::uint32_t kMaxViews = 4;

std::int64_t mono_ns() noexcept {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

struct Monitor {
  jl_monitor* ring = nullptr;
  Monitor() = default;
  Monitor(const Monitor&) = delete;
  Monitor& operator=(const Monitor&) = delete;
  ~Monitor() {
    if (ring != nullptr) jl_monitor_close(ring);
  }
  void open(const std::string& channel) {
    char err[256] = {0};
    ring = jl_monitor_open(channel.c_str(), 0, err, sizeof err);
    if (ring == nullptr) throw std::runtime_error("monitor channel '" + channel + "': " + err);
  }
  void span(std::int64_t a, std::int64_t b) const noexcept {
    if (ring != nullptr) jl_monitor_span(ring, a, b);
  }
  void clear_note() const noexcept {  // a note an earlier session left (see tell_monitor)
    if (ring == nullptr) return;
    char hint[8] = {0};
    jl_monitor_hint(ring, hint, sizeof hint);
    if (std::strncmp(hint, "note:", 5) == 0) jl_monitor_set_hint(ring, "");
  }
};

struct Entry {
  XrTime t = 0;
  std::uint32_t n = 0;  // poses (1 for a space, the view count for views)
  std::array<XrPosef, kMaxViews> pose{};
  std::array<XrFovf, kMaxViews> fov{};
};

// A ring of located poses of one (space, base space) or (view configuration, space) pair.
struct History {
  std::uint64_t key_a = 0, key_b = 0;
  bool used = false;
  std::vector<Entry> ring;  // kHistory entries, allocated once
  std::size_t head = 0, count = 0;

  const Entry& at(std::size_t i) const { return ring[(head + kHistory - count + i) % kHistory]; }  // 0 = oldest
  void clear() noexcept { count = 0; }
  void push(const Entry& e) noexcept {
    if (count > 0 && e.t <= at(count - 1).t) return;  // only newer times extend the history
    ring[head] = e;
    head = (head + 1) % kHistory;
    if (count < kHistory) ++count;
  }
};

XrQuaternionf slerp(XrQuaternionf a, XrQuaternionf b, double u) {
  double dot = double(a.x) * b.x + double(a.y) * b.y + double(a.z) * b.z + double(a.w) * b.w;
  double s = 1.0;
  if (dot < 0) {
    dot = -dot;
    s = -1.0;
  }
  double wa, wb;
  if (dot > 0.9995) {
    wa = 1 - u;
    wb = u;
  } else {
    const double th = std::acos(std::min(1.0, dot));
    const double sn = std::sin(th);
    wa = std::sin((1 - u) * th) / sn;
    wb = std::sin(u * th) / sn;
  }
  wb *= s;
  double x = wa * a.x + wb * b.x, y = wa * a.y + wb * b.y, z = wa * a.z + wb * b.z, w = wa * a.w + wb * b.w;
  const double norm = std::sqrt(x * x + y * y + z * z + w * w);
  return XrQuaternionf{float(x / norm), float(y / norm), float(z / norm), float(w / norm)};
}

struct V3 {
  double x, y, z;
};
V3 operator+(V3 a, V3 b) { return {a.x + b.x, a.y + b.y, a.z + b.z}; }
V3 operator-(V3 a, V3 b) { return {a.x - b.x, a.y - b.y, a.z - b.z}; }
V3 operator*(double k, V3 a) { return {k * a.x, k * a.y, k * a.z}; }
V3 cross(V3 a, V3 b) { return {a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x}; }
V3 v3(const XrVector3f& v) { return {v.x, v.y, v.z}; }
XrVector3f xr3(V3 v) { return {float(v.x), float(v.y), float(v.z)}; }
// q rotates v (q a unit quaternion); conjugate = true: by q's inverse.
V3 rotate(const XrQuaternionf& q, V3 v, bool conjugate = false) {
  const double k = conjugate ? -1.0 : 1.0;
  const V3 u{k * q.x, k * q.y, k * q.z};
  const V3 t = 2.0 * cross(u, v);
  return v + double(q.w) * t + cross(u, t);
}

XrPosef interpolate(const XrPosef& a, const XrPosef& b, double u) {
  XrPosef p;
  p.orientation = slerp(a.orientation, b.orientation, u);
  p.position.x = float(a.position.x + u * (double(b.position.x) - a.position.x));
  p.position.y = float(a.position.y + u * (double(b.position.y) - a.position.y));
  p.position.z = float(a.position.z + u * (double(b.position.z) - a.position.z));
  return p;
}

// The views of `a` and `b` interpolated at u so that the eyes keep their places on the head:
// the head (the eyes' midpoint, oriented as the first eye) is interpolated, and each eye is
// put back at its offset in the head's frame (interpolated between a's and b's offsets, which
// are equal when the runtime's eye offsets did not change). Lerping each eye's position alone
// would cut the chord and bring the eyes closer when a and b are far apart.
void interpolate_views(const Entry& a, const Entry& b, double u, Entry& out) {
  const std::uint32_t n = std::min(a.n, b.n);
  auto head = [n](const Entry& e) {
    V3 mid{0, 0, 0};
    for (std::uint32_t v = 0; v < n; ++v) mid = mid + (1.0 / n) * v3(e.pose[v].position);
    return XrPosef{e.pose[0].orientation, xr3(mid)};
  };
  const XrPosef ha = head(a), hb = head(b), h = interpolate(ha, hb, u);
  for (std::uint32_t v = 0; v < n; ++v) {
    const V3 off_a = rotate(ha.orientation, v3(a.pose[v].position) - v3(ha.position), true);
    const V3 off_b = rotate(hb.orientation, v3(b.pose[v].position) - v3(hb.position), true);
    const V3 off = off_a + u * (off_b - off_a);
    out.pose[v].orientation = slerp(a.pose[v].orientation, b.pose[v].orientation, u);
    out.pose[v].position = xr3(v3(h.position) + rotate(h.orientation, off));
  }
}

// The pose state at time `t` from a history (count > 0): interpolated between the entries
// around t, or the oldest entry when t is older than the history (start-up). Returns the
// time the delivered pose was valid.
XrTime delayed(const History& h, XrTime t, Entry& out) {
  const Entry& oldest = h.at(0);
  if (t <= oldest.t) {
    out = oldest;
    return oldest.t;
  }
  for (std::size_t i = h.count - 1; i > 0; --i) {
    const Entry& b = h.at(i);
    const Entry& a = h.at(i - 1);
    if (a.t <= t && t <= b.t) {
      const double u = b.t == a.t ? 1.0 : double(t - a.t) / double(b.t - a.t);
      out = b;
      if (std::min(a.n, b.n) > 1) interpolate_views(a, b, u, out);
      else out.pose[0] = interpolate(a.pose[0], b.pose[0], u);
      out.t = t;
      return t;
    }
  }
  out = h.at(h.count - 1);  // t is newer than every entry: the newest
  return out.t;
}

struct Dispatch {
  PFN_xrGetInstanceProcAddr gipa = nullptr;
  PFN_xrDestroyInstance DestroyInstance = nullptr;
  PFN_xrCreateReferenceSpace CreateReferenceSpace = nullptr;
  PFN_xrCreateActionSpace CreateActionSpace = nullptr;
  PFN_xrStringToPath StringToPath = nullptr;
  PFN_xrDestroySpace DestroySpace = nullptr;
  PFN_xrLocateSpace LocateSpace = nullptr;
  PFN_xrLocateViews LocateViews = nullptr;
  PFN_xrBeginSession BeginSession = nullptr;
  PFN_xrEndSession EndSession = nullptr;
  PFN_xrWaitFrame WaitFrame = nullptr;
  PFN_xrBeginFrame BeginFrame = nullptr;
  PFN_xrEndFrame EndFrame = nullptr;
};

// One delayed pose: the head, the action spaces of one subaction path, or every other space.
// Its own model (schedule), channel and d per frame; its spaces have their own histories.
struct Pose {
  std::string name, path_string;
  XrPath path = XR_NULL_PATH;  // [pose.NAME]: the subaction path
  std::optional<jitterlab::DelaySchedule> schedule;
  Monitor ring;
  std::int64_t d = 0;     // this frame's (xrWaitFrame)
  bool recorded = false;  // this frame's delay recorded
  XrTime valid = 0;       // when the pose delivered in this frame was valid

  // The delay of this frame's poses; recorded once per frame.
  void record(XrTime requested, XrTime when_valid) {
    if (!recorded) {
      recorded = true;
      valid = when_valid;
      ring.span(when_valid, requested);
    }
  }
};

struct Layer {
  std::mutex mu;
  Dispatch next;
  XrInstance instance = XR_NULL_HANDLE;
  bool active = false;  // false: every call passes through
  std::vector<std::unique_ptr<Pose>> poses;
  Pose* head = nullptr;   // the views and VIEW spaces: [head], else [every]
  Pose* every = nullptr;  // spaces no other pose claims
  Monitor interval_ring, frametime_ring, pose_age_ring;
  std::vector<std::pair<XrSpace, Pose*>> spaces;  // VIEW and action spaces with their pose, reserved
  std::vector<History> histories;

  // The current frame (set by xrWaitFrame).
  bool have_frame = false;
  XrTime frame_display = 0, previous_display = 0;
  std::int64_t begin_ns = 0;
  std::uint64_t frames = 0, lost = 0;
  std::string trial;  // JITTERLAB_XR_TRIAL: the tag of the trial each session marks
  std::uint64_t sessions = 0;

  History* history(std::uint64_t a, std::uint64_t b) {
    for (auto& h : histories)
      if (h.used && h.key_a == a && h.key_b == b) return &h;
    for (auto& h : histories)
      if (!h.used) {
        h.used = true;
        h.key_a = a;
        h.key_b = b;
        h.count = 0;
        return &h;
      }
    return nullptr;  // more pairs than kHistories: that pair passes through
  }
  Pose* pose_of(XrSpace s) const {
    for (const auto& [space, pose] : spaces)
      if (space == s) return pose;
    return every;
  }
  void claim(XrSpace s, Pose* pose) {
    if (pose != nullptr && spaces.size() < spaces.capacity()) spaces.emplace_back(s, pose);
  }
};

Layer* g_layer = nullptr;  // one instance at a time (the loader creates one per application)
std::mutex g_create_mu;

void say(const std::string& line) { std::fprintf(stderr, "jitterlab xr layer: %s\n", line.c_str()); }

// The channels a config names, read leniently: a config the layer refused still says where
// its runs would have gone (a pose table's channel, by default xr.NAME; the frame timing's).
std::vector<std::string> config_channels(const char* path) {
  std::vector<std::string> out;
  std::ifstream f(path != nullptr ? path : "");
  std::string line, table, pending;  // pending: the current pose table's channel
  auto flush = [&] {
    if (!pending.empty() && jitterlab::xr::Config::channel_ok(pending)) out.push_back(pending);
    pending.clear();
  };
  auto value = [](const std::string& l) {
    const std::size_t a = l.find('"'), b = l.rfind('"');
    return a != std::string::npos && b > a ? l.substr(a + 1, b - a - 1) : std::string();
  };
  while (std::getline(f, line)) {
    const std::size_t i = line.find_first_not_of(" \t");
    if (i == std::string::npos || line[i] == '#') continue;
    if (line[i] == '[') {
      flush();
      const std::size_t j = line.find(']', i);
      table = j == std::string::npos ? std::string() : line.substr(i + 1, j - i - 1);
      if (table == "head" || table == "every") pending = "xr." + table;
      else if (table.rfind("pose.", 0) == 0) pending = "xr." + table.substr(5);
      continue;
    }
    const std::string key = line.substr(i, line.find_first_of(" \t=", i) - i);
    if (key == "channel" && table != "frames") pending = value(line);
    if (key == "channel_prefix" && table == "frames") {
      const std::string c = value(line) + ".frame-interval";
      if (jitterlab::xr::Config::channel_ok(c)) out.push_back(c);
    }
  }
  flush();
  if (out.empty()) out.emplace_back("xr.head");
  return out;
}

// Says `line` on the monitor too: as the note of each channel's ring (`jitterlab xr run` and
// `monitor serve` report a note that appeared while they ran). Best effort: a channel that
// cannot be opened is skipped; without JITTERLAB_XR_CONFIG no channel is known.
void tell_monitor(const char* config_path, const std::string& line) {
  if (config_path == nullptr || *config_path == '\0') return;  // no config: no channel is known
  std::string note = "note: jitterlab xr layer (pid " + std::to_string(::getpid()) + "): " + line;
  if (note.size() > 127) {  // the ring's note holds 127 bytes: cut at a character boundary
    std::size_t n = 124;
    while (n > 0 && (static_cast<unsigned char>(note[n]) & 0xC0) == 0x80) --n;
    note = note.substr(0, n) + "...";
  }
  for (const auto& channel : config_channels(config_path)) {
    char err[256] = {0};
    jl_monitor* ring = jl_monitor_open(channel.c_str(), 0, err, sizeof err);
    if (ring == nullptr) continue;
    jl_monitor_set_hint(ring, note.c_str());
    jl_monitor_close(ring);
  }
}

void configure(Layer& layer) {
  const char* path = std::getenv("JITTERLAB_XR_CONFIG");
  if (path == nullptr || *path == '\0') throw std::runtime_error("JITTERLAB_XR_CONFIG is not set");
  const jitterlab::xr::Config cfg = jitterlab::xr::Config::load(path);
  for (const auto& pc : cfg.poses) {
    auto pose = std::make_unique<Pose>();
    pose->name = pc.name;
    pose->path_string = pc.path;
    pose->schedule.emplace(jitterlab::LatencyModel::load(pc.model), pc.seed, false);
    pose->ring.open(pc.channel);
    if (pc.name == "head") layer.head = pose.get();
    if (pc.name == "every") layer.every = pose.get();
    layer.poses.push_back(std::move(pose));
  }
  if (layer.head == nullptr) layer.head = layer.every;
  if (const char* trial = std::getenv("JITTERLAB_XR_TRIAL"); trial != nullptr && *trial != '\0') {
    if (std::strlen(trial) > JL_MONITOR_TAG_MAX)
      throw std::runtime_error("JITTERLAB_XR_TRIAL is longer than " + std::to_string(JL_MONITOR_TAG_MAX) + " bytes");
    layer.trial = trial;
  }
  for (auto& pose : layer.poses)
    if (!pose->path_string.empty()) {
      const XrResult r = layer.next.StringToPath(layer.instance, pose->path_string.c_str(), &pose->path);
      if (XR_FAILED(r))
        throw std::runtime_error("the runtime refused the path '" + pose->path_string + "' (" + std::to_string(r) + ")");
    }
  if (!cfg.frame_prefix.empty()) {
    layer.interval_ring.open(cfg.frame_prefix + ".frame-interval");
    layer.frametime_ring.open(cfg.frame_prefix + ".frame-time");
    layer.pose_age_ring.open(cfg.frame_prefix + ".pose-age");
  }
  for (const auto& pose : layer.poses) pose->ring.clear_note();
  for (const Monitor* m : {&layer.interval_ring, &layer.frametime_ring, &layer.pose_age_ring}) m->clear_note();
  layer.spaces.reserve(256);
  layer.histories.resize(kHistories);
  for (auto& h : layer.histories) h.ring.resize(kHistory);
}

// ---- intercepted functions ----

XRAPI_ATTR XrResult XRAPI_CALL jl_xrDestroyInstance(XrInstance instance) {
  PFN_xrDestroyInstance next = nullptr;
  {
    std::lock_guard<std::mutex> g(g_create_mu);
    if (g_layer != nullptr && g_layer->instance == instance) {
      next = g_layer->next.DestroyInstance;
      delete g_layer;  // NOLINT: the layer's one owner is this global (see xrCreateApiLayerInstance)
      g_layer = nullptr;
    }
  }
  return next != nullptr ? next(instance) : XR_ERROR_HANDLE_INVALID;
}

XRAPI_ATTR XrResult XRAPI_CALL jl_xrCreateReferenceSpace(XrSession session, const XrReferenceSpaceCreateInfo* info,
                                                        XrSpace* space) {
  Layer& l = *g_layer;
  const XrResult r = l.next.CreateReferenceSpace(session, info, space);
  if (XR_SUCCEEDED(r) && info != nullptr && info->referenceSpaceType == XR_REFERENCE_SPACE_TYPE_VIEW) {
    std::lock_guard<std::mutex> g(l.mu);
    l.claim(*space, l.head);
  }
  return r;
}

XRAPI_ATTR XrResult XRAPI_CALL jl_xrCreateActionSpace(XrSession session, const XrActionSpaceCreateInfo* info,
                                                     XrSpace* space) {
  Layer& l = *g_layer;
  const XrResult r = l.next.CreateActionSpace(session, info, space);
  if (XR_SUCCEEDED(r) && info != nullptr && info->subactionPath != XR_NULL_PATH) {
    std::lock_guard<std::mutex> g(l.mu);
    for (const auto& pose : l.poses)
      if (pose->path == info->subactionPath) l.claim(*space, pose.get());
  }
  return r;
}

XRAPI_ATTR XrResult XRAPI_CALL jl_xrDestroySpace(XrSpace space) {
  Layer& l = *g_layer;
  {
    std::lock_guard<std::mutex> g(l.mu);
    l.spaces.erase(std::remove_if(l.spaces.begin(), l.spaces.end(), [space](const auto& e) { return e.first == space; }),
                   l.spaces.end());
    for (auto& h : l.histories)
      if (h.used && (h.key_a == reinterpret_cast<std::uint64_t>(space) ||
                     h.key_b == reinterpret_cast<std::uint64_t>(space)))
        h.used = false;
  }
  return l.next.DestroySpace(space);
}

// Each session is a trial on every pose's channel (monitor serve screens it against a baseline):
// tagged JITTERLAB_XR_TRIAL, else session-N; from xrBeginSession to xrEndSession.
XRAPI_ATTR XrResult XRAPI_CALL jl_xrBeginSession(XrSession session, const XrSessionBeginInfo* info) {
  Layer& l = *g_layer;
  const XrResult r = l.next.BeginSession(session, info);
  if (XR_SUCCEEDED(r)) {
    std::lock_guard<std::mutex> g(l.mu);
    ++l.sessions;
    std::string tag = l.trial.empty() ? "session-" + std::to_string(l.sessions) : l.trial;
    if (!l.trial.empty() && l.sessions > 1) {
      const std::string n = "#" + std::to_string(l.sessions);
      tag = tag.substr(0, std::min(tag.size(), JL_MONITOR_TAG_MAX - n.size())) + n;
    }
    for (const auto& pose : l.poses)
      if (pose->ring.ring != nullptr) jl_monitor_trial_begin(pose->ring.ring, tag.c_str());
  }
  return r;
}

XRAPI_ATTR XrResult XRAPI_CALL jl_xrEndSession(XrSession session) {
  Layer& l = *g_layer;
  {
    std::lock_guard<std::mutex> g(l.mu);
    for (const auto& pose : l.poses)
      if (pose->ring.ring != nullptr) jl_monitor_trial_end(pose->ring.ring);
  }
  return l.next.EndSession(session);
}

XRAPI_ATTR XrResult XRAPI_CALL jl_xrWaitFrame(XrSession session, const XrFrameWaitInfo* info, XrFrameState* state) {
  Layer& l = *g_layer;
  const XrResult r = l.next.WaitFrame(session, info, state);
  if (!XR_SUCCEEDED(r) || state == nullptr) return r;
  std::lock_guard<std::mutex> g(l.mu);
  const XrTime t = state->predictedDisplayTime;
  if (l.have_frame && t > l.previous_display) l.interval_ring.span(l.previous_display, t);
  l.previous_display = t;
  l.have_frame = true;
  l.frame_display = t;
  for (const auto& pose : l.poses) {  // one d per pose per frame
    pose->d = pose->schedule->available_at(t) - t;
    pose->recorded = false;
    pose->valid = 0;
  }
  ++l.frames;
  return r;
}

XRAPI_ATTR XrResult XRAPI_CALL jl_xrBeginFrame(XrSession session, const XrFrameBeginInfo* info) {
  Layer& l = *g_layer;
  {
    std::lock_guard<std::mutex> g(l.mu);
    l.begin_ns = mono_ns();
  }
  return l.next.BeginFrame(session, info);
}

XRAPI_ATTR XrResult XRAPI_CALL jl_xrEndFrame(XrSession session, const XrFrameEndInfo* info) {
  Layer& l = *g_layer;
  {
    std::lock_guard<std::mutex> g(l.mu);
    const std::int64_t now = mono_ns();
    if (l.begin_ns != 0) l.frametime_ring.span(l.begin_ns, now);
    l.begin_ns = 0;
    const Pose* head = l.head;
    if (info != nullptr && head != nullptr && head->recorded && head->valid != 0 && info->displayTime >= head->valid)
      l.pose_age_ring.span(head->valid, info->displayTime);
  }
  return l.next.EndFrame(session, info);
}

XRAPI_ATTR XrResult XRAPI_CALL jl_xrLocateViews(XrSession session, const XrViewLocateInfo* info, XrViewState* state,
                                               uint32_t capacity, uint32_t* count, XrView* views) {
  Layer& l = *g_layer;
  const XrResult r = l.next.LocateViews(session, info, state, capacity, count, views);
  if (!XR_SUCCEEDED(r) || capacity == 0 || info == nullptr || state == nullptr || views == nullptr ||
      count == nullptr || *count == 0 || *count > kMaxViews || l.head == nullptr)
    return r;
  std::lock_guard<std::mutex> g(l.mu);
  if (!l.have_frame) return r;  // before the first xrWaitFrame: no d yet, pass through
  History* h = l.history(0x5649455753ull ^ std::uint64_t(info->viewConfigurationType),
                         reinterpret_cast<std::uint64_t>(info->space));
  if (h == nullptr) return r;
  if ((state->viewStateFlags & XR_VIEW_STATE_ORIENTATION_VALID_BIT) == 0) {
    h->clear();  // tracking lost: the runtime's answer (invalid) passes through
    ++l.lost;
    return r;
  }
  Entry e;
  e.t = info->displayTime;
  e.n = *count;
  for (std::uint32_t v = 0; v < e.n; ++v) {
    e.pose[v] = views[v].pose;
    e.fov[v] = views[v].fov;
  }
  h->push(e);
  Entry out;
  const XrTime valid = delayed(*h, info->displayTime - l.head->d, out);
  for (std::uint32_t v = 0; v < std::min(out.n, e.n); ++v) views[v].pose = out.pose[v];
  l.head->record(info->displayTime, valid);
  return r;
}

XRAPI_ATTR XrResult XRAPI_CALL jl_xrLocateSpace(XrSpace space, XrSpace base, XrTime time, XrSpaceLocation* location) {
  Layer& l = *g_layer;
  const XrResult r = l.next.LocateSpace(space, base, time, location);
  if (!XR_SUCCEEDED(r) || location == nullptr || l.poses.empty()) return r;
  std::lock_guard<std::mutex> g(l.mu);
  Pose* pose = l.have_frame ? l.pose_of(space) : nullptr;
  if (pose == nullptr) return r;
  History* h = l.history(reinterpret_cast<std::uint64_t>(space), reinterpret_cast<std::uint64_t>(base));
  if (h == nullptr) return r;
  // Velocities of the delayed pose are not known: they are marked invalid (docs/xr.md).
  for (auto* n = static_cast<XrBaseOutStructure*>(location->next); n != nullptr; n = n->next)
    if (n->type == XR_TYPE_SPACE_VELOCITY) reinterpret_cast<XrSpaceVelocity*>(n)->velocityFlags = 0;
  if ((location->locationFlags & XR_SPACE_LOCATION_ORIENTATION_VALID_BIT) == 0) {
    h->clear();
    ++l.lost;
    return r;
  }
  Entry e;
  e.t = time;
  e.n = 1;
  e.pose[0] = location->pose;
  h->push(e);
  Entry out;
  const XrTime valid = delayed(*h, time - pose->d, out);
  location->pose = out.pose[0];
  pose->record(time, valid);
  return r;
}

XRAPI_ATTR XrResult XRAPI_CALL jl_xrGetInstanceProcAddr(XrInstance instance, const char* name,
                                                       PFN_xrVoidFunction* function) {
  Layer* l = g_layer;
  if (l == nullptr || name == nullptr || function == nullptr) return XR_ERROR_HANDLE_INVALID;
  const XrResult r = l->next.gipa(instance, name, function);
  if (!XR_SUCCEEDED(r)) return r;
  const std::string_view n(name);
  auto use = [&](auto f) { *function = reinterpret_cast<PFN_xrVoidFunction>(f); };
  if (n == "xrGetInstanceProcAddr") use(&jl_xrGetInstanceProcAddr);
  else if (n == "xrDestroyInstance") use(&jl_xrDestroyInstance);
  else if (!l->active) return r;
  else if (n == "xrCreateReferenceSpace") use(&jl_xrCreateReferenceSpace);
  else if (n == "xrCreateActionSpace") use(&jl_xrCreateActionSpace);
  else if (n == "xrDestroySpace") use(&jl_xrDestroySpace);
  else if (n == "xrLocateSpace") use(&jl_xrLocateSpace);
  else if (n == "xrLocateViews") use(&jl_xrLocateViews);
  else if (n == "xrWaitFrame") use(&jl_xrWaitFrame);
  else if (n == "xrBeginSession") use(&jl_xrBeginSession);
  else if (n == "xrEndSession") use(&jl_xrEndSession);
  else if (n == "xrBeginFrame") use(&jl_xrBeginFrame);
  else if (n == "xrEndFrame") use(&jl_xrEndFrame);
  return r;
}

template <typename F>
bool load(PFN_xrGetInstanceProcAddr gipa, XrInstance instance, const char* name, F& out) {
  PFN_xrVoidFunction f = nullptr;
  if (!XR_SUCCEEDED(gipa(instance, name, &f)) || f == nullptr) return false;
  out = reinterpret_cast<F>(f);
  return true;
}

XRAPI_ATTR XrResult XRAPI_CALL jl_xrCreateApiLayerInstance(const XrInstanceCreateInfo* info,
                                                          const XrApiLayerCreateInfo* layer_info,
                                                          XrInstance* instance) {
  if (layer_info == nullptr || layer_info->nextInfo == nullptr ||
      std::strcmp(layer_info->nextInfo->layerName, kLayerName) != 0)
    return XR_ERROR_INITIALIZATION_FAILED;
  XrApiLayerCreateInfo next_info = *layer_info;
  next_info.nextInfo = layer_info->nextInfo->next;
  const PFN_xrGetInstanceProcAddr gipa = layer_info->nextInfo->nextGetInstanceProcAddr;
  const XrResult r = layer_info->nextInfo->nextCreateApiLayerInstance(info, &next_info, instance);
  if (!XR_SUCCEEDED(r)) return r;

  std::lock_guard<std::mutex> g(g_create_mu);
  if (g_layer != nullptr) {
    say("a second XrInstance in one process: the layer passes it through");
    return r;
  }
  auto layer = std::make_unique<Layer>();
  layer->instance = *instance;
  layer->next.gipa = gipa;
  Dispatch& d = layer->next;
  const bool ok = load(gipa, *instance, "xrDestroyInstance", d.DestroyInstance) &&
                  load(gipa, *instance, "xrCreateReferenceSpace", d.CreateReferenceSpace) &&
                  load(gipa, *instance, "xrCreateActionSpace", d.CreateActionSpace) &&
                  load(gipa, *instance, "xrStringToPath", d.StringToPath) &&
                  load(gipa, *instance, "xrDestroySpace", d.DestroySpace) &&
                  load(gipa, *instance, "xrLocateSpace", d.LocateSpace) &&
                  load(gipa, *instance, "xrLocateViews", d.LocateViews) &&
                  load(gipa, *instance, "xrWaitFrame", d.WaitFrame) &&
                  load(gipa, *instance, "xrBeginSession", d.BeginSession) &&
                  load(gipa, *instance, "xrEndSession", d.EndSession) &&
                  load(gipa, *instance, "xrBeginFrame", d.BeginFrame) && load(gipa, *instance, "xrEndFrame", d.EndFrame);
  try {
    if (!ok) throw std::runtime_error("the next layer or runtime lacks a core function");
    configure(*layer);
    layer->active = true;
  } catch (const std::exception& e) {
    const std::string line = std::string(e.what()) + "; passing every call through";
    say(line);
    try {
      tell_monitor(std::getenv("JITTERLAB_XR_CONFIG"), line);
    } catch (const std::exception&) {  // never fail the application over the note
    }
    layer->poses.clear();
    layer->active = false;
  }
  g_layer = layer.release();
  return r;
}

}  // namespace

extern "C" __attribute__((visibility("default"))) XrResult XRAPI_CALL
xrNegotiateLoaderApiLayerInterface(const XrNegotiateLoaderInfo* loader_info, const char* layer_name,
                                   XrNegotiateApiLayerRequest* request) {
  if (loader_info == nullptr || request == nullptr || layer_name == nullptr ||
      loader_info->structType != XR_LOADER_INTERFACE_STRUCT_LOADER_INFO ||
      loader_info->structVersion != XR_LOADER_INFO_STRUCT_VERSION ||
      loader_info->structSize != sizeof(XrNegotiateLoaderInfo) ||
      request->structType != XR_LOADER_INTERFACE_STRUCT_API_LAYER_REQUEST ||
      request->structVersion != XR_API_LAYER_INFO_STRUCT_VERSION ||
      request->structSize != sizeof(XrNegotiateApiLayerRequest) ||
      loader_info->minInterfaceVersion > XR_CURRENT_LOADER_API_LAYER_VERSION ||
      loader_info->maxInterfaceVersion < XR_CURRENT_LOADER_API_LAYER_VERSION ||
      std::strcmp(layer_name, kLayerName) != 0)
    return XR_ERROR_INITIALIZATION_FAILED;
  request->layerInterfaceVersion = XR_CURRENT_LOADER_API_LAYER_VERSION;
  request->layerApiVersion = XR_CURRENT_API_VERSION;
  request->getInstanceProcAddr = &jl_xrGetInstanceProcAddr;
  request->createApiLayerInstance = &jl_xrCreateApiLayerInstance;
  return XR_SUCCESS;
}
