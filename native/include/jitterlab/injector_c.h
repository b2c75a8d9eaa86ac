/* The C API of the latency injection engine, for engines and bindings (Python's
 * jitterlab.Injector uses it through ctypes). Items are opaque 64-bit tags; times are
 * CLOCK_MONOTONIC nanoseconds. Semantics: docs/model-format.md, "Injection semantics". */
#ifndef JITTERLAB_INJECTOR_C_H
#define JITTERLAB_INJECTOR_C_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define JL_API __attribute__((visibility("default")))

typedef struct jl_injector jl_injector;

/* Creates an injector from a model file; NULL on failure with a one-line reason in err. */
JL_API jl_injector* jl_injector_create(const char* model_path, uint64_t seed, int reorder, size_t capacity, char* err,
                                size_t err_size);
JL_API void jl_injector_destroy(jl_injector* injector);
/* Schedules an item; returns its availability time, or -1 when the queue is full (dropped). */
JL_API int64_t jl_injector_push(jl_injector* injector, int64_t arrival_ns, uint64_t tag);
/* Pops the next item due at or before now_ns: returns 1 and fills tag/available_at, or 0. */
JL_API int jl_injector_pop_due(jl_injector* injector, int64_t now_ns, uint64_t* tag, int64_t* available_at);
/* The next availability time, or INT64_MAX when the queue is empty. */
JL_API int64_t jl_injector_next_due(const jl_injector* injector);
JL_API size_t jl_injector_size(const jl_injector* injector);
JL_API uint64_t jl_injector_dropped(const jl_injector* injector);
/* CLOCK_MONOTONIC now, and an accurate wait until a deadline (sleep, then spin). */
JL_API int64_t jl_now_ns(void);
JL_API void jl_wait_until(int64_t deadline_ns);

#ifdef __cplusplus
}
#endif

#endif
