/* bench/line_transfer.c — how long one cache line takes to pass between two threads on this
 * machine now, to read a two-worker benchmark by:
 *
 *   build/bin/rill_line_transfer
 *
 * Two threads take turns writing one counter (each waits for the other's write), 2,000,000
 * times; it prints the time of one pass. These shared machines' two vCPUs sit close
 * together in some spells (25-30 ns a pass) and far apart in others (155-170 ns), for
 * minutes at a time; work split across two workers (a go block spawned on one and run on
 * the other) slows down by as much, so a two-worker figure means little without the
 * spell it was taken in (docs/PERFORMANCE.md, stop 33). Not a benchmark of Rill. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>

enum { kPasses = 2000000 };

static _Atomic long turn __attribute__((aligned(64)));

/* Answers each odd value with the next even one. */
static void* Answer(void* unused) {
  (void)unused;
  for (long i = 0; i < kPasses / 2; ++i) {
    while (atomic_load_explicit(&turn, memory_order_acquire) != 2 * i + 1) {}
    atomic_store_explicit(&turn, 2 * i + 2, memory_order_release);
  }
  return NULL;
}

int main(void) {
  pthread_t other;
  if (pthread_create(&other, NULL, Answer, NULL) != 0) {
    perror("pthread_create");
    return 1;
  }
  struct timespec start, end;
  clock_gettime(CLOCK_MONOTONIC, &start);
  for (long i = 0; i < kPasses / 2; ++i) {
    atomic_store_explicit(&turn, 2 * i + 1, memory_order_release);
    while (atomic_load_explicit(&turn, memory_order_acquire) != 2 * i + 2) {}
  }
  clock_gettime(CLOCK_MONOTONIC, &end);
  pthread_join(other, NULL);
  const double ns = (double)(end.tv_sec - start.tv_sec) * 1e9 + (double)(end.tv_nsec - start.tv_nsec);
  printf("%.1f ns per cache-line pass between two threads\n", ns / kPasses);
  return 0;
}
