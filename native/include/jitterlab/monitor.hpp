// C++ wrapper of the live latency recorder (monitor_c.h): RAII for the channel and for a
// trial, exceptions only where the C API reports a failure to open.
#ifndef JITTERLAB_MONITOR_HPP
#define JITTERLAB_MONITOR_HPP

#include <jitterlab/monitor_c.h>

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>

namespace jitterlab {

class Monitor {
 public:
  explicit Monitor(const std::string& channel, std::size_t capacity = 0) {
    char err[256] = {0};
    handle_.reset(jl_monitor_open(channel.c_str(), capacity, err, sizeof err));
    if (!handle_) throw std::runtime_error(err);
  }
  // Records a latency that ended now; false when the ring was full (counted as dropped).
  bool record(std::int64_t latency_ns) noexcept { return jl_monitor_record(handle_.get(), latency_ns) == 0; }
  bool span(std::int64_t t_start_ns, std::int64_t t_end_ns) noexcept {
    return jl_monitor_span(handle_.get(), t_start_ns, t_end_ns) == 0;
  }
  std::uint64_t dropped() const noexcept { return jl_monitor_dropped(handle_.get()); }
  static std::int64_t now_ns() noexcept { return jl_monitor_now_ns(); }

  // A trial from construction to destruction: `auto trial = monitor.trial("cond-A/p07");`
  class Trial {
   public:
    Trial(Monitor& m, const std::string& tag) : m_(&m) {
      if (jl_monitor_trial_begin(m.handle_.get(), tag.c_str()) < 0) throw std::invalid_argument("trial tag too long");
    }
    Trial(const Trial&) = delete;
    Trial& operator=(const Trial&) = delete;
    ~Trial() { jl_monitor_trial_end(m_->handle_.get()); }

   private:
    Monitor* m_;
  };
  Trial trial(const std::string& tag) { return Trial(*this, tag); }

 private:
  struct Closer {
    void operator()(jl_monitor* m) const noexcept { jl_monitor_close(m); }
  };
  std::unique_ptr<jl_monitor, Closer> handle_;
};

}  // namespace jitterlab

#endif
