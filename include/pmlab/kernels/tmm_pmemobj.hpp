// tmm with libpmemobj undo transactions (TX per ii iteration); native only, C lives in
// <pool>.pmemobj.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "pmlab/kernels/tmm.hpp"

namespace pmlab::kernels::tmm {

// Marker in the pmlab pool ("obj_state"): set once C has been copied back from the object
// pool, after which the object pool file is deleted.
struct alignas(64) ObjState {
  std::uint64_t copied_back;
  std::uint64_t reserved[7];
};

// An open libpmemobj pool holding C and one kk_done word per panel. libpmemobj needs a pool
// file of its own, so it sits next to the pmlab pool as `<pmlab pool>.pmemobj`; A and B stay
// in the pmlab pool (read-only inputs need no transaction).
class PmemobjTmm {
 public:
  struct Options {
    std::size_t n = 0, bs = 1;
    int threads = 1;
    bool fresh = false;      // discard an existing object pool (a new run)
    bool force_pmem = true;  // PMEM_IS_PMEM_FORCE=1: cache-line flushes instead of msync
  };
  [[nodiscard]] static std::string path_for(const std::string& pmlab_pool);
  // Opens `path` (libpmemobj rolls back interrupted transactions while opening) or creates it
  // atomically (built as path.creating, renamed when initialized). Throws pmlab::Error.
  [[nodiscard]] static PmemobjTmm open_or_create(const std::string& path, const Options& opt);
  static void remove(const std::string& path);

  PmemobjTmm(PmemobjTmm&&) noexcept;
  PmemobjTmm& operator=(PmemobjTmm&&) noexcept;
  ~PmemobjTmm();

  // First kk tile some panel still needs.
  [[nodiscard]] std::size_t resume_point() const;
  // Runs kk tiles [first_kt, tiles) with one transaction per (kk, ii); A and B from `op`.
  // `step_done` is called after each kk tile (the run's progress).
  void run(
      const Operands& op, std::size_t first_kt,
      const std::function<void()>& step_done = [] {}) const;
  // Copies C out of the object pool (plain memcpy; the caller persists).
  void copy_c(double* dst) const;
  [[nodiscard]] double* c() const;

 private:
  struct Impl;
  explicit PmemobjTmm(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace pmlab::kernels::tmm
