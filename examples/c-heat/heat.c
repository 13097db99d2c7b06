/* Example: the 2-D heat stencil of examples/heat protected from C with pmlab's C API
 * (pmlab/pmlab.h), checked bit for bit against the same loop unprotected.
 *
 *   c_heat POOL [N STEPS BS]      (threads: OMP_NUM_THREADS; PMLAB_LOOP_KILL_AT=K kills at point K)
 */
#include <pmlab/pmlab.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const double kAlpha = 0.1;
static uint64_t n = 64, steps = 10, bs = 8;

static void init_grid(double* g) {
  for (uint64_t i = 0; i < n * n; ++i) g[i] = (double)((i * 2654435761u) % 1000);
}

/* Step t's rows [i0, i1) (clipped to the interior), from grid t % 2 to grid (t + 1) % 2. */
static void step(double* g[2], uint64_t t, uint64_t i0, uint64_t i1) {
  const double* u = g[t % 2];
  double* v = g[(t + 1) % 2];
  for (uint64_t i = i0; i < i1 && i + 1 < n; ++i)
    for (uint64_t j = 1; j + 1 < n; ++j)
      v[i * n + j] =
          u[i * n + j] + kAlpha * (u[(i - 1) * n + j] + u[(i + 1) * n + j] + u[i * n + j - 1] +
                                   u[i * n + j + 1] - 4 * u[i * n + j]);
}

/* [protection] what protecting the loop adds (to the end marker; check-examples counts it) */
static int band(void* pool_grid, uint64_t t, uint64_t k) {
  step(pool_grid, t, 1 + k * bs, 1 + (k + 1) * bs);
  return 0;
}
/* [end] */

int main(int argc, char** argv) {
  if (argc != 2 && argc != 5) {
    fprintf(stderr, "usage: %s POOL [N STEPS BS]\n", argv[0]);
    return 2;
  }
  if (argc == 5) {
    n = strtoull(argv[2], NULL, 10);
    steps = strtoull(argv[3], NULL, 10);
    bs = strtoull(argv[4], NULL, 10);
  }
  if (n < 3 || steps == 0 || bs == 0 || bs > n - 2) {
    fprintf(stderr, "c_heat: needs N >= 3, STEPS >= 1 and 1 <= BS <= N - 2\n");
    return 2;
  }
  double* g[2] = {malloc(n * n * sizeof(double)), malloc(n * n * sizeof(double))};
  init_grid(g[0]);
  init_grid(g[1]);
  pmlab_report r;

  /* [protection] The protected loop: describe, open (or create), run (or recover, resume). */
  pmlab_loop* loop = pmlab_loop_new(); /* a failed call makes every later one fail: check once */
  pmlab_loop_add_input(loop, "a", n * n, g[0]);
  pmlab_loop_add_input(loop, "b", n * n, g[1]);
  pmlab_loop_set_layout(loop, steps, "b,a", n, n * n - n, bs * n);
  pmlab_loop_set_params(loop, (uint64_t[]){n, steps, bs}, 3 * sizeof(uint64_t));
  pmlab_loop_open(loop, argv[1], NULL, NULL);
  double* pool_grid[2] = {pmlab_loop_array(loop, "a"), pmlab_loop_array(loop, "b")};
  const int rc = pmlab_loop_run(loop, band, pool_grid, &r);
  if (rc != PMLAB_OK)
    return fprintf(stderr, "%s: %s\n", pmlab_strerror(rc), pmlab_loop_error(loop)), 3;
  /* [end] */
  printf("c_heat n=%llu steps=%llu bs=%llu: %llu regions per step\n", (unsigned long long)n,
         (unsigned long long)steps, (unsigned long long)bs,
         (unsigned long long)pmlab_loop_regions(loop));
  if (r.already_done) printf("  the pool holds a completed run (already complete)\n");
  if (r.resumed)
    printf(
        "  recovered: %llu regions validated, %llu inconsistent, %llu never written, %llu "
        "recomputed; resumed at step %llu\n",
        (unsigned long long)r.regions_validated, (unsigned long long)r.regions_inconsistent,
        (unsigned long long)r.regions_unwritten, (unsigned long long)r.regions_recomputed,
        (unsigned long long)r.resume_phase);

  /* The unprotected loop, for the bit-for-bit comparison. */
  for (uint64_t t = 0; t < steps; ++t) step(g, t, 1, n - 1);
  const int bad = memcmp(g[steps % 2], pool_grid[steps % 2], n * n * sizeof(double)) != 0;
  printf("  verify: %s\n", bad ? "FAILED" : "OK");
  free(g[0]);
  free(g[1]);
  pmlab_loop_free(loop); /* [protection] [end] */
  return bad;
}
