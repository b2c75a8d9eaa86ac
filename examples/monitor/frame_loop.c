/* An application that records its latency live, through the installed jitterlab SDK.
 *
 * A stand-in for an engine's frame loop: each "frame" hands an item to the latency
 * injector (jitterlab's C API) and waits until the injector releases it, so the frame
 * sees the model's delay; the frame's latency goes to the monitor channel. Each TAG=MODEL
 * argument runs one trial of COUNT frames with that model, so a study's conditions and
 * their spikes arrive at `jitterlab monitor serve --channel CHANNEL` as they happen.
 *
 *   frame_loop [--scheduled] CHANNEL COUNT TAG=MODEL.json [TAG=MODEL.json ...]
 *
 * By default a frame records what it actually waited (the model's delay plus this
 * machine's wake-up jitter). --scheduled records the delay the injector imposed (its
 * availability time minus the arrival), without waiting: reproducible from the seeds.
 *
 * Built against the installed package, not the source tree (see CMakeLists.txt here):
 *   cmake -S examples/monitor -B build/example -DCMAKE_PREFIX_PATH="$(jitterlab sdk --cmakedir)"
 * or with pkg-config:
 *   PKG_CONFIG_PATH="$(jitterlab sdk --pkgconfigdir)" cc frame_loop.c \
 *       $(pkg-config --cflags --libs jitterlab-monitor jitterlab-inject) */
#include <jitterlab/injector_c.h>
#include <jitterlab/monitor_c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned seed_of(const char* tag) { /* FNV-1a: each trial tag its own delays */
  unsigned h = 2166136261u;
  for (const char* p = tag; *p; ++p) h = (h ^ (unsigned char)*p) * 16777619u;
  return h;
}

static int run_trial(jl_monitor* monitor, const char* tag, const char* model, long count, unsigned seed,
                     int scheduled) {
  char err[512];
  jl_injector* injector = jl_injector_create(model, seed, 0, 1024, err, sizeof err);
  if (!injector) {
    fprintf(stderr, "frame_loop: %s\n", err);
    return 2;
  }
  if (jl_monitor_trial_begin(monitor, tag) < 0) {
    fprintf(stderr, "frame_loop: trial tag '%s' is too long\n", tag);
    jl_injector_destroy(injector);
    return 2;
  }
  int64_t next_frame = jl_now_ns(); /* --scheduled: a frame starts when the last was released */
  for (long i = 0; i < count; ++i) {
    const int64_t arrival = scheduled ? next_frame : jl_now_ns();
    jl_injector_push(injector, arrival, (uint64_t)i);
    uint64_t item = 0;
    int64_t due = 0;
    if (scheduled) {
      jl_injector_pop_due(injector, jl_injector_next_due(injector), &item, &due);
      jl_monitor_span(monitor, arrival, due); /* the delay the condition imposed */
      next_frame = due;
      continue;
    }
    while (!jl_injector_pop_due(injector, jl_now_ns(), &item, &due)) jl_wait_until(jl_injector_next_due(injector));
    jl_monitor_span(monitor, arrival, jl_now_ns()); /* what the frame actually waited */
  }
  jl_monitor_trial_end(monitor);
  jl_injector_destroy(injector);
  return 0;
}

int main(int argc, char** argv) {
  int scheduled = 0;
  if (argc > 1 && strcmp(argv[1], "--scheduled") == 0) {
    scheduled = 1;
    ++argv;
    --argc;
  }
  if (argc < 4) {
    fprintf(stderr, "usage: frame_loop [--scheduled] CHANNEL COUNT TAG=MODEL.json [TAG=MODEL.json ...]\n");
    return 2;
  }
  char err[512];
  jl_monitor* monitor = jl_monitor_open(argv[1], 0, err, sizeof err);
  if (!monitor) {
    fprintf(stderr, "frame_loop: %s\n", err);
    return 2;
  }
  const long count = strtol(argv[2], NULL, 10);
  int status = 0;
  for (int a = 3; a < argc && status == 0; ++a) {
    char* spec = argv[a];
    char* eq = strchr(spec, '=');
    if (!eq) {
      fprintf(stderr, "frame_loop: '%s' is not TAG=MODEL.json\n", spec);
      status = 2;
      break;
    }
    *eq = '\0';
    status = run_trial(monitor, spec, eq + 1, count, seed_of(spec), scheduled);
  }
  printf("recorded %d trial(s); %llu dropped\n", argc - 3, (unsigned long long)jl_monitor_dropped(monitor));
  jl_monitor_close(monitor);
  return status;
}
