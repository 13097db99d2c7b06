/* pmlab's C API: a loop over regions protected by Lazy Persistency (lp::Loop) from C and, through
 * ISO_C_BINDING (pmlab.f90), Fortran. Opaque handles, error codes and messages; no exception
 * crosses it. docs/protect-your-own-loop.md describes the loop; examples/c-heat and
 * examples/fortran-heat use it. */
#ifndef PMLAB_PMLAB_H
#define PMLAB_PMLAB_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** What a call returned: 0 on success, else one of these (pmlab_strerror names it, and
 * pmlab_loop_error gives the message of the handle's last failure). */
enum pmlab_status {
  PMLAB_OK = 0,
  PMLAB_E_INVALID = 1,     /**< bad argument: impossible sizes, unknown names, wrong call order */
  PMLAB_E_CORRUPT = 2,     /**< the pool is damaged or not a loop pool */
  PMLAB_E_VERSION = 3,     /**< the pool has a format this pmlab does not read */
  PMLAB_E_MISMATCH = 4,    /**< the pool holds another run (parameters, arrays or layout) */
  PMLAB_E_BUSY = 5,        /**< another process holds the pool */
  PMLAB_E_IO = 6,          /**< open, create, map or space failures */
  PMLAB_E_UNSUPPORTED = 7, /**< the CPU lacks what was asked for */
  PMLAB_E_CALLBACK = 8,    /**< a callback returned non-zero (the pool stays running) */
  PMLAB_E_INTERNAL = 9     /**< anything else (out of memory, a bug) */
};

/** A loop being described, then open on its pool. A handle keeps its first failure: every later
 * call on it does nothing and returns that status (pmlab_loop_array returns NULL), and
 * pmlab_loop_error keeps that failure's message. A program may therefore make its calls and check
 * only the status of pmlab_loop_run:
 *
 *     pmlab_loop* loop = pmlab_loop_new();
 *     pmlab_loop_add_input(loop, "a", n, a);      // the pool's "a" starts as a copy of a[0..n)
 *     pmlab_loop_add_array(loop, "z", n);         // zero-filled
 *     pmlab_loop_set_layout(loop, 1, "z", 0, 0, 4096);
 *     pmlab_loop_set_params(loop, &params, sizeof params);
 *     pmlab_loop_open(loop, path, NULL, NULL);
 *     double* z = pmlab_loop_array(loop, "z");
 *     if (pmlab_loop_run(loop, body, z, NULL) != PMLAB_OK) puts(pmlab_loop_error(loop));
 *     pmlab_loop_free(loop);
 */
typedef struct pmlab_loop pmlab_loop;

/** Computes region `region` of phase `phase`; returns 0, or non-zero to stop the run. */
typedef int (*pmlab_body_fn)(void* user, uint64_t phase, uint64_t region);
/** Writes the inputs of a pool being created (pmlab_loop_array works inside it). */
typedef int (*pmlab_init_fn)(void* user, pmlab_loop* loop);

/** What pmlab_loop_run did (integers only, so that Fortran binds it as is). */
typedef struct pmlab_report {
  int32_t created;               /**< 1 if pmlab_loop_open created the pool */
  int32_t resumed;               /**< 1 if the pool held an interrupted run, which was recovered */
  int32_t already_done;          /**< 1 if the pool held a completed run: nothing ran */
  int32_t reserved;              /**< 0 (keeps the 64-bit fields aligned for every language) */
  uint64_t resume_phase;         /**< the first phase computed in full */
  uint64_t regions_validated;    /**< checksums recomputed and compared */
  uint64_t regions_inconsistent; /**< written checksums whose data did not match */
  uint64_t regions_unwritten;    /**< regions that never committed */
  uint64_t regions_recomputed;   /**< regions recovery redid */
  uint64_t crash_points;         /**< protocol points passed (PMLAB_LOOP_KILL_AT) */
} pmlab_report;

/** A new, empty loop description; NULL only when out of memory. */
pmlab_loop* pmlab_loop_new(void);
/** Frees the loop, closing its pool (a NULL loop is ignored). */
void pmlab_loop_free(pmlab_loop* loop);
/** Adds an array of `count` 8-byte elements, zero-filled when the pool is created. */
int pmlab_loop_add_array(pmlab_loop* loop, const char* name, uint64_t count);
/** Adds an array of `count` 8-byte elements whose values, when the pool is created, are a copy of
 * initial[0..count) (NULL: zeros). `initial` is read only by the pmlab_loop_open that creates the
 * pool, before any init callback runs; an open that finds the pool never reads it. */
int pmlab_loop_add_input(pmlab_loop* loop, const char* name, uint64_t count,
                         const double* initial);
/** The layout: phase t's region k writes elements [first + k*chunk, first + (k+1)*chunk) (up to
 * `last`, 0: the array's end) of output t % n of `outputs`, a comma-separated list of array
 * names ("b,a"). phases = 1: independent regions. */
int pmlab_loop_set_layout(pmlab_loop* loop, uint64_t phases, const char* outputs, uint64_t first,
                          uint64_t last, uint64_t chunk);
/** The run's own parameters, stored in the pool and compared byte for byte on every open. */
int pmlab_loop_set_params(pmlab_loop* loop, const void* params, size_t bytes);
/** An option: "name" (<= 15 characters), "threads" (a number; 0: OpenMP's default),
 * "persistence" (auto, pmem2, cpu, none), "checksum" (modular, parity, adler32, modular-parity,
 * crc32c), "warn" (0 or 1: the warning for a pool not on persistent memory). */
int pmlab_loop_set_option(pmlab_loop* loop, const char* key, const char* value);
/** Opens the pool at `path`, or creates it: arrays filled (pmlab_loop_add_input), then
 * init(user, loop) called, if not NULL, to write further inputs. */
int pmlab_loop_open(pmlab_loop* loop, const char* path, pmlab_init_fn init, void* user);
/** The array `name` of an open loop (or inside init); NULL, with the message set, if none. */
double* pmlab_loop_array(pmlab_loop* loop, const char* name);
/** Runs, recovers or resumes the loop (lp::Loop::run); `report` may be NULL. */
int pmlab_loop_run(pmlab_loop* loop, pmlab_body_fn body, void* user, pmlab_report* report);
/** Regions per phase of an open loop (0 before pmlab_loop_open). */
uint64_t pmlab_loop_regions(const pmlab_loop* loop);
/** The message of the loop's last failure ("" if none); valid until the next call on it. */
const char* pmlab_loop_error(const pmlab_loop* loop);
/** The name of a status ("PMLAB_E_MISMATCH", ...). */
const char* pmlab_strerror(int status);

/** What the next run's recovery will find on the loop pool at `path`, read without writing a
 * byte (lp::check_loop_pool): state 1 initialized, 2 running, 3 done. `message` (may be NULL)
 * receives the error message, truncated to `message_bytes`. */
int pmlab_loop_check(const char* path, int32_t* state, uint64_t* durable_phases,
                     pmlab_report* report, char* message, size_t message_bytes);

#ifdef __cplusplus
}
#endif

#endif /* PMLAB_PMLAB_H */
