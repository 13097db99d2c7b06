// lp::Loop: the pool, the state machine, LP regions over chunks, phase boundaries, recovery.
#include "pmlab/lp/loop.hpp"

#include <omp.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <mutex>
#include <optional>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "pmlab/core/crc32c.hpp"
#include "pmlab/core/error.hpp"
#include "pmlab/lp/checksum.hpp"
#include "pmlab/lp/checksum_table.hpp"
#include "pmlab/lp/loop_protocol.hpp"
#include "pmlab/mem/native_backend.hpp"
#include "pmlab/pool/run_states.hpp"

namespace pmlab::lp {
namespace {

Error usage(const std::string& what) {
  return Error(ErrorCode::kInvalidArgument, "lp::Loop: " + what);
}

bool reserved(std::string_view name) {
  return name.rfind("lp_", 0) == 0 || name == pool::kUserParamsArray;
}

}  // namespace

namespace loop_protocol {

std::uint64_t resolve(const std::vector<LoopArray>& arrays, LoopLayout& l) {
  if (arrays.empty()) throw usage("no arrays");
  for (std::size_t i = 0; i < arrays.size(); ++i) {
    const auto& a = arrays[i];
    if (a.name.empty() || a.name.size() >= kNameBytes)
      throw usage(
          fmt::format("array name '{}' must have 1 to {} characters", a.name, kNameBytes - 1));
    if (reserved(a.name))
      throw usage(fmt::format("array name '{}' is pmlab's (lp_... and {} are reserved)", a.name,
                              pool::kUserParamsArray));
    if (a.count == 0) throw usage(fmt::format("array '{}' has no elements", a.name));
    for (std::size_t j = 0; j < i; ++j)
      if (arrays[j].name == a.name) throw usage(fmt::format("array '{}' twice", a.name));
  }
  if (l.phases == 0) throw usage("phases must be >= 1");
  if (l.chunk == 0) throw usage("chunk (elements per region) must be >= 1");
  if (l.outputs.empty() || l.outputs.size() > kMaxOutputs)
    throw usage(fmt::format("outputs must name 1 to {} arrays", kMaxOutputs));
  std::uint64_t smallest = ~std::uint64_t{0};
  for (const auto& o : l.outputs) {
    const auto it =
        std::find_if(arrays.begin(), arrays.end(), [&](const LoopArray& a) { return a.name == o; });
    if (it == arrays.end()) throw usage(fmt::format("output '{}' is not one of the arrays", o));
    smallest = std::min(smallest, it->count);
  }
  if (l.last == 0) l.last = smallest;
  if (l.first >= l.last || l.last > smallest)
    throw usage(
        fmt::format("regions cover [{}, {}) but must lie in every output (>= 1 element, "
                    "outputs hold {})",
                    l.first, l.last, smallest));
  return (l.last - l.first + l.chunk - 1) / l.chunk;
}

LayoutRecord make_record(const LoopLayout& layout, std::uint64_t regions, ChecksumKind checksum) {
  LayoutRecord rec;
  rec.phases = layout.phases;
  rec.first = layout.first;
  rec.last = layout.last;
  rec.chunk = layout.chunk;
  rec.regions = regions;
  rec.checksum = static_cast<std::uint32_t>(checksum);
  rec.outputs = static_cast<std::uint32_t>(layout.outputs.size());
  for (std::size_t i = 0; i < layout.outputs.size(); ++i)
    std::memcpy(rec.output[i], layout.outputs[i].data(), layout.outputs[i].size());
  return rec;
}

std::vector<pool::ArraySpec> pool_arrays(const std::vector<LoopArray>& arrays,
                                         std::uint64_t regions) {
  std::vector<pool::ArraySpec> specs;
  for (const auto& a : arrays) specs.push_back({a.name, a.count * sizeof(double)});
  specs.push_back({kTableArray, ChecksumTable::bytes_for(regions)});
  specs.push_back({kProgressArray, sizeof(std::uint64_t)});
  specs.push_back({kLayoutArray, sizeof(LayoutRecord)});
  return specs;
}

View view_of(const pool::Pool& pool, const LayoutRecord& rec) {
  View v;
  for (std::uint32_t i = 0; i < rec.outputs; ++i)
    v.outputs.push_back(pool.array<double>(std::string_view(rec.output[i])));
  v.phases = rec.phases;
  v.first = rec.first;
  v.last = rec.last;
  v.chunk = rec.chunk;
  v.regions = rec.regions;
  v.table = ChecksumTable(pool.array<ChecksumSlot>(kTableArray), rec.regions);
  v.progress = pool.array<std::uint64_t>(kProgressArray);
  return v;
}

LayoutRecord read_record(const pool::Pool& pool) {
  const auto corrupt = [&](const std::string& why) {
    return Error(ErrorCode::kPoolCorrupt,
                 fmt::format("pool '{}' is not an lp::Loop pool: {}", pool.path(), why));
  };
  if (!pool.has_array(kLayoutArray) || pool.array_info(kLayoutArray).bytes != sizeof(LayoutRecord))
    throw corrupt("it has no layout record (lp_layout)");
  LayoutRecord rec;
  std::memcpy(&rec, pool.array<const std::byte>(kLayoutArray), sizeof rec);
  if (rec.magic != kLayoutMagic || rec.outputs == 0 || rec.outputs > kMaxOutputs ||
      rec.chunk == 0 || rec.first >= rec.last ||
      rec.regions != (rec.last - rec.first + rec.chunk - 1) / rec.chunk ||
      !is_valid_checksum_kind(rec.checksum))
    throw corrupt("its layout record is damaged");
  for (std::uint32_t i = 0; i < rec.outputs; ++i) {
    rec.output[i][kNameBytes - 1] = '\0';
    const std::string_view name(rec.output[i]);
    if (!pool.has_array(name) || pool.array_info(name).bytes < rec.last * sizeof(double))
      throw corrupt(fmt::format("output '{}' is missing or too short", name));
  }
  if (!pool.has_array(kTableArray) ||
      pool.array_info(kTableArray).bytes != ChecksumTable::bytes_for(rec.regions) ||
      !pool.has_array(kProgressArray))
    throw corrupt("its checksum table or progress record is missing");
  return rec;
}

}  // namespace loop_protocol

using loop_protocol::LayoutRecord;
using loop_protocol::View;

namespace {

// Refuses, in a loop's words, a pool at `path` whose header says it holds another run (the
// header's n, bs and seed hold regions, chunk and phases here); Pool::open would name the
// kernel's fields and point at `pmlab run`. A pool that is absent or unreadable is left to
// open_or_create.
void refuse_other_loop(const std::string& path, const pool::RunParams& want) {
  pool::RunParams have;
  try {
    have = pool::Pool::read_params(path);
  } catch (const Error&) {
    return;
  }
  std::vector<std::string> diffs;
  const auto differ = [&](const char* what, const auto& h, const auto& w) {
    if (h != w) diffs.push_back(fmt::format("{}: pool has {}, asked for {}", what, h, w));
  };
  differ("name", have.kernel, want.kernel);
  differ("scheme", have.scheme, want.scheme);
  differ("checksum", have.checksum, want.checksum);
  differ("regions per phase", have.n, want.n);
  differ("chunk", have.bs, want.bs);
  differ("phases", have.seed, want.seed);
  if (diffs.empty() && have.layout_tag != want.layout_tag)
    diffs.emplace_back("arrays or outputs differ");
  if (diffs.empty()) return;
  throw Error(ErrorCode::kPoolMismatch,
              fmt::format("pool '{}' was created with other parameters or layout ({}); use "
                          "another pool path or the parameters it was created with",
                          path, fmt::join(diffs, "; ")));
}

persist::Persistence asked_persistence(persist::Persistence from_options) {
  const char* env = std::getenv("PMLAB_PERSIST");
  return env != nullptr && *env != '\0' ? persist::persistence_from_string(env) : from_options;
}

}  // namespace

struct Loop::Impl {
  std::optional<pool::Pool> pool;
  pool::Pool* creating = nullptr;  // the pool being created, while `init` runs
  pool::Pool* borrowed = nullptr;  // the pool of an attached Loop (loop_protocol::attach)
  std::vector<LoopArray> arrays;
  LoopLayout layout;
  LoopOptions options;
  std::uint64_t regions = 0;
  bool created = false;
  // PMLAB_LOOP_KILL_AT=N: SIGKILL at the N-th protocol point (kill -9 tests at chosen points).
  std::uint64_t kill_at = 0;
  std::atomic<std::uint64_t> points{0};

  void point() {
    const std::uint64_t n = points.fetch_add(1, std::memory_order_relaxed) + 1;
    if (n == kill_at) ::kill(::getpid(), SIGKILL);
  }
  [[nodiscard]] const pool::Pool& active() const {
    return creating != nullptr ? *creating : borrowed != nullptr ? *borrowed : *pool;
  }
};

Loop loop_protocol::attach(pool::Pool& pool, const std::vector<LoopArray>& arrays,
                           const LoopLayout& layout) {
  auto impl = std::make_unique<Loop::Impl>();
  impl->arrays = arrays;
  impl->layout = layout;
  impl->regions = resolve(impl->arrays, impl->layout);
  impl->borrowed = &pool;
  return Loop(std::move(impl));
}

Loop::Loop(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Loop::Loop(const std::string& path, const void* params, std::size_t bytes,
           std::vector<LoopArray> arrays, LoopLayout layout, const Init& init, LoopOptions options)
    : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.regions = loop_protocol::resolve(arrays, layout);
  if (options.name.empty() || options.name.size() > 15)
    throw usage(fmt::format("name '{}' must have 1 to 15 characters", options.name));
  if (options.threads == 0) options.threads = static_cast<unsigned>(omp_get_max_threads());
  if (const char* k = std::getenv("PMLAB_LOOP_KILL_AT"); k != nullptr)
    m.kill_at = std::strtoull(k, nullptr, 10);
  m.arrays = std::move(arrays);
  m.layout = std::move(layout);
  m.options = std::move(options);

  const LayoutRecord rec = loop_protocol::make_record(m.layout, m.regions, m.options.checksum);
  std::string key = "lp-loop/1";
  for (const auto& a : m.arrays) key += fmt::format("/{}:{}", a.name, a.count);
  key += fmt::format("/{}/{}/{}/{}", rec.phases, rec.first, rec.last, rec.chunk);
  for (const auto& o : m.layout.outputs) key += "/" + o;

  pool::RunParams identity;
  identity.kernel = m.options.name;
  identity.scheme = std::string(loop_protocol::kLoopScheme);
  identity.checksum = std::string(to_string(m.options.checksum));
  identity.threads = 1;  // threads do not change a region's bits: a resume may use others
  identity.n = m.regions;
  identity.bs = m.layout.chunk;
  identity.seed = m.layout.phases;
  const std::uint32_t tag = crc32c(key.data(), key.size());
  identity.layout_tag = tag == 0 ? 1 : tag;

  refuse_other_loop(path, identity);
  m.pool.emplace(pool::open_or_create_with_bytes(
      path, identity, params, bytes, loop_protocol::pool_arrays(m.arrays, m.regions),
      [&](pool::Pool& p) {
        std::memcpy(p.array<std::byte>(loop_protocol::kLayoutArray), &rec, sizeof rec);
        m.creating = &p;
        if (init) init(*this);  // the pool persists every array before it is published
        m.creating = nullptr;
      },
      &m.created));
  (void)loop_protocol::read_record(*m.pool);
}

Loop::Loop(Loop&&) noexcept = default;
Loop& Loop::operator=(Loop&&) noexcept = default;
Loop::~Loop() = default;

std::byte* Loop::array_bytes(std::string_view name) const {
  const pool::Pool& p = impl_->active();
  if (reserved(name) || !p.has_array(name))
    throw usage(fmt::format("no array '{}' in this loop", name));
  return p.array<std::byte>(name);
}

std::uint64_t Loop::regions() const {
  return impl_->regions;
}
std::uint64_t Loop::phases() const {
  return impl_->layout.phases;
}
bool Loop::created() const {
  return impl_->created;
}
const pool::Pool& Loop::pool() const {
  return impl_->active();
}

LoopReport Loop::run(const Body& body) {
  Impl& m = *impl_;
  if (!m.pool) throw usage("run() on an attached Loop: the crash test runs its protocol");
  pool::Pool& pool = *m.pool;
  LoopReport report;
  report.created = m.created;
  const persist::ChosenPersist persister(pool.map(), asked_persistence(m.options.persistence));
  report.persistence = persister.description();
  if (m.options.warn_if_emulated && persister.chosen() != persist::Persistence::kNone)
    if (const auto w = persist::emulation_warning(pool.map(), pool.path()); !w.empty())
      std::fprintf(stderr, "pmlab: warning: %s\n", w.c_str());
  mem::NativeBackend<persist::ChosenPersist> be(persister, static_cast<int>(m.options.threads));
  const View v = loop_protocol::view_of(pool, loop_protocol::read_record(pool));

  with_checksum_kind(m.options.checksum, [&](auto kind) {
    constexpr ChecksumKind K = decltype(kind)::value;
    const auto point = [&m] { m.point(); };
    loop_protocol::Protocol<K, decltype(be), decltype(point)> protocol(be, v, body, point,
                                                                       /*store_outputs=*/false);
    const bool ran = pool::run_states(pool, [&](bool resumed) {
      report.resumed = resumed;
      const std::uint64_t first = resumed ? protocol.recover(report.recovery) : 0;
      report.resume_phase = first;
      for (std::uint64_t t = first; t < v.phases; ++t) {
        if (t > 0) protocol.boundary(t);
        std::exception_ptr error;
        std::mutex error_mutex;
        std::atomic<bool> failed{false};
        // The body is the user's: an exception must not cross OpenMP, so it is kept and
        // rethrown once the regions in flight are over (the pool stays running).
        be.parallel_for(0, v.regions, [&](std::size_t k) {
          if (failed.load(std::memory_order_relaxed)) return;
          try {
            protocol.region(t, k);
          } catch (...) {
            const std::lock_guard lock(error_mutex);
            if (!error) error = std::current_exception();
            failed.store(true, std::memory_order_relaxed);
          }
        });
        if (error) std::rethrow_exception(error);
      }
      protocol.finish();
    });
    report.already_done = !ran;
  });
  report.crash_points = m.points.load();
  return report;
}

bool holds_loop_run(const pool::RunParams& p) {
  return p.scheme == loop_protocol::kLoopScheme;
}

bool is_loop_pool(const pool::Pool& pool) {
  return holds_loop_run(pool.params()) && pool.has_array(loop_protocol::kLayoutArray);
}

LoopCheck check_loop_pool(const std::string& path) {
  const pool::Pool pool = pool::Pool::open_read_only(path);
  if (!is_loop_pool(pool))
    throw Error(ErrorCode::kPoolCorrupt,
                fmt::format("pool '{}' is not an lp::Loop pool (kernel {}, scheme {})", path,
                            pool.params().kernel, pool.params().scheme));
  const LayoutRecord rec = loop_protocol::read_record(pool);
  const View v = loop_protocol::view_of(pool, rec);
  LoopCheck c;
  c.state = pool.state();
  c.phases = v.phases;
  c.regions = v.regions;
  c.durable_phases = std::min(*v.progress, v.phases);
  if (c.state != pool::RunState::kRunning || *v.progress >= v.phases) return c;
  // What Loop::run's recovery does, minus the repairs (mem::PlainBackend only loads here).
  mem::PlainBackend be;
  const std::uint64_t p = *v.progress;
  with_checksum_kind(static_cast<ChecksumKind>(rec.checksum), [&](auto kind) {
    constexpr ChecksumKind K = decltype(kind)::value;
    for (std::uint64_t k = 0; k < v.regions; ++k) {
      const SlotCheck s = v.table.check(be, k, v.fold<K>(p, k), View::use_of(p));
      if (s == SlotCheck::kUnwritten) {
        ++c.recovery.regions_unwritten;
      } else {
        ++c.recovery.regions_validated;
        if (s == SlotCheck::kMatch) continue;
        ++c.recovery.regions_inconsistent;
      }
      ++c.recovery.regions_recomputed;
    }
  });
  return c;
}

}  // namespace pmlab::lp
