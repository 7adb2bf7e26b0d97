/* bench/malloc_census.c — counts a process's malloc calls by size, to find what a
 * benchmark allocates per operation (preloaded; nothing in Rill links it):
 *
 *   LD_PRELOAD=build/lib/librill_malloc_census.so RILL_WORKERS=1 \
 *     build/bin/rill_bench_csp --benchmark_filter='BM_Prog_DaisyChain/10000/'
 *
 * At exit it prints to stderr every size requested at least RILL_CENSUS_MIN times
 * (default 10000; sizes past 4096 bytes share one line). Divide by the operations the run
 * made (iterations x items per iteration) for the allocations one operation makes.
 * RILL_CENSUS_TRACE=SIZE:N prints the call stack of the N-th malloc of SIZE bytes (then
 * `addr2line -f -C -i -e BINARY OFFSET` names the frames), to find who makes them.
 * operator new reaches malloc, so C++ allocations are counted; calloc and realloc are not. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <execinfo.h>
#include <stdio.h>
#include <stdlib.h>

enum { kLargest = 4096 };

static void* (*real_malloc)(size_t);
static unsigned long counts[kLargest + 1];
static size_t trace_size;
static unsigned long trace_nth;
static __thread int inside; /* backtrace and stdio may allocate: not counted */

__attribute__((constructor)) static void Start(void) {
  const char* trace = getenv("RILL_CENSUS_TRACE");
  if (trace != NULL && sscanf(trace, "%zu:%lu", &trace_size, &trace_nth) != 2) trace_nth = 0;
}

void* malloc(size_t bytes) {
  if (real_malloc == NULL) real_malloc = (void* (*)(size_t))dlsym(RTLD_NEXT, "malloc");
  if (!inside) {
    inside = 1;
    const unsigned long n = __atomic_add_fetch(&counts[bytes > kLargest ? kLargest : bytes], 1, __ATOMIC_RELAXED);
    if (trace_nth != 0 && bytes == trace_size && n == trace_nth) {
      void* frames[32];
      fprintf(stderr, "malloc_census: call %lu for %zu bytes:\n", n, bytes);
      backtrace_symbols_fd(frames, backtrace(frames, 32), 2);
    }
    inside = 0;
  }
  return real_malloc(bytes);
}

__attribute__((destructor)) static void Report(void) {
  inside = 1;
  const char* min_env = getenv("RILL_CENSUS_MIN");
  const unsigned long min = min_env != NULL ? strtoul(min_env, NULL, 10) : 10000;
  for (int size = 0; size <= kLargest; ++size) {
    if (counts[size] >= min) {
      fprintf(stderr, "malloc_census: %s%d bytes: %lu calls\n", size == kLargest ? ">= " : "", size, counts[size]);
    }
  }
}
