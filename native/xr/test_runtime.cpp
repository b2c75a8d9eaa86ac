// A headless OpenXR runtime that stands in for a headset in the tests (docs/xr.md): it
// offers XR_MND_headless, a display period, and a head that turns about +Y at a constant
// angular velocity, so an application can tell from an orientation alone the time at which
// that pose was valid: theta(t) = omega * t, t in seconds of XrTime (CLOCK_MONOTONIC ns).
// Two hands (the action spaces of a pose action for /user/hand/left and /user/hand/right)
// turn by the same theta(t), the left one about +X and the right one about +Z, so a mix-up
// of head and hands shows in the axis. Actions: just enough for pose actions (action sets,
// suggested bindings, attach, sync, pose state, action spaces).
// Environment: JL_XR_TEST_PERIOD_NS (display period, default 11111111),
// JL_XR_TEST_OMEGA (rad/s, default 1), JL_XR_TEST_NO_SLEEP=1 (xrWaitFrame does not wait),
// JL_XR_TEST_LOSS="A:B" (tracking lost for display
// times from A to B ms after xrBeginSession).
#include <openxr/openxr.h>

#include <time.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <string_view>

#include "loader_negotiation.h"

namespace {

std::int64_t mono_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

double env_double(const char* name, double fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::strtod(v, nullptr) : fallback;
}

enum class Kind { view, local, other, left_hand, right_hand };

struct Runtime {
  std::mutex mu;
  std::int64_t created = 0, period = 11'111'111, loss_a = -1, loss_b = -1;
  double omega = 1.0;
  bool sleep = true;  // JL_XR_TEST_NO_SLEEP=1: xrWaitFrame returns at once (benchmarks/xr_overhead.py)
  std::uint64_t next_handle = 0x100;
  std::map<std::uint64_t, Kind> spaces;
  std::map<std::uint64_t, std::string> paths;
  std::deque<XrSessionState> events;
  XrSession session = XR_NULL_HANDLE;
  std::int64_t next_vsync = 0;
  bool running = false;
};
Runtime g;

template <typename H>
H new_handle() {
  return reinterpret_cast<H>(g.next_handle++);
}

bool tracking_lost(XrTime t) {
  return g.loss_a >= 0 && t >= g.created + g.loss_a && t < g.created + g.loss_b;
}

XrPosef head_pose(XrTime t) {
  const double theta = std::fmod(g.omega * (double(t) * 1e-9), 2 * M_PI);
  XrPosef p{};
  p.orientation = {0.0f, float(std::sin(theta / 2)), 0.0f, float(std::cos(theta / 2))};
  p.position = {0.0f, 1.6f, 0.0f};
  return p;
}

XrPosef hand_pose(XrTime t, Kind hand) {
  const double theta = std::fmod(g.omega * (double(t) * 1e-9), 2 * M_PI);
  const float s = float(std::sin(theta / 2)), c = float(std::cos(theta / 2));
  XrPosef p{};
  if (hand == Kind::left_hand) {
    p.orientation = {s, 0.0f, 0.0f, c};
    p.position = {-0.2f, 1.2f, -0.3f};
  } else {
    p.orientation = {0.0f, 0.0f, s, c};
    p.position = {0.2f, 1.2f, -0.3f};
  }
  return p;
}

XrPosef eye_pose(XrTime t, int eye) {
  XrPosef p = head_pose(t);
  const double theta = std::fmod(g.omega * (double(t) * 1e-9), 2 * M_PI);
  const double off = eye == 0 ? -0.032 : 0.032;  // rotate (off, 0, 0) about +Y by theta
  p.position.x += float(off * std::cos(theta));
  p.position.z += float(-off * std::sin(theta));
  return p;
}

void copy_name(char* dst, std::size_t n, const char* src) {
  std::strncpy(dst, src, n - 1);
  dst[n - 1] = '\0';
}

XRAPI_ATTR XrResult XRAPI_CALL EnumerateInstanceExtensionProperties(const char*, uint32_t cap, uint32_t* count,
                                                                    XrExtensionProperties* props) {
  *count = 1;
  if (cap == 0) return XR_SUCCESS;
  if (cap < 1) return XR_ERROR_SIZE_INSUFFICIENT;
  copy_name(props[0].extensionName, XR_MAX_EXTENSION_NAME_SIZE, XR_MND_HEADLESS_EXTENSION_NAME);
  props[0].extensionVersion = XR_MND_headless_SPEC_VERSION;
  return XR_SUCCESS;
}

XRAPI_ATTR XrResult XRAPI_CALL CreateInstance(const XrInstanceCreateInfo* info, XrInstance* instance) {
  for (uint32_t i = 0; i < info->enabledExtensionCount; ++i)
    if (std::strcmp(info->enabledExtensionNames[i], XR_MND_HEADLESS_EXTENSION_NAME) != 0)
      return XR_ERROR_EXTENSION_NOT_PRESENT;
  std::lock_guard<std::mutex> l(g.mu);
  g.created = mono_ns();
  g.period = std::int64_t(env_double("JL_XR_TEST_PERIOD_NS", 11'111'111));
  g.omega = env_double("JL_XR_TEST_OMEGA", 1.0);
  g.sleep = env_double("JL_XR_TEST_NO_SLEEP", 0) == 0;
  if (const char* loss = std::getenv("JL_XR_TEST_LOSS"); loss != nullptr && std::strchr(loss, ':') != nullptr) {
    g.loss_a = std::int64_t(std::strtod(loss, nullptr) * 1e6);
    g.loss_b = std::int64_t(std::strtod(std::strchr(loss, ':') + 1, nullptr) * 1e6);
  }
  *instance = new_handle<XrInstance>();
  return XR_SUCCESS;
}

XRAPI_ATTR XrResult XRAPI_CALL DestroyInstance(XrInstance) { return XR_SUCCESS; }

XRAPI_ATTR XrResult XRAPI_CALL GetInstanceProperties(XrInstance, XrInstanceProperties* p) {
  p->runtimeVersion = XR_MAKE_VERSION(0, 1, 0);
  copy_name(p->runtimeName, XR_MAX_RUNTIME_NAME_SIZE, "jitterlab headless test runtime");
  return XR_SUCCESS;
}

XRAPI_ATTR XrResult XRAPI_CALL GetSystem(XrInstance, const XrSystemGetInfo* info, XrSystemId* id) {
  if (info->formFactor != XR_FORM_FACTOR_HEAD_MOUNTED_DISPLAY) return XR_ERROR_FORM_FACTOR_UNSUPPORTED;
  *id = 1;
  return XR_SUCCESS;
}

XRAPI_ATTR XrResult XRAPI_CALL GetSystemProperties(XrInstance, XrSystemId, XrSystemProperties* p) {
  p->systemId = 1;
  p->vendorId = 0;
  copy_name(p->systemName, XR_MAX_SYSTEM_NAME_SIZE, "jitterlab turning head");
  p->graphicsProperties = {0, 0, 0};
  p->trackingProperties = {XR_TRUE, XR_TRUE};
  return XR_SUCCESS;
}

XRAPI_ATTR XrResult XRAPI_CALL EnumerateViewConfigurations(XrInstance, XrSystemId, uint32_t cap, uint32_t* count,
                                                           XrViewConfigurationType* types) {
  *count = 1;
  if (cap == 0) return XR_SUCCESS;
  types[0] = XR_VIEW_CONFIGURATION_TYPE_PRIMARY_STEREO;
  return XR_SUCCESS;
}

XRAPI_ATTR XrResult XRAPI_CALL EnumerateViewConfigurationViews(XrInstance, XrSystemId, XrViewConfigurationType,
                                                               uint32_t cap, uint32_t* count,
                                                               XrViewConfigurationView* views) {
  *count = 2;
  if (cap == 0) return XR_SUCCESS;
  if (cap < 2) return XR_ERROR_SIZE_INSUFFICIENT;
  for (int i = 0; i < 2; ++i) {
    views[i].recommendedImageRectWidth = views[i].maxImageRectWidth = 64;
    views[i].recommendedImageRectHeight = views[i].maxImageRectHeight = 64;
    views[i].recommendedSwapchainSampleCount = views[i].maxSwapchainSampleCount = 1;
  }
  return XR_SUCCESS;
}

XRAPI_ATTR XrResult XRAPI_CALL CreateSession(XrInstance, const XrSessionCreateInfo*, XrSession* session) {
  std::lock_guard<std::mutex> l(g.mu);
  g.session = new_handle<XrSession>();
  *session = g.session;
  g.events.push_back(XR_SESSION_STATE_IDLE);
  g.events.push_back(XR_SESSION_STATE_READY);
  return XR_SUCCESS;
}

XRAPI_ATTR XrResult XRAPI_CALL DestroySession(XrSession) { return XR_SUCCESS; }

XRAPI_ATTR XrResult XRAPI_CALL BeginSession(XrSession, const XrSessionBeginInfo*) {
  std::lock_guard<std::mutex> l(g.mu);
  g.running = true;
  g.next_vsync = mono_ns() + g.period;
  if (g.loss_a >= 0) {  // the loss window counts from here
    g.loss_b += mono_ns() - g.created;
    g.loss_a += mono_ns() - g.created;
  }
  g.events.push_back(XR_SESSION_STATE_SYNCHRONIZED);
  g.events.push_back(XR_SESSION_STATE_VISIBLE);
  g.events.push_back(XR_SESSION_STATE_FOCUSED);
  return XR_SUCCESS;
}

XRAPI_ATTR XrResult XRAPI_CALL EndSession(XrSession) {
  std::lock_guard<std::mutex> l(g.mu);
  g.running = false;
  g.events.push_back(XR_SESSION_STATE_IDLE);
  g.events.push_back(XR_SESSION_STATE_EXITING);
  return XR_SUCCESS;
}

XRAPI_ATTR XrResult XRAPI_CALL RequestExitSession(XrSession) {
  std::lock_guard<std::mutex> l(g.mu);
  g.events.push_back(XR_SESSION_STATE_STOPPING);
  return XR_SUCCESS;
}

XRAPI_ATTR XrResult XRAPI_CALL PollEvent(XrInstance, XrEventDataBuffer* buffer) {
  std::lock_guard<std::mutex> l(g.mu);
  if (g.events.empty()) return XR_EVENT_UNAVAILABLE;
  auto* e = reinterpret_cast<XrEventDataSessionStateChanged*>(buffer);
  e->type = XR_TYPE_EVENT_DATA_SESSION_STATE_CHANGED;
  e->next = nullptr;
  e->session = g.session;
  e->state = g.events.front();
  e->time = mono_ns();
  g.events.pop_front();
  return XR_SUCCESS;
}

XRAPI_ATTR XrResult XRAPI_CALL EnumerateReferenceSpaces(XrSession, uint32_t cap, uint32_t* count,
                                                        XrReferenceSpaceType* types) {
  *count = 2;
  if (cap == 0) return XR_SUCCESS;
  if (cap < 2) return XR_ERROR_SIZE_INSUFFICIENT;
  types[0] = XR_REFERENCE_SPACE_TYPE_VIEW;
  types[1] = XR_REFERENCE_SPACE_TYPE_LOCAL;
  return XR_SUCCESS;
}

XRAPI_ATTR XrResult XRAPI_CALL CreateReferenceSpace(XrSession, const XrReferenceSpaceCreateInfo* info,
                                                    XrSpace* space) {
  std::lock_guard<std::mutex> l(g.mu);
  *space = new_handle<XrSpace>();
  g.spaces[reinterpret_cast<std::uint64_t>(*space)] =
      info->referenceSpaceType == XR_REFERENCE_SPACE_TYPE_VIEW    ? Kind::view
      : info->referenceSpaceType == XR_REFERENCE_SPACE_TYPE_LOCAL ? Kind::local
                                                                  : Kind::other;
  return XR_SUCCESS;
}

// ---- actions: only what pose actions need ----

XRAPI_ATTR XrResult XRAPI_CALL CreateActionSet(XrInstance, const XrActionSetCreateInfo*, XrActionSet* set) {
  std::lock_guard<std::mutex> l(g.mu);
  *set = new_handle<XrActionSet>();
  return XR_SUCCESS;
}
XRAPI_ATTR XrResult XRAPI_CALL DestroyActionSet(XrActionSet) { return XR_SUCCESS; }
XRAPI_ATTR XrResult XRAPI_CALL CreateAction(XrActionSet, const XrActionCreateInfo*, XrAction* action) {
  std::lock_guard<std::mutex> l(g.mu);
  *action = new_handle<XrAction>();
  return XR_SUCCESS;
}
XRAPI_ATTR XrResult XRAPI_CALL DestroyAction(XrAction) { return XR_SUCCESS; }
XRAPI_ATTR XrResult XRAPI_CALL SuggestInteractionProfileBindings(XrInstance,
                                                                 const XrInteractionProfileSuggestedBinding*) {
  return XR_SUCCESS;
}
XRAPI_ATTR XrResult XRAPI_CALL AttachSessionActionSets(XrSession, const XrSessionActionSetsAttachInfo*) {
  return XR_SUCCESS;
}
XRAPI_ATTR XrResult XRAPI_CALL SyncActions(XrSession, const XrActionsSyncInfo*) { return XR_SUCCESS; }
XRAPI_ATTR XrResult XRAPI_CALL GetActionStatePose(XrSession, const XrActionStateGetInfo*, XrActionStatePose* state) {
  state->isActive = XR_TRUE;
  return XR_SUCCESS;
}
XRAPI_ATTR XrResult XRAPI_CALL CreateActionSpace(XrSession, const XrActionSpaceCreateInfo* info, XrSpace* space) {
  std::lock_guard<std::mutex> l(g.mu);
  const auto path = g.paths.find(info->subactionPath);
  const std::string name = path == g.paths.end() ? std::string() : path->second;
  *space = new_handle<XrSpace>();
  g.spaces[reinterpret_cast<std::uint64_t>(*space)] = name == "/user/hand/right" ? Kind::right_hand : Kind::left_hand;
  return XR_SUCCESS;
}

XRAPI_ATTR XrResult XRAPI_CALL DestroySpace(XrSpace space) {
  std::lock_guard<std::mutex> l(g.mu);
  g.spaces.erase(reinterpret_cast<std::uint64_t>(space));
  return XR_SUCCESS;
}

XRAPI_ATTR XrResult XRAPI_CALL LocateSpace(XrSpace space, XrSpace base, XrTime time, XrSpaceLocation* location) {
  std::lock_guard<std::mutex> l(g.mu);
  const auto s = g.spaces.find(reinterpret_cast<std::uint64_t>(space));
  const auto b = g.spaces.find(reinterpret_cast<std::uint64_t>(base));
  if (s == g.spaces.end() || b == g.spaces.end()) return XR_ERROR_HANDLE_INVALID;
  if (time <= 0) return XR_ERROR_TIME_INVALID;
  if (b->second != Kind::local) return XR_ERROR_VALIDATION_FAILURE;  // only LOCAL is offered as a base here
  const bool head = s->second == Kind::view;
  const bool hand = s->second == Kind::left_hand || s->second == Kind::right_hand;
  if (head && tracking_lost(time)) {
    location->locationFlags = 0;
    location->pose = XrPosef{{0, 0, 0, 1}, {0, 0, 0}};
    return XR_SUCCESS;
  }
  location->pose = head ? head_pose(time) : hand ? hand_pose(time, s->second) : XrPosef{{0, 0, 0, 1}, {0, 0, 0}};
  location->locationFlags = XR_SPACE_LOCATION_ORIENTATION_VALID_BIT | XR_SPACE_LOCATION_POSITION_VALID_BIT |
                            XR_SPACE_LOCATION_ORIENTATION_TRACKED_BIT | XR_SPACE_LOCATION_POSITION_TRACKED_BIT;
  for (auto* n = static_cast<XrBaseOutStructure*>(location->next); n != nullptr; n = n->next)
    if (n->type == XR_TYPE_SPACE_VELOCITY) {
      auto* v = reinterpret_cast<XrSpaceVelocity*>(n);
      v->velocityFlags = XR_SPACE_VELOCITY_ANGULAR_VALID_BIT | XR_SPACE_VELOCITY_LINEAR_VALID_BIT;
      v->angularVelocity = {s->second == Kind::left_hand ? float(g.omega) : 0.0f, head ? float(g.omega) : 0.0f,
                            s->second == Kind::right_hand ? float(g.omega) : 0.0f};
      v->linearVelocity = {0, 0, 0};
    }
  return XR_SUCCESS;
}

XRAPI_ATTR XrResult XRAPI_CALL LocateViews(XrSession, const XrViewLocateInfo* info, XrViewState* state, uint32_t cap,
                                           uint32_t* count, XrView* views) {
  *count = 2;
  if (cap == 0) return XR_SUCCESS;
  if (cap < 2) return XR_ERROR_SIZE_INSUFFICIENT;
  if (info->displayTime <= 0) return XR_ERROR_TIME_INVALID;
  std::lock_guard<std::mutex> l(g.mu);
  const bool lost = tracking_lost(info->displayTime);
  state->viewStateFlags = lost ? 0
                               : XR_VIEW_STATE_ORIENTATION_VALID_BIT | XR_VIEW_STATE_POSITION_VALID_BIT |
                                     XR_VIEW_STATE_ORIENTATION_TRACKED_BIT | XR_VIEW_STATE_POSITION_TRACKED_BIT;
  for (int i = 0; i < 2; ++i) {
    views[i].pose = lost ? XrPosef{{0, 0, 0, 1}, {0, 0, 0}} : eye_pose(info->displayTime, i);
    views[i].fov = {-0.8f, 0.8f, 0.8f, -0.8f};
  }
  return XR_SUCCESS;
}

XRAPI_ATTR XrResult XRAPI_CALL WaitFrame(XrSession, const XrFrameWaitInfo*, XrFrameState* state) {
  std::int64_t vsync;
  {
    std::lock_guard<std::mutex> l(g.mu);
    const std::int64_t now = mono_ns();
    while (g.next_vsync < now) g.next_vsync += g.period;  // missed periods are skipped
    vsync = g.next_vsync;
    g.next_vsync += g.period;
  }
  timespec ts{static_cast<time_t>(vsync / 1'000'000'000), static_cast<long>(vsync % 1'000'000'000)};
  if (g.sleep) clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr);
  state->predictedDisplayTime = vsync + g.period;
  state->predictedDisplayPeriod = g.period;
  state->shouldRender = XR_TRUE;
  return XR_SUCCESS;
}

XRAPI_ATTR XrResult XRAPI_CALL BeginFrame(XrSession, const XrFrameBeginInfo*) { return XR_SUCCESS; }
XRAPI_ATTR XrResult XRAPI_CALL EndFrame(XrSession, const XrFrameEndInfo*) { return XR_SUCCESS; }

XRAPI_ATTR XrResult XRAPI_CALL StringToPath(XrInstance, const char* s, XrPath* path) {
  std::lock_guard<std::mutex> l(g.mu);
  for (const auto& [k, v] : g.paths)
    if (v == s) {
      *path = k;
      return XR_SUCCESS;
    }
  *path = g.next_handle++;
  g.paths[*path] = s;
  return XR_SUCCESS;
}

XRAPI_ATTR XrResult XRAPI_CALL PathToString(XrInstance, XrPath path, uint32_t cap, uint32_t* count, char* buffer) {
  std::lock_guard<std::mutex> l(g.mu);
  const auto it = g.paths.find(path);
  if (it == g.paths.end()) return XR_ERROR_PATH_INVALID;
  *count = uint32_t(it->second.size() + 1);
  if (cap == 0) return XR_SUCCESS;
  if (cap < *count) return XR_ERROR_SIZE_INSUFFICIENT;
  std::memcpy(buffer, it->second.c_str(), *count);
  return XR_SUCCESS;
}

XRAPI_ATTR XrResult XRAPI_CALL ResultToString(XrInstance, XrResult value, char buffer[XR_MAX_RESULT_STRING_SIZE]) {
  std::snprintf(buffer, XR_MAX_RESULT_STRING_SIZE, "XR_RESULT_%d", int(value));
  return XR_SUCCESS;
}

XRAPI_ATTR XrResult XRAPI_CALL StructureTypeToString(XrInstance, XrStructureType value,
                                                     char buffer[XR_MAX_STRUCTURE_NAME_SIZE]) {
  std::snprintf(buffer, XR_MAX_STRUCTURE_NAME_SIZE, "XR_STRUCTURE_TYPE_%d", int(value));
  return XR_SUCCESS;
}

XRAPI_ATTR XrResult XRAPI_CALL GetInstanceProcAddr(XrInstance, const char* name, PFN_xrVoidFunction* function);

#define JL_FN(fn) {"xr" #fn, reinterpret_cast<PFN_xrVoidFunction>(&fn)}
const std::pair<std::string_view, PFN_xrVoidFunction> kFunctions[] = {
    JL_FN(GetInstanceProcAddr), JL_FN(EnumerateInstanceExtensionProperties), JL_FN(CreateInstance),
    JL_FN(DestroyInstance), JL_FN(GetInstanceProperties), JL_FN(GetSystem), JL_FN(GetSystemProperties),
    JL_FN(EnumerateViewConfigurations), JL_FN(EnumerateViewConfigurationViews), JL_FN(CreateSession),
    JL_FN(DestroySession), JL_FN(BeginSession), JL_FN(EndSession), JL_FN(RequestExitSession), JL_FN(PollEvent),
    JL_FN(EnumerateReferenceSpaces), JL_FN(CreateReferenceSpace), JL_FN(DestroySpace), JL_FN(LocateSpace),
    JL_FN(LocateViews), JL_FN(WaitFrame), JL_FN(BeginFrame), JL_FN(EndFrame), JL_FN(StringToPath),
    JL_FN(PathToString), JL_FN(ResultToString), JL_FN(StructureTypeToString), JL_FN(CreateActionSet),
    JL_FN(DestroyActionSet), JL_FN(CreateAction), JL_FN(DestroyAction), JL_FN(SuggestInteractionProfileBindings),
    JL_FN(AttachSessionActionSets), JL_FN(SyncActions), JL_FN(GetActionStatePose), JL_FN(CreateActionSpace),
};
#undef JL_FN

XRAPI_ATTR XrResult XRAPI_CALL GetInstanceProcAddr(XrInstance, const char* name, PFN_xrVoidFunction* function) {
  for (const auto& [n, f] : kFunctions)
    if (n == name) {
      *function = f;
      return XR_SUCCESS;
    }
  *function = nullptr;
  return XR_ERROR_FUNCTION_UNSUPPORTED;
}

}  // namespace

extern "C" __attribute__((visibility("default"))) XrResult XRAPI_CALL
xrNegotiateLoaderRuntimeInterface(const XrNegotiateLoaderInfo* info, XrNegotiateRuntimeRequest* request) {
  if (info == nullptr || request == nullptr || info->structType != XR_LOADER_INTERFACE_STRUCT_LOADER_INFO ||
      request->structType != XR_LOADER_INTERFACE_STRUCT_RUNTIME_REQUEST ||
      info->minInterfaceVersion > XR_CURRENT_LOADER_RUNTIME_VERSION)
    return XR_ERROR_INITIALIZATION_FAILED;
  request->runtimeInterfaceVersion = XR_CURRENT_LOADER_RUNTIME_VERSION;
  request->runtimeApiVersion = XR_CURRENT_API_VERSION;
  request->getInstanceProcAddr = &GetInstanceProcAddr;
  return XR_SUCCESS;
}
