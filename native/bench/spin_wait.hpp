// How spinning techniques wait for one step.
#pragma once

#include <sched.h>

#include "jitterlab/channel.hpp"
#include "jitterlab/clock.hpp"

namespace jitterlab {

inline void spin_once(SpinMode mode) noexcept {
    if (mode == SpinMode::busy) cpu_relax();
    else sched_yield();
}

}  // namespace jitterlab
