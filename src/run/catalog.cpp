// The catalog of kernels (native driver + simulator entry points, one line each), and
// persistence-mode names.
#include <string>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "pmlab/core/error.hpp"
#include "pmlab/run/catalog.hpp"
#include "pmlab/run/sim_session.hpp"

namespace pmlab::run {

// Each kernel's two entries, built from its one description (src/kernels/<kernel>_kernel.cpp):
// the native driver and the simulator's entry points run the same scheme rows.
KernelDriver make_tmm_driver();
KernelDriver make_cholesky_driver();
KernelDriver make_lu_driver();
KernelDriver make_gauss_driver();
KernelDriver make_conv2d_driver();
KernelDriver make_fft_driver();
KernelDriver make_gemm_driver();
KernelDriver make_sps_driver();  // seed 004 BEP (docs/bep.md)
KernelDriver make_rbtree_driver();
KernelDriver make_sdg_driver();
KernelDriver make_hash_driver();
KernelDriver make_queue_driver();
KernelDriver make_cg_driver();  // seed 002 (docs/seed002.md)
KernelDriver make_jacobi_driver();
SimKernel make_tmm_sim();
SimKernel make_cholesky_sim();
SimKernel make_lu_sim();
SimKernel make_gauss_sim();
SimKernel make_conv2d_sim();
SimKernel make_fft_sim();
SimKernel make_gemm_sim();
SimKernel make_sps_sim();
SimKernel make_rbtree_sim();
SimKernel make_sdg_sim();
SimKernel make_hash_sim();
SimKernel make_queue_sim();
SimKernel make_cg_sim();
SimKernel make_jacobi_sim();

namespace {

struct CatalogEntry {
  KernelDriver (*native)();
  SimKernel (*sim)();
};

// The catalog: one line per kernel.
constexpr CatalogEntry kCatalog[] = {
    {make_tmm_driver, make_tmm_sim},       {make_cholesky_driver, make_cholesky_sim},
    {make_lu_driver, make_lu_sim},         {make_gauss_driver, make_gauss_sim},
    {make_conv2d_driver, make_conv2d_sim}, {make_fft_driver, make_fft_sim},
    {make_gemm_driver, make_gemm_sim},     {make_sps_driver, make_sps_sim},
    {make_rbtree_driver, make_rbtree_sim}, {make_sdg_driver, make_sdg_sim},
    {make_hash_driver, make_hash_sim},     {make_queue_driver, make_queue_sim},
    {make_cg_driver, make_cg_sim},         {make_jacobi_driver, make_jacobi_sim},
};

template <class T>
std::vector<T> build_all(T (*CatalogEntry::*make)()) {
  std::vector<T> all;
  for (const auto& e : kCatalog) all.push_back((e.*make)());
  return all;
}

}  // namespace

const std::vector<KernelDriver>& kernel_drivers() {
  static const std::vector<KernelDriver> drivers = build_all(&CatalogEntry::native);
  return drivers;
}

const std::vector<SimKernel>& sim_kernels() {
  static const std::vector<SimKernel> kernels = build_all(&CatalogEntry::sim);
  return kernels;
}

void require_layout_tag(const pool::Pool& pool, std::uint32_t ours) {
  const pool::RunParams& stored = pool.params();
  if (stored.layout_tag == 0 || stored.layout_tag == ours) return;
  pool::RunParams asked = stored;
  asked.layout_tag = ours;
  throw Error(ErrorCode::kPoolMismatch,
              fmt::format("pool '{}' does not match this run: {}", pool.path(),
                          fmt::join(pool::describe_differences(stored, asked), "; ")));
}

const KernelDriver* kernel_driver_named(const std::string& name) {
  for (const auto& d : kernel_drivers())
    if (d.name == name) return &d;
  return nullptr;
}

const KernelDriver& find_kernel(const std::string& name) {
  if (const KernelDriver* d = kernel_driver_named(name)) return *d;
  std::string known;
  for (const auto& d : kernel_drivers()) known += (known.empty() ? "" : ", ") + d.name;
  throw Error(ErrorCode::kInvalidArgument,
              fmt::format("unknown kernel '{}' (known: {})", name, known));
}

RunPlan plan_run(const pool::RunParams& p) {
  return plan_run(find_kernel(p.kernel), p);
}

RunPlan plan_run(const KernelDriver& k, const pool::RunParams& p) {
  RunPlan plan{&k, p, {}, 0};
  plan.kernel->validate(plan.params);
  plan.arrays = plan.kernel->arrays(plan.params);
  plan.layout_tag = plan.kernel->layout_tag(plan.params);
  return plan;
}

const scheme::RowFacts* catalog_row(const std::string& kernel, std::string_view scheme) {
  const KernelDriver* k = kernel_driver_named(kernel);
  return k != nullptr ? k->row(scheme) : nullptr;
}

persist::PersistMode persist_mode_from_string(const std::string& s) {
  if (s == "auto") return persist::PersistMode::kAuto;
  if (s == "cpu") return persist::PersistMode::kCpu;
  if (s == "none") return persist::PersistMode::kNone;
  throw Error(ErrorCode::kInvalidArgument,
              fmt::format("unknown persistence mode '{}' (expected auto, cpu or none)", s));
}

std::string_view to_string(persist::PersistMode m) {
  switch (m) {
    case persist::PersistMode::kAuto:
      return "auto";
    case persist::PersistMode::kCpu:
      return "cpu";
    case persist::PersistMode::kNone:
      return "none";
  }
  return "?";
}

}  // namespace pmlab::run
