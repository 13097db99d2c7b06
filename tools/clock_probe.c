/* Measures the core clock a running thread sees: a chain of dependent 64-bit adds retires one
   per cycle on x86-64 cores (latency 1), so adds per nanosecond is GHz (tools/gemm_fast.py). */
#include <stdint.h>
#include <stdio.h>
#include <time.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int main(void) {
  const long iters = 20000000; /* x 100 adds: ~0.5 s at 4 GHz */
  double best = 0;
  for (int rep = 0; rep < 5; ++rep) {
    uint64_t x = 1;
    const double t0 = now();
    for (long i = 0; i < iters; ++i) {
      /* 100 dependent adds; the loop's own compare and branch run beside them. */
      __asm__ volatile(".rept 100\n\tadd %0, %0\n\t.endr" : "+r"(x));
    }
    const double ghz = 100.0 * (double)iters / (now() - t0) / 1e9;
    if (ghz > best) best = ghz;
  }
  printf("%.3f\n", best);
  return 0;
}
