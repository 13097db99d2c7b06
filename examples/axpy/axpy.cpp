// Example: z = a*x + y protected with Lazy Persistency on a pmlab pool, using only the LP layer
// (pmlab::lp): regions with checksums, no flush or fence while computing, recovery by checksum.
//
//   axpy POOL [--n N] [--chunk C] [--stop-after R]
//
// --stop-after R ends the process after R regions, as a crash would (state stays "running");
// the next invocation on the same pool recovers: it validates every region against its checksum
// and recomputes the ones that do not match or were never reached. (A process exit leaves the
// data in the page cache; power failures are what examples/stencil-crash tests, in the
// simulator.)
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <pmlab/core/error.hpp>
#include <pmlab/lp/checksum.hpp>
#include <pmlab/lp/checksum_table.hpp>
#include <pmlab/lp/recovery.hpp>
#include <pmlab/lp/region.hpp>
#include <pmlab/mem/native_backend.hpp>
#include <pmlab/persist/persister.hpp>
#include <pmlab/pool/pool.hpp>
#include <pmlab/pool/user_params.hpp>

namespace {

using namespace pmlab;
constexpr auto kChecksum = lp::ChecksumKind::kModular;

// The user's own parameters, stored in the pool and checked on every resume.
struct AxpyParams {
  std::uint64_t n = 0;
  double a = 0;
  std::uint64_t chunk = 0;  // elements per LP region
  [[nodiscard]] std::uint64_t regions() const { return (n + chunk - 1) / chunk; }
};

double x_at(std::uint64_t i) {
  return 0.5 + static_cast<double>(i % 97);
}
double y_at(std::uint64_t i) {
  return 1.0 / static_cast<double>(1 + i % 13);
}

struct Arrays {
  const double* x;
  const double* y;
  double* z;
  lp::ChecksumTable table;
};

// One region: z[i] = a*x[i] + y[i] for its chunk. It reads only x and y, which nothing
// writes, so recomputing it after a crash gives the same bits (idempotent).
template <class B>
lp::ChecksumValue compute_region(B& be, const AxpyParams& p, const Arrays& arr, std::uint64_t r,
                                 bool commit) {
  lp::Region<kChecksum, B> region(be, arr.table, r, {0, static_cast<std::uint32_t>(r)});
  const std::uint64_t end = std::min(p.n, (r + 1) * p.chunk);
  for (std::uint64_t i = r * p.chunk; i < end; ++i)
    region.store(arr.z + i, p.a * be.load(arr.x + i) + be.load(arr.y + i));
  if (commit) region.commit();  // plain stores of the checksum: no flush, no fence
  return region.value();
}

int run(const std::string& path, const AxpyParams& p, std::uint64_t stop_after) {
  pool::RunParams identity;  // the header's own fields: what kind of run this pool holds
  identity.kernel = "axpy";
  identity.scheme = "lp";
  const std::vector<pool::ArraySpec> arrays{
      {"x", p.n * sizeof(double)},
      {"y", p.n * sizeof(double)},
      {"z", p.n * sizeof(double)},
      {lp::kTableArray, lp::ChecksumTable::bytes_for(p.regions())}};
  bool created = false;
  pool::Pool pool = pool::open_or_create_with(
      path, identity, p, arrays,
      [&](pool::Pool& pl) {  // inputs, persisted by the pool before it is published
        for (std::uint64_t i = 0; i < p.n; ++i) {
          pl.array<double>("x")[i] = x_at(i);
          pl.array<double>("y")[i] = y_at(i);
        }
      },
      &created);
  const Arrays arr{pool.array<const double>("x"),
                   pool.array<const double>("y"),
                   pool.array<double>("z"),
                   {pool.array<lp::ChecksumSlot>(lp::kTableArray), p.regions()}};
  // Flushes (recovery only) with whatever libpmem2 chose for this mapping.
  mem::NativeBackend<persist::Pmem2Persist> be(persist::Pmem2Persist(pool.map()), 1);

  std::printf("axpy n=%llu chunk=%llu regions=%llu pool=%s (%s)\n",
              static_cast<unsigned long long>(p.n), static_cast<unsigned long long>(p.chunk),
              static_cast<unsigned long long>(p.regions()), path.c_str(),
              created ? "created" : "opened");
  if (pool.state() == pool::RunState::kRunning) {
    // Interrupted: every region is either consistent with its checksum or recomputed now.
    const auto st = lp::recover_independent_regions(
        be, arr.table, p.regions(),
        [&](std::uint64_t r) {
          lp::Accumulator<kChecksum> acc;
          const std::uint64_t end = std::min(p.n, (r + 1) * p.chunk);
          for (std::uint64_t i = r * p.chunk; i < end; ++i) acc.add(be.load(arr.z + i));
          return acc.value();
        },
        [&](std::uint64_t r) {
          const auto v = compute_region(be, p, arr, r, /*commit=*/false);
          const std::uint64_t begin = r * p.chunk, end = std::min(p.n, (r + 1) * p.chunk);
          be.persist(arr.z + begin, (end - begin) * sizeof(double));
          return v;
        },
        /*repair_unwritten=*/true);
    std::printf(
        "  recovered: %llu regions validated, %llu inconsistent, %llu never written, "
        "%llu recomputed\n",
        static_cast<unsigned long long>(st.regions_validated),
        static_cast<unsigned long long>(st.regions_inconsistent),
        static_cast<unsigned long long>(st.regions_unwritten),
        static_cast<unsigned long long>(st.regions_recomputed));
  } else if (pool.state() == pool::RunState::kInitialized) {
    pool.set_state(pool::RunState::kRunning);
    for (std::uint64_t r = 0; r < p.regions(); ++r) {
      if (r == stop_after) {
        std::printf("  stopped after %llu regions (as a crash would)\n",
                    static_cast<unsigned long long>(r));
        std::fflush(stdout);
        _exit(0);  // no destructor, no unlock: like a killed process
      }
      compute_region(be, p, arr, r, /*commit=*/true);
    }
  } else {
    std::printf("  the pool holds a completed run\n");
  }
  if (pool.state() != pool::RunState::kDone) {
    pool.persist(arr.z, p.n * sizeof(double));  // the result, durable before "done"
    pool.set_state(pool::RunState::kDone);
  }

  std::uint64_t bad = 0;
  for (std::uint64_t i = 0; i < p.n; ++i)
    if (std::bit_cast<std::uint64_t>(arr.z[i]) !=
        std::bit_cast<std::uint64_t>(p.a * x_at(i) + y_at(i)))
      ++bad;
  std::printf("  verify: %s (%llu of %llu elements differ)\n", bad == 0 ? "OK" : "FAILED",
              static_cast<unsigned long long>(bad), static_cast<unsigned long long>(p.n));
  return bad == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s POOL [--n N] [--chunk C] [--stop-after R]\n", argv[0]);
    return 2;
  }
  AxpyParams p{1 << 20, 2.5, 4096};
  std::uint64_t stop_after = ~std::uint64_t{0};
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string opt = argv[i];
    const std::uint64_t v = std::strtoull(argv[i + 1], nullptr, 10);
    if (opt == "--n")
      p.n = v;
    else if (opt == "--chunk")
      p.chunk = v;
    else if (opt == "--stop-after")
      stop_after = v;
    else {
      std::fprintf(stderr, "unknown option %s\n", opt.c_str());
      return 2;
    }
  }
  if (p.n == 0 || p.chunk == 0) {
    std::fprintf(stderr, "--n and --chunk must be >= 1\n");
    return 2;
  }
  try {
    return run(argv[1], p, stop_after);
  } catch (const pmlab::Error& e) {
    std::fprintf(stderr, "axpy: %s\n", e.what());
    return 3;
  }
}
