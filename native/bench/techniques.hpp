// The factories of the thread-based techniques, one per file.
#pragma once

#include <memory>

#include "jitterlab/channel.hpp"

namespace jitterlab {

std::unique_ptr<Channel> make_mutex_channel(SpinMode mode);
std::unique_ptr<Channel> make_spin_channel(SpinMode mode);
std::unique_ptr<Channel> make_spsc_channel(SpinMode mode);
std::unique_ptr<Channel> make_futex_channel(SpinMode mode);
std::unique_ptr<Channel> make_pipe_channel(SpinMode mode);
std::unique_ptr<Channel> make_unix_channel(SpinMode mode);

}  // namespace jitterlab
