// The test application of the layer's tests: a headless OpenXR session through the Khronos
// loader, N frames of xrWaitFrame / xrBeginFrame / xrLocateViews + xrLocateSpace(VIEW) +
// xrSyncActions and xrLocateSpace of the two hands' action spaces (a pose action with the
// subaction paths /user/hand/left and /user/hand/right) at the predicted display time /
// xrEndFrame, and for each frame the delay inferred from each pose alone (the test runtime
// turns the head about +Y, the left hand about +X, the right hand about +Z, each at omega
// rad/s: theta(t) = omega * t).
#pragma once

#include <openxr/openxr.h>

#include <time.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace jitterlab::xr::testapp {

struct Frame {
  XrTime display = 0;
  bool views_valid = false, head_valid = false;
  double d_left = NAN, d_right = NAN, d_head = NAN;  // ns
  double eye_distance = NAN;                         // m, between the two delivered eyes
  double eye_error = NAN;  // m, the largest distance of a delivered eye from where the runtime's eye was at d_left
  bool hands_valid = false;
  double d_left_hand = NAN, d_right_hand = NAN;  // ns
  bool velocity_valid = false;
  std::int64_t ns_views = 0, ns_space = 0, ns_frame = 0;  // time in xrLocateViews, xrLocateSpace, wait+begin+end
};

inline std::int64_t clock_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

template <typename T>
T make(XrStructureType type) {
  T value{};
  value.type = type;
  return value;
}

/// The delay of a pose displayed at `t` whose orientation `q` turns about one axis (`axis_part`:
/// q.x, q.y or q.z of that axis) by omega * t.
inline double infer_delay(XrTime t, const XrQuaternionf& q, double omega, float XrQuaternionf::*axis_part) {
  const double expected = std::fmod(omega * (double(t) * 1e-9), 2 * M_PI);
  const double theta = 2 * std::atan2(double(q.*axis_part), double(q.w));
  double diff = std::remainder(expected - theta, 2 * M_PI);
  return diff / omega * 1e9;
}

#define JL_XR_CHECK(call)                                                          \
  do {                                                                             \
    const XrResult jl_r = (call);                                                  \
    if (XR_FAILED(jl_r)) {                                                         \
      error = std::string(#call) + " failed: " + std::to_string(int(jl_r));        \
      return frames;                                                               \
    }                                                                              \
  } while (0)

/// Runs `n` frames; on failure `error` names the call.
/// `misuse`: hands xrLocateViews a structure of the wrong type (the validation layer's control).
inline std::vector<Frame> run(int n, double omega, std::string& error, bool misuse = false) {
  std::vector<Frame> frames;
  auto ici = make<XrInstanceCreateInfo>(XR_TYPE_INSTANCE_CREATE_INFO);
  std::strcpy(ici.applicationInfo.applicationName, "jitterlab-xr-testapp");
  ici.applicationInfo.apiVersion = XR_MAKE_VERSION(1, 0, 0);
  const char* ext[] = {XR_MND_HEADLESS_EXTENSION_NAME};
  ici.enabledExtensionCount = 1;
  ici.enabledExtensionNames = ext;
  XrInstance instance = XR_NULL_HANDLE;
  JL_XR_CHECK(xrCreateInstance(&ici, &instance));
  struct Guard {
    XrInstance i;
    ~Guard() { xrDestroyInstance(i); }
  } guard{instance};
  auto sgi = make<XrSystemGetInfo>(XR_TYPE_SYSTEM_GET_INFO);
  sgi.formFactor = XR_FORM_FACTOR_HEAD_MOUNTED_DISPLAY;
  XrSystemId system = XR_NULL_SYSTEM_ID;
  JL_XR_CHECK(xrGetSystem(instance, &sgi, &system));
  auto sci = make<XrSessionCreateInfo>(XR_TYPE_SESSION_CREATE_INFO);
  sci.systemId = system;
  XrSession session = XR_NULL_HANDLE;
  JL_XR_CHECK(xrCreateSession(instance, &sci, &session));
  auto rci = make<XrReferenceSpaceCreateInfo>(XR_TYPE_REFERENCE_SPACE_CREATE_INFO);
  rci.poseInReferenceSpace.orientation.w = 1;
  rci.referenceSpaceType = XR_REFERENCE_SPACE_TYPE_LOCAL;
  XrSpace local = XR_NULL_HANDLE, view = XR_NULL_HANDLE;
  JL_XR_CHECK(xrCreateReferenceSpace(session, &rci, &local));
  rci.referenceSpaceType = XR_REFERENCE_SPACE_TYPE_VIEW;
  JL_XR_CHECK(xrCreateReferenceSpace(session, &rci, &view));

  // The hands: one pose action for both, an action space per subaction path.
  XrPath hand_paths[2] = {XR_NULL_PATH, XR_NULL_PATH};
  JL_XR_CHECK(xrStringToPath(instance, "/user/hand/left", &hand_paths[0]));
  JL_XR_CHECK(xrStringToPath(instance, "/user/hand/right", &hand_paths[1]));
  auto asci = make<XrActionSetCreateInfo>(XR_TYPE_ACTION_SET_CREATE_INFO);
  std::strcpy(asci.actionSetName, "jl_testapp");
  std::strcpy(asci.localizedActionSetName, "jitterlab test app");
  XrActionSet action_set = XR_NULL_HANDLE;
  JL_XR_CHECK(xrCreateActionSet(instance, &asci, &action_set));
  auto aci = make<XrActionCreateInfo>(XR_TYPE_ACTION_CREATE_INFO);
  std::strcpy(aci.actionName, "hand_pose");
  std::strcpy(aci.localizedActionName, "hand pose");
  aci.actionType = XR_ACTION_TYPE_POSE_INPUT;
  aci.countSubactionPaths = 2;
  aci.subactionPaths = hand_paths;
  XrAction hand_action = XR_NULL_HANDLE;
  JL_XR_CHECK(xrCreateAction(action_set, &aci, &hand_action));
  XrPath profile = XR_NULL_PATH;
  XrActionSuggestedBinding bindings[2] = {{hand_action, XR_NULL_PATH}, {hand_action, XR_NULL_PATH}};
  JL_XR_CHECK(xrStringToPath(instance, "/interaction_profiles/khr/simple_controller", &profile));
  JL_XR_CHECK(xrStringToPath(instance, "/user/hand/left/input/grip/pose", &bindings[0].binding));
  JL_XR_CHECK(xrStringToPath(instance, "/user/hand/right/input/grip/pose", &bindings[1].binding));
  auto ipsb = make<XrInteractionProfileSuggestedBinding>(XR_TYPE_INTERACTION_PROFILE_SUGGESTED_BINDING);
  ipsb.interactionProfile = profile;
  ipsb.countSuggestedBindings = 2;
  ipsb.suggestedBindings = bindings;
  JL_XR_CHECK(xrSuggestInteractionProfileBindings(instance, &ipsb));
  auto sasai = make<XrSessionActionSetsAttachInfo>(XR_TYPE_SESSION_ACTION_SETS_ATTACH_INFO);
  sasai.countActionSets = 1;
  sasai.actionSets = &action_set;
  JL_XR_CHECK(xrAttachSessionActionSets(session, &sasai));
  XrSpace hands[2] = {XR_NULL_HANDLE, XR_NULL_HANDLE};
  for (int h = 0; h < 2; ++h) {
    auto aspci = make<XrActionSpaceCreateInfo>(XR_TYPE_ACTION_SPACE_CREATE_INFO);
    aspci.action = hand_action;
    aspci.subactionPath = hand_paths[h];
    aspci.poseInActionSpace.orientation.w = 1;
    JL_XR_CHECK(xrCreateActionSpace(session, &aspci, &hands[h]));
  }

  auto poll = [&](XrSessionState want) -> bool {
    for (int i = 0; i < 100; ++i) {
      auto ev = make<XrEventDataBuffer>(XR_TYPE_EVENT_DATA_BUFFER);
      if (xrPollEvent(instance, &ev) != XR_SUCCESS) return false;
      if (ev.type == XR_TYPE_EVENT_DATA_SESSION_STATE_CHANGED &&
          reinterpret_cast<XrEventDataSessionStateChanged*>(&ev)->state == want)
        return true;
    }
    return false;
  };
  if (!poll(XR_SESSION_STATE_READY)) {
    error = "no READY event";
    return frames;
  }
  auto sbi = make<XrSessionBeginInfo>(XR_TYPE_SESSION_BEGIN_INFO);
  sbi.primaryViewConfigurationType = XR_VIEW_CONFIGURATION_TYPE_PRIMARY_STEREO;
  JL_XR_CHECK(xrBeginSession(session, &sbi));
  poll(XR_SESSION_STATE_FOCUSED);

  for (int f = 0; f < n; ++f) {
    auto fwi = make<XrFrameWaitInfo>(XR_TYPE_FRAME_WAIT_INFO);
    auto fs = make<XrFrameState>(XR_TYPE_FRAME_STATE);
    const std::int64_t t0 = clock_ns();
    JL_XR_CHECK(xrWaitFrame(session, &fwi, &fs));
    auto fbi = make<XrFrameBeginInfo>(XR_TYPE_FRAME_BEGIN_INFO);
    JL_XR_CHECK(xrBeginFrame(session, &fbi));
    const std::int64_t t1 = clock_ns();
    Frame fr;
    fr.display = fs.predictedDisplayTime;
    auto vli = make<XrViewLocateInfo>(XR_TYPE_VIEW_LOCATE_INFO);
    vli.viewConfigurationType = XR_VIEW_CONFIGURATION_TYPE_PRIMARY_STEREO;
    vli.displayTime = fs.predictedDisplayTime;
    vli.space = local;
    auto vs = make<XrViewState>(misuse ? XR_TYPE_FRAME_STATE : XR_TYPE_VIEW_STATE);
    XrView views[2] = {make<XrView>(XR_TYPE_VIEW), make<XrView>(XR_TYPE_VIEW)};
    uint32_t count = 0;
    const std::int64_t t2 = clock_ns();
    JL_XR_CHECK(xrLocateViews(session, &vli, &vs, 2, &count, views));
    fr.ns_views = clock_ns() - t2;
    fr.views_valid = (vs.viewStateFlags & XR_VIEW_STATE_ORIENTATION_VALID_BIT) != 0;
    if (fr.views_valid) {
      fr.d_left = infer_delay(fr.display, views[0].pose.orientation, omega, &XrQuaternionf::y);
      fr.d_right = infer_delay(fr.display, views[1].pose.orientation, omega, &XrQuaternionf::y);
      const double dx = double(views[0].pose.position.x) - views[1].pose.position.x;
      const double dy = double(views[0].pose.position.y) - views[1].pose.position.y;
      const double dz = double(views[0].pose.position.z) - views[1].pose.position.z;
      fr.eye_distance = std::sqrt(dx * dx + dy * dy + dz * dz);
      // Where the runtime's eyes were at display - d_left: (+-0.032, 0, 0) turned about +Y, at head height.
      const double theta = omega * ((double(fr.display) - fr.d_left) * 1e-9);
      fr.eye_error = 0;
      for (int e = 0; e < 2; ++e) {
        const double off = e == 0 ? -0.032 : 0.032;
        const double ex = off * std::cos(theta) - views[e].pose.position.x;
        const double ey = 1.6 - views[e].pose.position.y;
        const double ez = -off * std::sin(theta) - views[e].pose.position.z;
        fr.eye_error = std::max(fr.eye_error, std::sqrt(ex * ex + ey * ey + ez * ez));
      }
    }
    auto vel = make<XrSpaceVelocity>(XR_TYPE_SPACE_VELOCITY);
    auto loc = make<XrSpaceLocation>(XR_TYPE_SPACE_LOCATION);
    loc.next = &vel;
    const std::int64_t t3 = clock_ns();
    JL_XR_CHECK(xrLocateSpace(view, local, fs.predictedDisplayTime, &loc));
    fr.ns_space = clock_ns() - t3;
    fr.head_valid = (loc.locationFlags & XR_SPACE_LOCATION_ORIENTATION_VALID_BIT) != 0;
    if (fr.head_valid) fr.d_head = infer_delay(fr.display, loc.pose.orientation, omega, &XrQuaternionf::y);
    fr.velocity_valid = vel.velocityFlags != 0;
    const XrActiveActionSet active{action_set, XR_NULL_PATH};
    auto asi = make<XrActionsSyncInfo>(XR_TYPE_ACTIONS_SYNC_INFO);
    asi.countActiveActionSets = 1;
    asi.activeActionSets = &active;
    JL_XR_CHECK(xrSyncActions(session, &asi));
    fr.hands_valid = true;
    for (int h = 0; h < 2; ++h) {
      auto hand = make<XrSpaceLocation>(XR_TYPE_SPACE_LOCATION);
      JL_XR_CHECK(xrLocateSpace(hands[h], local, fs.predictedDisplayTime, &hand));
      if ((hand.locationFlags & XR_SPACE_LOCATION_ORIENTATION_VALID_BIT) == 0) {
        fr.hands_valid = false;
        continue;
      }
      (h == 0 ? fr.d_left_hand : fr.d_right_hand) =
          infer_delay(fr.display, hand.pose.orientation, omega, h == 0 ? &XrQuaternionf::x : &XrQuaternionf::z);
    }
    auto fei = make<XrFrameEndInfo>(XR_TYPE_FRAME_END_INFO);
    fei.displayTime = fs.predictedDisplayTime;
    fei.environmentBlendMode = XR_ENVIRONMENT_BLEND_MODE_OPAQUE;
    const std::int64_t t4 = clock_ns();
    JL_XR_CHECK(xrEndFrame(session, &fei));
    fr.ns_frame = (t1 - t0) + (clock_ns() - t4);
    frames.push_back(fr);
  }
  JL_XR_CHECK(xrRequestExitSession(session));
  poll(XR_SESSION_STATE_STOPPING);
  JL_XR_CHECK(xrEndSession(session));
  xrDestroySpace(hands[0]);
  xrDestroySpace(hands[1]);
  xrDestroyAction(hand_action);
  xrDestroyActionSet(action_set);
  xrDestroySpace(view);
  xrDestroySpace(local);
  xrDestroySession(session);
  return frames;
}
#undef JL_XR_CHECK

}  // namespace jitterlab::xr::testapp
