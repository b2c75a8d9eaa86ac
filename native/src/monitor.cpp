// The live latency recorder: a bounded ring of fixed-size entries in POSIX shared memory.
//
// Writers claim an index with a compare-and-swap on write_index after checking that the
// ring has room (write_index - read_index < capacity); a full ring counts a drop and
// returns at once. With one recording thread (a frame loop) the claim never retries, so
// recording is wait-free; with several it is lock-free (a retry only when another thread
// claimed that index first). The entry is written, then its sequence number is published
// with a release store. The single reader (`jitterlab monitor serve`) copies entries whose
// sequence number says "published for this lap" (acquire) and then advances read_index.
// Layout and protocol: docs/monitor.md.
#include <jitterlab/monitor_c.h>

#include "jitterlab/unique_fd.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <thread>

namespace {

constexpr std::uint64_t kMagic = 0x6a6c6d6f6e697431ULL;  // "jlmonit1"
constexpr std::uint32_t kVersion = 2;  // 2: events carry their writer
constexpr std::size_t kHintMax = 128;

struct alignas(64) Header {
  std::atomic<std::uint64_t> magic;  // stored last by the creator: the ring is ready
  std::uint32_t version;
  std::uint32_t entry_bytes;
  std::uint64_t capacity;
  char hint[kHintMax];
  alignas(64) std::atomic<std::uint64_t> write_index;
  alignas(64) std::atomic<std::uint64_t> read_index;
  alignas(64) std::atomic<std::uint64_t> dropped;
};

struct Slot {
  std::atomic<std::uint64_t> seq;  // index + 1 once the entry of that index is published
  jl_monitor_event event;
};
static_assert(sizeof(Slot) == 64, "one cache line per entry");
static_assert(std::atomic<std::uint64_t>::is_always_lock_free, "shared atomics must be lock-free");

std::int64_t now_ns() noexcept {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

void set_error(char* err, std::size_t size, const std::string& message) {
  if (err && size) std::snprintf(err, size, "%s", message.c_str());
}

bool valid_channel(const char* channel) {
  if (!channel || !*channel || std::strlen(channel) > 64) return false;
  for (const char* p = channel; *p; ++p) {
    const char c = *p;
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
          c == '-'))
      return false;
  }
  return true;
}

std::string shm_name(const char* channel) { return std::string("/jitterlab-monitor-") + channel; }

struct Mapping {
  void* base = MAP_FAILED;
  std::size_t bytes = 0;
  ~Mapping() {
    if (base != MAP_FAILED) munmap(base, bytes);
  }
};

}  // namespace

struct jl_monitor {
  Mapping map;
  Header* header = nullptr;
  Slot* slots = nullptr;
  std::uint64_t mask = 0;
  std::uint64_t waiting_index = ~0ULL;  // the reader's: an unpublished entry it waits for
  std::int64_t waiting_since = 0;
  std::uint32_t owner_uid = 0;  // the ring file's owner and mode when it was opened
  std::uint32_t mode = 0;
  std::uint64_t writer = 0;  // this handle's identity in the events it publishes
};

namespace {

bool publish(jl_monitor* m, const jl_monitor_event& event) noexcept {
  Header& h = *m->header;
  std::uint64_t index = h.write_index.load(std::memory_order_relaxed);
  for (;;) {
    if (index - h.read_index.load(std::memory_order_acquire) >= h.capacity) {
      h.dropped.fetch_add(1, std::memory_order_relaxed);
      return false;
    }
    if (h.write_index.compare_exchange_weak(index, index + 1, std::memory_order_relaxed)) break;
  }
  Slot& slot = m->slots[index & m->mask];
  slot.event = event;
  slot.seq.store(index + 1, std::memory_order_release);
  return true;
}

}  // namespace

extern "C" {

jl_monitor* jl_monitor_open(const char* channel, std::size_t capacity, char* err, std::size_t err_size) {
  if (!valid_channel(channel)) {
    set_error(err, err_size, "a channel name is 1 to 64 letters, digits, '.', '_' or '-'");
    return nullptr;
  }
  if (capacity == 0) capacity = JL_MONITOR_DEFAULT_CAPACITY;
  if ((capacity & (capacity - 1)) != 0 || capacity < 64 || capacity > (1u << 26)) {
    set_error(err, err_size, "capacity must be a power of two between 64 and 67108864");
    return nullptr;
  }
  const std::string name = shm_name(channel);
  jitterlab::UniqueFd fd;
  bool creator = true;
  fd.reset(shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600));
  if (!fd && errno == EEXIST) {
    creator = false;
    fd.reset(shm_open(name.c_str(), O_RDWR, 0600));
  }
  if (!fd) {
    set_error(err, err_size, "shm_open " + name + ": " + std::strerror(errno));
    return nullptr;
  }
  auto monitor = std::unique_ptr<jl_monitor>(new (std::nothrow) jl_monitor());
  if (!monitor) return nullptr;
  if (creator) {
    const std::size_t bytes = sizeof(Header) + capacity * sizeof(Slot);
    if (ftruncate(fd.get(), static_cast<off_t>(bytes)) != 0) {
      set_error(err, err_size, "ftruncate " + name + ": " + std::strerror(errno));
      shm_unlink(name.c_str());
      return nullptr;
    }
  } else {
    // another process created it: wait (briefly) until it has sized and initialised it
    for (int i = 0; i < 1000; ++i) {
      struct stat st {};
      if (fstat(fd.get(), &st) == 0 && static_cast<std::size_t>(st.st_size) >= sizeof(Header)) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  struct stat st {};
  if (fstat(fd.get(), &st) != 0 || static_cast<std::size_t>(st.st_size) < sizeof(Header)) {
    set_error(err, err_size, name + ": not a jitterlab monitor ring (remove it: jitterlab monitor unlink)");
    return nullptr;
  }
  monitor->owner_uid = static_cast<std::uint32_t>(st.st_uid);
  monitor->mode = static_cast<std::uint32_t>(st.st_mode & 07777);
  monitor->map.bytes = static_cast<std::size_t>(st.st_size);
  // MAP_POPULATE: the whole ring is faulted in now, so no record ever pays for a page fault
  monitor->map.base =
      mmap(nullptr, monitor->map.bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd.get(), 0);
  if (monitor->map.base == MAP_FAILED) {
    set_error(err, err_size, "mmap " + name + ": " + std::strerror(errno));
    return nullptr;
  }
  monitor->header = static_cast<Header*>(monitor->map.base);
  monitor->slots = reinterpret_cast<Slot*>(static_cast<char*>(monitor->map.base) + sizeof(Header));
  Header& h = *monitor->header;
  if (creator) {
    // tmpfs memory starts zeroed: the atomics and slots are already 0
    h.version = kVersion;
    h.entry_bytes = sizeof(Slot);
    h.capacity = capacity;
    h.magic.store(kMagic, std::memory_order_release);
  } else {
    for (int i = 0; i < 1000 && h.magic.load(std::memory_order_acquire) != kMagic; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    // the header is read from a file: its capacity is bounded before it sizes anything (0
    // would make the mask all ones, 2^58 overflows capacity * sizeof(Slot) to 0)
    const std::uint64_t cap = h.capacity;
    const bool sane = h.magic.load(std::memory_order_acquire) == kMagic && h.version == kVersion &&
                      h.entry_bytes == sizeof(Slot) && cap >= 64 && cap <= (1u << 26) && (cap & (cap - 1)) == 0 &&
                      sizeof(Header) + cap * sizeof(Slot) <= monitor->map.bytes;
    if (!sane) {
      set_error(err, err_size, name + ": not a jitterlab monitor ring of this version (remove it: jitterlab monitor unlink)");
      return nullptr;
    }
  }
  monitor->mask = h.capacity - 1;
  static std::atomic<std::uint32_t> handles{0};
  monitor->writer = (static_cast<std::uint64_t>(getpid()) << 32) | (handles.fetch_add(1) + 1);
  return monitor.release();
}

void jl_monitor_close(jl_monitor* monitor) { std::unique_ptr<jl_monitor> owned(monitor); }

int jl_monitor_record(jl_monitor* monitor, std::int64_t latency_ns) {
  const std::int64_t end = now_ns();
  return jl_monitor_span(monitor, end - latency_ns, end);
}

int jl_monitor_span(jl_monitor* monitor, std::int64_t t_start_ns, std::int64_t t_end_ns) {
  jl_monitor_event event;
  event.t_send_ns = t_start_ns;
  event.t_recv_ns = t_end_ns;
  event.kind = JL_MONITOR_SAMPLE;
  event.tag_len = 0;
  std::memcpy(event.tag, &monitor->writer, sizeof monitor->writer);
  std::memset(event.tag + sizeof monitor->writer, 0, JL_MONITOR_TAG_MAX - sizeof monitor->writer);
  return publish(monitor, event) ? 0 : 1;
}

int jl_monitor_trial_begin(jl_monitor* monitor, const char* tag) {
  const std::size_t length = tag ? std::strlen(tag) : 0;
  if (length > JL_MONITOR_TAG_MAX) return -1;
  jl_monitor_event event{};
  event.t_send_ns = static_cast<std::int64_t>(monitor->writer);
  event.t_recv_ns = now_ns();
  event.kind = JL_MONITOR_TRIAL_BEGIN;
  event.tag_len = static_cast<std::uint32_t>(length);
  if (length) std::memcpy(event.tag, tag, length);
  return publish(monitor, event) ? 0 : 1;
}

int jl_monitor_trial_end(jl_monitor* monitor) {
  jl_monitor_event event{};
  event.t_send_ns = static_cast<std::int64_t>(monitor->writer);
  event.t_recv_ns = now_ns();
  event.kind = JL_MONITOR_TRIAL_END;
  return publish(monitor, event) ? 0 : 1;
}

std::uint64_t jl_monitor_dropped(const jl_monitor* monitor) {
  return monitor->header->dropped.load(std::memory_order_relaxed);
}

std::size_t jl_monitor_drain(jl_monitor* monitor, jl_monitor_event* out, std::size_t max, std::int64_t stale_ns) {
  Header& h = *monitor->header;
  std::uint64_t read = h.read_index.load(std::memory_order_relaxed);
  std::size_t n = 0;
  while (n < max) {
    Slot& slot = monitor->slots[read & monitor->mask];
    if (slot.seq.load(std::memory_order_acquire) != read + 1) {
      // unpublished: a writer is between claim and publish, or died there
      if (read >= h.write_index.load(std::memory_order_acquire)) break;  // nothing claimed
      const std::int64_t now = now_ns();
      if (monitor->waiting_index != read) {
        monitor->waiting_index = read;
        monitor->waiting_since = now;
        break;
      }
      if (now - monitor->waiting_since < stale_ns) break;
      h.dropped.fetch_add(1, std::memory_order_relaxed);  // a writer that never published
    } else {
      out[n++] = slot.event;
    }
    ++read;
    h.read_index.store(read, std::memory_order_release);
  }
  return n;
}

int jl_monitor_unlink(const char* channel) {
  if (!valid_channel(channel)) return -1;
  return shm_unlink(shm_name(channel).c_str());
}

int jl_monitor_set_hint(jl_monitor* monitor, const char* hint) {
  const std::size_t length = hint ? std::strlen(hint) : 0;
  if (length >= kHintMax) return -1;
  std::memset(monitor->header->hint, 0, kHintMax);
  if (length) std::memcpy(monitor->header->hint, hint, length);
  return 0;
}

std::size_t jl_monitor_hint(const jl_monitor* monitor, char* out, std::size_t out_size) {
  const std::size_t length = strnlen(monitor->header->hint, kHintMax);
  if (out && out_size) std::snprintf(out, out_size, "%.*s", static_cast<int>(length), monitor->header->hint);
  return length;
}

std::int64_t jl_monitor_now_ns(void) { return now_ns(); }

void jl_monitor_owner(const jl_monitor* monitor, std::uint32_t* uid, std::uint32_t* mode) {
  if (uid) *uid = monitor->owner_uid;
  if (mode) *mode = monitor->mode;
}

}  // extern "C"
