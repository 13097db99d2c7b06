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

static void init_grid(double* g, uint64_t n) {
  for (uint64_t i = 0; i < n * n; ++i) g[i] = (double)((i * 2654435761u) % 1000);
}

static void sweep_rows(const double* u, double* v, uint64_t n, uint64_t i0, uint64_t i1) {
  for (uint64_t i = i0; i < i1; ++i)
    for (uint64_t j = 1; j + 1 < n; ++j)
      v[i * n + j] =
          u[i * n + j] + kAlpha * (u[(i - 1) * n + j] + u[(i + 1) * n + j] + u[i * n + j - 1] +
                                   u[i * n + j + 1] - 4 * u[i * n + j]);
}

/* [protection] what protecting the loop adds (to the end marker; check-examples counts it) */
/* What the callbacks need: the parameters and the pool's two grids. */
struct heat {
  uint64_t n, steps, bs;
  double* g[2];
};

static int init(void* user, pmlab_loop* loop) {
  struct heat* h = user;
  init_grid(pmlab_loop_array(loop, "a"), h->n);
  init_grid(pmlab_loop_array(loop, "b"), h->n);
  return 0;
}

static int band(void* user, uint64_t t, uint64_t k) {
  const struct heat* h = user;
  const uint64_t end = 1 + (k + 1) * h->bs < h->n - 1 ? 1 + (k + 1) * h->bs : h->n - 1;
  sweep_rows(h->g[t % 2], h->g[(t + 1) % 2], h->n, 1 + k * h->bs, end);
  return 0;
}

/* Exits with the status's message when a call failed. */
static void check(int rc, pmlab_loop* loop, const char* what) {
  if (rc == PMLAB_OK) return;
  fprintf(stderr, "c_heat: %s: %s: %s\n", what, pmlab_strerror(rc), pmlab_loop_error(loop));
  exit(rc == PMLAB_E_INVALID ? 2 : 3);
}
/* [end] */

int main(int argc, char** argv) {
  if (argc != 2 && argc != 5) {
    fprintf(stderr, "usage: %s POOL [N STEPS BS]\n", argv[0]);
    return 2;
  }
  struct heat h = {64, 10, 8, {NULL, NULL}};
  if (argc == 5) {
    h.n = strtoull(argv[2], NULL, 10);
    h.steps = strtoull(argv[3], NULL, 10);
    h.bs = strtoull(argv[4], NULL, 10);
  }
  if (h.n < 3 || h.steps == 0 || h.bs == 0 || h.bs > h.n - 2) {
    fprintf(stderr, "c_heat: needs N >= 3, STEPS >= 1 and 1 <= BS <= N - 2\n");
    return 2;
  }
  const uint64_t n = h.n, params[3] = {h.n, h.steps, h.bs}; /* [protection] [end] */

  /* [protection] The protected loop: describe, open (or create), run (or recover, resume). */
  pmlab_loop* loop = pmlab_loop_new();
  check(pmlab_loop_add_array(loop, "a", n * n), loop, "array a");
  check(pmlab_loop_add_array(loop, "b", n * n), loop, "array b");
  check(pmlab_loop_set_layout(loop, h.steps, "b,a", n, n * n - n, h.bs * n), loop, "layout");
  check(pmlab_loop_set_params(loop, params, sizeof params), loop, "params");
  check(pmlab_loop_set_option(loop, "name", "c-heat"), loop, "name");
  check(pmlab_loop_open(loop, argv[1], init, &h), loop, "open");
  h.g[0] = pmlab_loop_array(loop, "a");
  h.g[1] = pmlab_loop_array(loop, "b");
  pmlab_report r;
  check(pmlab_loop_run(loop, band, &h, &r), loop, "run");
  /* [end] */
  printf("c_heat n=%llu steps=%llu bs=%llu: %llu regions per step\n", (unsigned long long)n,
         (unsigned long long)h.steps, (unsigned long long)h.bs,
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
  double* g[2] = {malloc(n * n * sizeof(double)), malloc(n * n * sizeof(double))};
  init_grid(g[0], n);
  init_grid(g[1], n);
  for (uint64_t t = 0; t < h.steps; ++t) sweep_rows(g[t % 2], g[(t + 1) % 2], n, 1, n - 1);
  const int bad = memcmp(g[h.steps % 2], h.g[h.steps % 2], n * n * sizeof(double)) != 0;
  printf("  verify: %s\n", bad ? "FAILED" : "OK");
  free(g[0]);
  free(g[1]);
  pmlab_loop_free(loop); /* [protection] [end] */
  return bad;
}
