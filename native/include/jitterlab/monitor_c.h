/* The C API of the live latency recorder: an application records latencies into a bounded
 * shared-memory ring that `jitterlab monitor serve --channel NAME` drains, classifies and
 * stores. Recording never blocks: a full ring (or no server) counts a drop and returns.
 * Times are CLOCK_MONOTONIC nanoseconds. Method: docs/monitor.md. */
#ifndef JITTERLAB_MONITOR_C_H
#define JITTERLAB_MONITOR_C_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifndef JL_API
#define JL_API __attribute__((visibility("default")))
#endif

#define JL_MONITOR_TAG_MAX 32 /* bytes of a trial tag, without a terminating NUL */
#define JL_MONITOR_DEFAULT_CAPACITY 524288u

enum jl_monitor_kind { JL_MONITOR_SAMPLE = 0, JL_MONITOR_TRIAL_BEGIN = 1, JL_MONITOR_TRIAL_END = 2 };

/* One entry of the ring as the server drains it (56 bytes). */
/* Each opened handle is one writer (pid << 32 | a number within the process): trial marks
 * belong to the samples of their own writer, so writers sharing a channel never mix trials. */
typedef struct jl_monitor_event {
  int64_t t_send_ns; /* a sample: when the measured interval began; a trial mark: its writer */
  int64_t t_recv_ns; /* a sample: when it ended; a trial mark: its time */
  uint32_t kind;     /* enum jl_monitor_kind */
  uint32_t tag_len;  /* a trial begin: bytes of its tag */
  char tag[JL_MONITOR_TAG_MAX]; /* a trial begin: its tag; a sample: its writer (8 bytes, host order) */
} jl_monitor_event;

typedef struct jl_monitor jl_monitor;

/* Opens the ring of a channel (letters, digits, '.', '_', '-'), creating it when it does not
 * exist; capacity is in entries, a power of two (0: the default). NULL on failure, with a
 * one-line reason in err. */
JL_API jl_monitor* jl_monitor_open(const char* channel, size_t capacity, char* err, size_t err_size);
JL_API void jl_monitor_close(jl_monitor* monitor);

/* Records a latency that ended now. 0 when recorded, 1 when dropped (ring full). */
JL_API int jl_monitor_record(jl_monitor* monitor, int64_t latency_ns);
/* Records an interval measured by the caller. 0 when recorded, 1 when dropped. */
JL_API int jl_monitor_span(jl_monitor* monitor, int64_t t_start_ns, int64_t t_end_ns);
/* Marks the start and end of a trial (tag: at most JL_MONITOR_TAG_MAX bytes; -1 if longer). */
JL_API int jl_monitor_trial_begin(jl_monitor* monitor, const char* tag);
JL_API int jl_monitor_trial_end(jl_monitor* monitor);
/* Entries dropped because the ring was full, by every process on this channel. */
JL_API uint64_t jl_monitor_dropped(const jl_monitor* monitor);

/* The server's side: copies up to max published entries in order and frees their slots;
 * returns how many. An entry claimed by a writer that never published it (a crashed
 * writer) is skipped after stale_ns and counted as dropped. */
JL_API size_t jl_monitor_drain(jl_monitor* monitor, jl_monitor_event* out, size_t max, int64_t stale_ns);
/* Removes a channel's shared memory (writers that still have it open keep their mapping). */
JL_API int jl_monitor_unlink(const char* channel);
/* A note the recording side may leave for the server (the baseline run to classify with). */
JL_API int jl_monitor_set_hint(jl_monitor* monitor, const char* hint);
JL_API size_t jl_monitor_hint(const jl_monitor* monitor, char* out, size_t out_size);
JL_API int64_t jl_monitor_now_ns(void);
/* Who owns the ring's shared memory and its permission bits, as when it was opened. Another
 * local user may create a channel's ring first: a server should use only a ring of its own
 * user (or of a user it trusts) with mode 0600, or that user can feed and drain it. */
JL_API void jl_monitor_owner(const jl_monitor* monitor, uint32_t* uid, uint32_t* mode);

#ifdef __cplusplus
}
#endif

#endif
