// jitterlab-xr-testapp FRAMES: runs the test application (testapp.hpp) and prints one CSV
// line per frame: display time, then the delays (ns) inferred from the left eye, the right
// eye and the head (empty when the pose was not valid). Exit 1 with one line on failure.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "testapp.hpp"

int main(int argc, char** argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 100;
  const char* omega_env = std::getenv("JL_XR_TEST_OMEGA");
  const double omega = omega_env != nullptr ? std::strtod(omega_env, nullptr) : 1.0;
  std::string error;
  const auto frames = jitterlab::xr::testapp::run(n, omega, error);
  std::printf("display_ns,d_left_ns,d_right_ns,d_head_ns\n");
  for (const auto& f : frames) {
    auto cell = [](double v) { return std::isnan(v) ? std::string() : std::to_string(std::llround(v)); };
    std::printf("%lld,%s,%s,%s\n", static_cast<long long>(f.display), cell(f.d_left).c_str(),
                cell(f.d_right).c_str(), cell(f.d_head).c_str());
  }
  if (!error.empty()) {
    std::fprintf(stderr, "jitterlab-xr-testapp: %s\n", error.c_str());
    return 1;
  }
  return 0;
}
