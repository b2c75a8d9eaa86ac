// A warning of a closed set of codes with the detail a person reads. The codes are listed
// once for every language in src/jitterlab/core/warnings.py and the harness.json schema.
#pragma once

#include <string>

namespace jitterlab {

struct Warning {
    std::string code;
    std::string detail;
    bool operator==(const Warning&) const = default;
};

}  // namespace jitterlab
