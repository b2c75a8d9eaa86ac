// jitterlab-xr-testapp [--frames N]: runs the test application (testapp.hpp) and prints one CSV
// line per frame: display time, then the delays (ns) inferred from the left eye, the right
// eye and the head (empty when the pose was not valid), then the time spent in xrLocateViews,
// xrLocateSpace and xrWaitFrame + xrBeginFrame + xrEndFrame (ns; benchmarks/xr_overhead.py),
// then the delays inferred from the left and the right hand. Exit 1 with one line on failure.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "testapp.hpp"
#include "tool_util.hpp"

int main(int argc, char** argv) {
  int n = 100;
  jitterlab::tool::read_options("jitterlab-xr-testapp", argc, argv, "[--frames N]",
                     "Runs a headless OpenXR session through the loader (docs/xr.md) and prints per frame the\n"
                     "delays inferred from the poses it got and the time spent in each call (CSV).",
                     {jitterlab::tool::int_option("--frames", "N", "frames to run (default 100)", n, 1, 100'000'000)});
  const char* omega_env = std::getenv("JL_XR_TEST_OMEGA");
  const double omega = omega_env != nullptr ? std::strtod(omega_env, nullptr) : 1.0;
  std::string error;
  const auto frames = jitterlab::xr::testapp::run(n, omega, error);
  std::printf("display_ns,d_left_ns,d_right_ns,d_head_ns,ns_locate_views,ns_locate_space,ns_frame_calls,d_left_hand_ns,d_right_hand_ns\n");
  for (const auto& f : frames) {
    auto cell = [](double v) { return std::isnan(v) ? std::string() : std::to_string(std::llround(v)); };
    std::printf("%lld,%s,%s,%s,%lld,%lld,%lld,%s,%s\n", static_cast<long long>(f.display), cell(f.d_left).c_str(),
                cell(f.d_right).c_str(), cell(f.d_head).c_str(), static_cast<long long>(f.ns_views),
                static_cast<long long>(f.ns_space), static_cast<long long>(f.ns_frame), cell(f.d_left_hand).c_str(),
                cell(f.d_right_hand).c_str());
  }
  if (!error.empty()) {
    std::fprintf(stderr, "jitterlab-xr-testapp: %s\n", error.c_str());
    return 1;
  }
  return 0;
}
