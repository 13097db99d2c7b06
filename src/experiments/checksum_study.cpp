// Injects realistic errors into real tmm region data and counts what each checksum kind misses.
#include "pmlab/experiments/checksum_study.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <random>

#include "pmlab/kernels/inputs.hpp"
#include "pmlab/kernels/tmm.hpp"
#include "pmlab/mem/native_backend.hpp"

namespace pmlab::experiments {
namespace {

template <lp::ChecksumKind K>
lp::ChecksumValue checksum(const std::vector<double>& v) {
  lp::Accumulator<K> acc;
  for (double x : v) acc.add(x);
  return acc.value();
}

// Two consecutive states of one real tmm panel (after steps kt-1 and kt): the stale-line
// model takes lines from the older one, as a crash in LP would leave them.
struct PanelStates {
  std::vector<double> before, after;
};

PanelStates real_panel_states(std::uint64_t region_values, std::uint64_t seed) {
  const std::size_t bs = 16;
  const std::size_t n = std::max<std::size_t>(bs, region_values / bs);
  std::vector<double> a(n * n), b(n * n), c(n * n, 0.0);
  for (std::size_t i = 0; i < n * n; ++i) {
    a[i] = kernels::input_value(seed, 0, i);
    b[i] = kernels::input_value(seed, 1, i);
  }
  kernels::tmm::Operands op{{a.data(), n, n}, {b.data(), n, n}, {c.data(), n, n}, n, bs};
  mem::PlainBackend be;
  const std::size_t kt = op.tiles() / 2;  // a mid-run step: values are neither tiny nor final
  for (std::size_t k = 0; k < kt; ++k) kernels::tmm::panel_step(be, op, k, 0, lp::kIgnoreStored);
  PanelStates s;
  s.before.assign(c.begin(), c.begin() + static_cast<std::ptrdiff_t>(bs * n));
  kernels::tmm::panel_step(be, op, kt, 0, lp::kIgnoreStored);
  s.after.assign(c.begin(), c.begin() + static_cast<std::ptrdiff_t>(bs * n));
  return s;
}

void corrupt(std::vector<double>& v, const PanelStates& states, ErrorModel m,
             std::mt19937_64& rng) {
  std::uniform_int_distribution<std::size_t> idx(0, v.size() - 1);
  auto flip = [](double x, int bit) {
    return std::bit_cast<double>(std::bit_cast<std::uint64_t>(x) ^ (1ull << bit));
  };
  switch (m) {
    case ErrorModel::kSingleBitFlip: {
      auto i = idx(rng);
      v[i] = flip(v[i], static_cast<int>(rng() % 64));
      break;
    }
    case ErrorModel::kRandomWords: {
      int count = 1 + static_cast<int>(rng() % 4);
      for (int c = 0; c < count; ++c) v[idx(rng)] = std::bit_cast<double>(rng());
      break;
    }
    case ErrorModel::kStaleLines: {
      const std::size_t lines = (v.size() + 7) / 8;
      const std::size_t stale = 1 + rng() % std::min<std::size_t>(lines, 8);
      for (std::size_t s = 0; s < stale; ++s) {
        std::size_t line = rng() % lines;
        for (std::size_t i = line * 8; i < std::min(v.size(), line * 8 + 8); ++i)
          v[i] = states.before[i];
      }
      break;
    }
    case ErrorModel::kCompensatingFlips: {
      // Find a bit set in one value and clear in another: flipping both keeps the XOR and the
      // sum of bit patterns unchanged, the blind spot of parity and modular checksums.
      for (int attempt = 0; attempt < 64; ++attempt) {
        auto i = idx(rng), j = idx(rng);
        int bit = static_cast<int>(rng() % 64);
        auto bi = std::bit_cast<std::uint64_t>(v[i]), bj = std::bit_cast<std::uint64_t>(v[j]);
        if (i != j && ((bi >> bit) & 1u) == 1u && ((bj >> bit) & 1u) == 0u) {
          v[i] = flip(v[i], bit);
          v[j] = flip(v[j], bit);
          return;
        }
      }
      v[0] = flip(v[0], 0);  // degenerate data: fall back to a single flip
      break;
    }
  }
}

}  // namespace

std::string_view to_string(ErrorModel m) {
  switch (m) {
    case ErrorModel::kSingleBitFlip:
      return "single-bit-flip";
    case ErrorModel::kRandomWords:
      return "random-words";
    case ErrorModel::kStaleLines:
      return "stale-lines";
    case ErrorModel::kCompensatingFlips:
      return "compensating-flips";
  }
  return "?";
}

double AccuracyCell::upper_bound_95() const {
  if (trials == 0) return 1.0;
  if (undetected == 0) return 3.0 / static_cast<double>(trials);
  // Normal approximation with continuity; fine for the counts reported here.
  double p = static_cast<double>(undetected) / static_cast<double>(trials);
  return std::min(1.0, p + 1.96 * std::sqrt(p * (1 - p) / static_cast<double>(trials)) +
                           0.5 / static_cast<double>(trials));
}

std::vector<AccuracyCell> run_accuracy_study(const ChecksumStudyOptions& opt) {
  const PanelStates states = real_panel_states(opt.region_values, opt.seed);
  std::vector<AccuracyCell> cells;
  const std::size_t total = std::size(lp::kAllChecksumKinds) * std::size(kAllErrorModels);
  for (auto kind : lp::kAllChecksumKinds) {
    for (auto model : kAllErrorModels) {
      AccuracyCell cell{kind, model};
      std::mt19937_64 rng(kernels::mix64(opt.seed * 131 + static_cast<std::uint64_t>(kind) * 17 +
                                         static_cast<std::uint64_t>(model)));
      lp::with_checksum_kind(kind, [&](auto k) {
        constexpr auto K = decltype(k)::value;
        const auto good = checksum<K>(states.after);
        std::vector<double> v;
        while (cell.trials < opt.trials_per_cell) {
          v = states.after;
          corrupt(v, states, model, rng);
          if (std::memcmp(v.data(), states.after.data(), v.size() * sizeof(double)) == 0)
            continue;  // the corruption happened to change nothing: not an error
          ++cell.trials;
          if (checksum<K>(v) == good) ++cell.undetected;
        }
      });
      cells.push_back(cell);
      if (opt.on_progress)
        opt.on_progress(static_cast<double>(cells.size()) / static_cast<double>(total));
    }
  }
  return cells;
}

std::vector<OverheadCell> run_overhead_study(const ChecksumStudyOptions& opt) {
  const std::size_t n = opt.overhead_n, bs = 16;
  std::vector<double> a(n * n), b(n * n), c(n * n);
  for (std::size_t i = 0; i < n * n; ++i) {
    a[i] = kernels::input_value(opt.seed, 0, i);
    b[i] = kernels::input_value(opt.seed, 1, i);
  }
  kernels::tmm::Operands op{{a.data(), n, n}, {b.data(), n, n}, {c.data(), n, n}, n, bs};
  std::vector<lp::ChecksumSlot> slots(op.table_slots());
  lp::ChecksumTable table(slots.data(), slots.size());
  mem::PlainBackend be({}, opt.threads);
  // One timed repetition: `executions` runs, each on a zeroed C and table (untimed).
  auto repetition = [&](std::uint64_t executions, auto&& fn) {
    experiments::RunTiming total;
    for (std::uint64_t e = 0; e < executions; ++e) {
      std::fill(c.begin(), c.end(), 0.0);
      std::fill(slots.begin(), slots.end(), lp::ChecksumSlot{});
      const auto t = experiments::time_run(fn);
      total.wall_seconds += t.wall_seconds;
      total.cpu_seconds += t.cpu_seconds;
    }
    total.wall_seconds = std::max(total.wall_seconds, 1e-9);
    return total;
  };
  auto run_base = [&] { kernels::tmm::run_base(be, op); };
  // Calibration (untimed, also warms caches): repeat tmm inside a repetition until it is long
  // enough to dwarf scheduler noise.
  const double once = repetition(1, run_base).wall_seconds;
  const auto executions =
      static_cast<std::uint64_t>(std::clamp(std::ceil(opt.overhead_rep_seconds / once), 1.0, 1e6));
  experiments::PairedRatioOptions po;
  po.target_relative_half_width = opt.overhead_target;
  po.budget_seconds = opt.overhead_budget_seconds;
  po.max_pairs = opt.overhead_max_pairs;
  po.threads_per_run = static_cast<unsigned>(std::max(1, opt.threads));
  std::vector<OverheadCell> cells;
  std::size_t done = 0;
  for (auto kind : lp::kAllChecksumKinds) {
    OverheadCell cell{kind, {}, executions};
    lp::with_checksum_kind(kind, [&](auto k) {
      auto run_lp = [&] { kernels::tmm::run_lp<decltype(k)::value>(be, op, table); };
      cell.result =
          experiments::measure_paired_ratio([&] { return repetition(executions, run_base); },
                                            [&] { return repetition(executions, run_lp); }, po);
    });
    cells.push_back(std::move(cell));
    if (opt.on_progress)
      opt.on_progress(static_cast<double>(++done) /
                      static_cast<double>(std::size(lp::kAllChecksumKinds)));
  }
  return cells;
}

nlohmann::json ChecksumStudy::to_json() const {
  nlohmann::json j;
  for (const auto& c : accuracy)
    j["accuracy"].push_back({{"checksum", std::string(lp::to_string(c.kind))},
                             {"error_model", to_string(c.model)},
                             {"trials", c.trials},
                             {"undetected", c.undetected},
                             {"miss_rate_upper_95", c.upper_bound_95()}});
  for (const auto& c : overhead) {
    const auto& r = c.result;
    nlohmann::json o = {
        {"checksum", std::string(lp::to_string(c.kind))},
        {"ratio", r.ratio},
        {"ci95", r.ci95 ? nlohmann::json{r.ci95->low, r.ci95->high} : nlohmann::json(nullptr)},
        {"resolved", r.resolved},
        {"reason", r.reason},
        {"text", experiments::format_ratio(r)},
        {"pairs_measured", r.pairs_measured},
        {"pairs_used", r.pairs_used},
        {"executions_per_rep", c.executions},
        {"base_rep_seconds", r.base_median_seconds},
        {"lp_rep_seconds", r.scheme_median_seconds},
        {"median_cpu_fraction", r.median_cpu_fraction}};
    o["load_before"] = r.load_before ? nlohmann::json(*r.load_before) : nlohmann::json(nullptr);
    o["load_after"] = r.load_after ? nlohmann::json(*r.load_after) : nlohmann::json(nullptr);
    j["overhead"].push_back(std::move(o));
  }
  return j;
}

}  // namespace pmlab::experiments
