// libFuzzer target: the native model reader (LatencyModel::parse) on arbitrary bytes.
// A model is accepted or refused with ModelError; anything else (another exception, a
// sanitizer report, a hang) is a finding. Built and run by benchmarks/fuzz_native.sh
// (clang, -fsanitize=fuzzer,address,undefined).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "jitterlab/injector.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    try {
        const auto model = jitterlab::LatencyModel::parse(
            std::string_view(reinterpret_cast<const char*>(data), size), "fuzz");
        jitterlab::DelaySchedule schedule(model, 1, false);  // an accepted model must also run
        for (std::int64_t t = 0; t < 64; ++t) (void)schedule.available_at(t * 1'000'000);
    } catch (const jitterlab::ModelError&) {
    }
    return 0;
}
