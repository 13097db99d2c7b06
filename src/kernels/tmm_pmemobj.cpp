// tmm with libpmemobj transactions: object pool life cycle, one TX per (kk, ii), rollback on open.
#include "pmlab/kernels/tmm_pmemobj.hpp"

#include <libpmemobj.h>
#include <omp.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

#include "pmlab/core/error.hpp"
#include "pmlab/core/strong_types.hpp"
#include "pmlab/mem/native_backend.hpp"

namespace pmlab::kernels::tmm {
namespace {

constexpr const char* kLayout = "pmlab-tmm-c";
constexpr std::uint64_t kMagic = 0x706d6c61626f626aull;  // "pmlabobj"

// Root object: header, one line per panel {kk_done}, then C (64-byte aligned inside the root).
struct RootHeader {
  std::uint64_t magic, n, bs, tiles;
};

std::size_t tiles_of(std::size_t n, std::size_t bs) {
  return (n + bs - 1) / bs;
}
std::size_t index_offset() {
  return kCacheLineBytes;
}
std::size_t c_offset(std::size_t tiles) {
  return kCacheLineBytes * (1 + tiles);
}
std::size_t root_bytes(std::size_t n, std::size_t bs) {
  return c_offset(tiles_of(n, bs)) + n * n * sizeof(double) + kCacheLineBytes;  // + alignment slack
}

[[noreturn]] void obj_error(const std::string& what, const std::string& path) {
  throw Error(ErrorCode::kIo,
              fmt::format("{} '{}': libpmemobj: {}", what, path, pmemobj_errormsg()));
}

}  // namespace

struct PmemobjTmm::Impl {
  PMEMobjpool* pop = nullptr;
  std::byte* base = nullptr;  // 64-byte aligned start of the root layout
  std::size_t n = 0, bs = 1, tiles = 0;
  int threads = 1;

  ~Impl() {
    if (pop != nullptr) pmemobj_close(pop);
  }
  [[nodiscard]] std::uint64_t* kk_done(std::size_t it) const {
    return reinterpret_cast<std::uint64_t*>(base + index_offset() + it * kCacheLineBytes);
  }
  [[nodiscard]] double* c() const { return reinterpret_cast<double*>(base + c_offset(tiles)); }
};

namespace {

std::byte* aligned_root(PMEMobjpool* pop, std::size_t bytes) {
  PMEMoid root = pmemobj_root(pop, bytes);
  if (OID_IS_NULL(root)) return nullptr;
  auto addr = reinterpret_cast<std::uintptr_t>(pmemobj_direct(root));
  return reinterpret_cast<std::byte*>(round_up(addr, kCacheLineBytes));
}

void create_file(const std::string& path, const PmemobjTmm::Options& o) {
  const std::string tmp = path + ".creating";
  std::filesystem::remove(tmp);
  const std::size_t tiles = tiles_of(o.n, o.bs);
  const std::size_t panel = std::min(o.bs, o.n) * o.n * sizeof(double);
  // Root + room for each thread's undo snapshots (a panel per transaction) + heap overhead.
  std::size_t bytes =
      root_bytes(o.n, o.bs) + 4 * static_cast<std::size_t>(o.threads) * panel + (16u << 20);
  bytes = std::max<std::size_t>(round_up(bytes, 1u << 20), PMEMOBJ_MIN_POOL);
  PMEMobjpool* pop = pmemobj_create(tmp.c_str(), kLayout, bytes, 0600);
  if (pop == nullptr) obj_error("cannot create object pool", tmp);
  std::byte* base = aligned_root(pop, root_bytes(o.n, o.bs));  // zero-filled by libpmemobj
  if (base == nullptr) {
    pmemobj_close(pop);
    obj_error("cannot allocate the root object in", tmp);
  }
  auto* h = reinterpret_cast<RootHeader*>(base);
  h->n = o.n;
  h->bs = o.bs;
  h->tiles = tiles;
  pmemobj_persist(pop, h, sizeof *h);
  h->magic = kMagic;  // last: a file with the magic is fully initialized
  pmemobj_persist(pop, &h->magic, sizeof h->magic);
  pmemobj_close(pop);
  std::filesystem::rename(tmp, path);  // atomic publish; a crash before it leaves only .creating
}

}  // namespace

std::string PmemobjTmm::path_for(const std::string& pmlab_pool) {
  return pmlab_pool + ".pmemobj";
}

void PmemobjTmm::remove(const std::string& path) {
  std::filesystem::remove(path);
  std::filesystem::remove(path + ".creating");
}

PmemobjTmm PmemobjTmm::open_or_create(const std::string& path, const Options& o) {
  // libpmem decides once per process whether a mapping is pmem; forcing it makes pmemobj flush
  // with clwb/clflushopt + sfence like the other schemes' cpu mode, instead of msync on a
  // plain file. An explicit user setting wins.
  if (o.force_pmem) ::setenv("PMEM_IS_PMEM_FORCE", "1", 0);
  if (o.fresh) remove(path);
  if (!std::filesystem::exists(path)) create_file(path, o);
  auto impl = std::make_unique<Impl>();
  impl->pop = pmemobj_open(path.c_str(), kLayout);  // rolls back interrupted transactions
  if (impl->pop == nullptr) obj_error("cannot open object pool", path);
  impl->base = aligned_root(impl->pop, root_bytes(o.n, o.bs));
  if (impl->base == nullptr) obj_error("cannot read the root object of", path);
  const auto* h = reinterpret_cast<const RootHeader*>(impl->base);
  if (h->magic != kMagic || h->n != o.n || h->bs != o.bs)
    throw Error(ErrorCode::kPoolMismatch,
                fmt::format("object pool '{}' does not belong to this run (n={}, bs={} expected); "
                            "delete it to start over",
                            path, o.n, o.bs));
  impl->n = o.n;
  impl->bs = o.bs;
  impl->tiles = tiles_of(o.n, o.bs);
  impl->threads = std::max(1, o.threads);
  return PmemobjTmm(std::move(impl));
}

PmemobjTmm::PmemobjTmm(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
PmemobjTmm::PmemobjTmm(PmemobjTmm&&) noexcept = default;
PmemobjTmm& PmemobjTmm::operator=(PmemobjTmm&&) noexcept = default;
PmemobjTmm::~PmemobjTmm() = default;

std::size_t PmemobjTmm::resume_point() const {
  std::uint64_t m = impl_->tiles;
  for (std::size_t it = 0; it < impl_->tiles; ++it) m = std::min(m, *impl_->kk_done(it));
  return static_cast<std::size_t>(m);
}

double* PmemobjTmm::c() const {
  return impl_->c();
}

void PmemobjTmm::copy_c(double* dst) const {
  std::memcpy(dst, impl_->c(), impl_->n * impl_->n * sizeof(double));
}

void PmemobjTmm::run(const Operands& ab, std::size_t first_kt,
                     const std::function<void()>& step_done) const {
  const Impl& m = *impl_;
  // The same operands with C redirected into the object pool: panel_step's FP order is reused.
  const Operands op{ab.a, ab.b, {m.c(), m.n, m.n}, m.n, m.bs};
  mem::PlainBackend be(
      {}, 1);  // plain loads/stores (stateless, shared by threads); libpmemobj persists
  const auto nt = static_cast<std::ptrdiff_t>(m.tiles);
  for (std::size_t kt = first_kt; kt < m.tiles; ++kt) {
    int failure = 0;
#pragma omp parallel for schedule(static) num_threads(m.threads) reduction(| : failure)
    for (std::ptrdiff_t i = 0; i < nt; ++i) {
      const auto it = static_cast<std::size_t>(i);
      std::uint64_t* done = m.kk_done(it);
      if (*done > kt) continue;  // finished before a crash
      if (pmemobj_tx_begin(m.pop, nullptr, TX_PARAM_NONE) != 0) {
        pmemobj_tx_end();
        failure = 1;
        continue;
      }
      // Undo-log the panel and its index (libpmemobj snapshots and persists them before
      // returning), update in place, commit (flushes the ranges, then retires the log).
      if (pmemobj_tx_xadd_range_direct(op.panel(it), op.panel_bytes(it), POBJ_XADD_NO_ABORT) != 0 ||
          pmemobj_tx_xadd_range_direct(done, sizeof *done, POBJ_XADD_NO_ABORT) != 0) {
        pmemobj_tx_abort(errno != 0 ? errno : EINVAL);
        pmemobj_tx_end();
        failure = 1;
        continue;
      }
      panel_step(be, op, kt, it, lp::kIgnoreStored);
      *done = kt + 1;
      pmemobj_tx_commit();
      if (pmemobj_tx_end() != 0) failure = 1;
    }
    if (failure != 0)
      throw Error(ErrorCode::kIo,
                  fmt::format("libpmemobj transaction failed: {}", pmemobj_errormsg()));
    step_done();
  }
}

}  // namespace pmlab::kernels::tmm
