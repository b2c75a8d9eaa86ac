// A warning of the closed set of codes (generated from src/jitterlab/core/warning_codes.toml
// into warning_codes.hpp: a code that is not in the set does not compile), with the detail
// a person reads.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "warning_codes.hpp"

namespace jitterlab {

struct Warning {
    WarningCode code;
    std::string detail;
    bool operator==(const Warning&) const = default;
};

/// {"code", "detail"} as harness.json carries it.
inline void to_json(nlohmann::ordered_json& j, const Warning& w) {
    j = nlohmann::ordered_json{{"code", std::string(warning_code_name(w.code))}, {"detail", w.detail}};
}

}  // namespace jitterlab
