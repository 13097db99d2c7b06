// Side-by-side native timing of every persistency scheme against base (pmlab bench; reusable by
// eval).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "pmlab/persist/flush.hpp"
#include "pmlab/persist/persister.hpp"
#include "pmlab/pool/params.hpp"

namespace pmlab::run {

struct BenchOptions {
  std::string kernel = "tmm";
  std::vector<std::string> schemes;  // empty: every scheme of the kernel; base is always added
  std::uint64_t n = 768;
  std::uint64_t bs = 16;
  std::uint32_t threads = 2;
  int reps = 15;
  std::uint64_t seed = 1;
  std::vector<pool::KernelParam> kernel_params;  // the kernel's own (conv2d: width)
  persist::PersistMode mode = persist::PersistMode::kCpu;
  persist::FlushKind flush = persist::FlushKind::kClwb;
  std::string
      dir;  // where the temporary pools go (a fresh subdirectory, removed after); empty: $TMPDIR
  // Called before each measurement: (measurements done, total, "rep r/R scheme").
  std::function<void(std::size_t, std::size_t, const std::string&)> progress;
  // Checked between measurements: when set, run_bench removes its pools and throws
  // pmlab::Error(kInterrupted). Signal handlers set it (a handler cannot remove files safely).
  const std::atomic<bool>* stop = nullptr;
};

struct BenchSchemeResult {
  std::string scheme;
  std::vector<double> seconds;  // one per repetition, in repetition order
  double median = 0, min = 0, max = 0, q1 = 0, q3 = 0;
  // Per repetition t(scheme) / t(base) of the same repetition: median and extremes.
  double ratio = 0, ratio_min = 0, ratio_max = 0;
  // min(scheme) / min(base): the least-disturbed runs, robust when the machine is shared.
  double best_ratio = 0;
  bool bit_exact = true;  // C equalled base's C bit for bit in every repetition
};

// Unit costs of persisting on this machine, measured next to the schemes (cpu mode only, with
// the run's flush instruction): they explain the schemes' overheads (docs/schemes.md).
struct PersistUnitCosts {
  double flush_fence_ns = 0;   // store to a line, flush it, sfence: one serialized persist
  double flush_stream_ns = 0;  // per dirty line when many are flushed before one sfence
  double nt_copy_gbs = 0;      // non-temporal copy bandwidth (copy_durable's native path)
};

struct BenchResult {
  std::string kernel;
  std::uint64_t n = 0, bs = 0;
  std::uint32_t threads = 0;
  int reps = 0;
  std::string persist, flush, nt_store_isa;
  double wall_seconds = 0;
  std::vector<BenchSchemeResult> schemes;  // base first
  PersistUnitCosts unit_costs;             // zero unless persist = cpu
};

// Validates the options (throws pmlab::Error with a readable message), then for each
// repetition runs every scheme once on a fresh pool (creation and pre-faulting untimed), in an
// order rotated per repetition, timing only the kernel computation.
[[nodiscard]] BenchResult run_bench(const BenchOptions& opt);

[[nodiscard]] nlohmann::json to_json(const BenchResult& r);
// Markdown table: scheme, median, IQR, min-max, ratio to base (median, range, of minima),
// bit-exact.
[[nodiscard]] std::string to_markdown(const BenchResult& r);

}  // namespace pmlab::run
