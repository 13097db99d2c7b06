// `pmlab info --pool P`: what a pool holds (parameters, state, progress, arrays and whose they
// are, how its mapping persists), like `pmempool info`; read-only.
#include <sys/stat.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "build_info.hpp"
#include "commands.hpp"
#include "kernel_options.hpp"
#include "pmlab/core/error.hpp"
#include "pmlab/lp/checksum_table.hpp"
#include "pmlab/lp/loop.hpp"
#include "pmlab/pool/pool.hpp"
#include "pmlab/run/catalog.hpp"
#include "pmlab/scheme/family.hpp"

namespace pmlab::cli {
namespace {

struct InfoArgs {
  std::string pool;
  bool json = false;
};

// Arrays the scheme adds to the kernel's: those absent from the same run under "base" (the
// scheme that keeps no persistent state). Unknown kernels (a user's own): none is attributed.
std::vector<std::string> kernel_array_names(const pool::RunParams& p) {
  std::vector<std::string> names;
  try {
    const auto& k = run::find_kernel(p.kernel);
    pool::RunParams base = p;
    base.scheme = std::string(scheme::kBaseScheme);
    for (const auto& a : k.arrays(base)) names.push_back(a.name);
  } catch (const Error&) {
  }
  return names;
}

struct Progress {
  std::uint64_t committed = 0, slots = 0;
};

// LP progress: checksum-table slots whose tag says they were committed. Read through the
// mapping, i.e. what this process sees (after a crash: what reached the pool).
std::optional<Progress> lp_progress(const pool::Pool& pool) {
  if (!pool.has_array(lp::kTableArray)) return std::nullopt;
  const auto& info = pool.array_info(lp::kTableArray);
  const std::size_t slots = info.bytes / sizeof(lp::ChecksumSlot);
  const auto* s = pool.array<const lp::ChecksumSlot>(lp::kTableArray);
  Progress pr{0, slots};
  for (std::size_t i = 0; i < slots; ++i)
    if (s[i].tag == lp::ChecksumTable::tag_for(i)) ++pr.committed;
  return pr;
}

int do_info(const InfoArgs& a) {
  struct stat st {};
  if (::stat(a.pool.c_str(), &st) != 0)
    throw Error(ErrorCode::kIo, fmt::format("no pool at '{}'", a.pool));
  // The header alone needs no lock; the rest needs the pool open (refused while a run holds it),
  // read-only: info never writes, so it works on a read-only file or mount.
  const pool::RunParams p = pool::Pool::read_params(a.pool);
  std::optional<pool::Pool> pool;
  std::string busy;
  try {
    pool.emplace(pool::Pool::open_read_only(a.pool));
  } catch (const Error& e) {
    if (e.code() != ErrorCode::kPoolBusy) throw;
    busy = e.what();
  }
  const auto kernel_arrays = kernel_array_names(p);
  const auto owner = [&](const std::string& name) {
    for (const auto& k : kernel_arrays)
      if (k == name) return "kernel";
    return kernel_arrays.empty() ? "?" : "scheme";
  };

  nlohmann::json j{{"pool", a.pool},
                   {"file_bytes", static_cast<std::uint64_t>(st.st_size)},
                   {"params",
                    {{"kernel", p.kernel},
                     {"scheme", p.scheme},
                     {"n", p.n},
                     {"bs", p.bs},
                     {"threads", p.threads},
                     {"checksum", p.checksum},
                     {"seed", p.seed},
                     {"kernel_params", nlohmann::json::object()}}}};
  for (const auto& kp : p.kernel_params) j["params"]["kernel_params"][kp.name] = kp.value;
  std::optional<Progress> progress;
  if (pool) {
    j["state"] = pool::to_string(pool->state());
    j["starts"] = pool->starts();
    j["store_granularity"] = store_granularity(*pool);
    j["persistence_emulated"] = persistence_emulated(*pool);
    // tmm keeps its checksum table under every scheme; only LP's rows (and lp::Loop) fill it.
    const scheme::RowFacts* row = run::catalog_row(p.kernel, p.scheme);
    if ((row != nullptr && row->family == scheme::Family::kLp) || lp::holds_loop_run(p))
      progress = lp_progress(*pool);
    if (progress)
      j["lp_progress"] = {{"committed_slots", progress->committed}, {"slots", progress->slots}};
    for (const auto& arr : pool->arrays())
      j["arrays"].push_back({{"name", arr.name},
                             {"offset", arr.offset},
                             {"bytes", arr.bytes},
                             {"owner", owner(arr.name)}});
  } else {
    j["state"] = "in use";
    j["in_use"] = busy;
  }
  if (a.json) {
    fmt::print("{}\n", with_meta(j).dump(2));
    return kExitOk;
  }
  fmt::print("pool {} ({} bytes)\n", a.pool, static_cast<std::uint64_t>(st.st_size));
  fmt::print("  kernel {}, scheme {}, n {}, bs {}, threads {}, checksum {}, seed {}{}\n", p.kernel,
             p.scheme, p.n, p.bs, p.threads, p.checksum, p.seed, kernel_param_flags(p));
  if (!pool) {
    fmt::print("  state: in use by another process ({})\n", busy);
    return kExitOk;
  }
  fmt::print("  state {}, started {} time(s){}\n", pool::to_string(pool->state()), pool->starts(),
             pool->starts() > 1 ? " (resumed)" : "");
  if (progress)
    fmt::print("  LP progress: {} of {} checksum slots committed ({:.1f}%)\n", progress->committed,
               progress->slots,
               progress->slots ? 100.0 * static_cast<double>(progress->committed) /
                                     static_cast<double>(progress->slots)
                               : 0.0);
  fmt::print("  persistence: store granularity {}{}\n", store_granularity(*pool),
             persistence_emulated(*pool) ? " (no DAX: only emulated)" : "");
  fmt::print("  arrays:\n");
  for (const auto& arr : pool->arrays())
    fmt::print("    {:<16} {:>12} bytes at offset {:<10} ({})\n", arr.name, arr.bytes, arr.offset,
               owner(arr.name));
  return kExitOk;
}

}  // namespace

int run_info(const std::string& pool, bool json) {
  return do_info(InfoArgs{pool, json});
}

void add_info_command(CLI::App& app, int& exit_code) {
  auto a = std::make_shared<InfoArgs>();
  auto* cmd = app.add_subcommand(
      "info",
      "Describe a pool without changing it: stored parameters, state (initialized, running = "
      "interrupted, done), how many times a run started, LP progress (committed checksum slots), "
      "its arrays and which belong to the scheme, and whether persistence is real (DAX) or "
      "emulated. Exit 3 if the file is not a pool.");
  cmd->add_option("--pool", a->pool, "Pool file")->required();
  cmd->add_flag("--json", a->json, "Print JSON");
  cmd->callback([a, &exit_code] { exit_code = do_info(*a); });
}

}  // namespace pmlab::cli
