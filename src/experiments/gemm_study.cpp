// Thesis Ch. 4 (Fig. 4.3): simulates every GEMM variant under base / eager / lazy Recompute,
// packed and unpacked, on the thesis-ch4 machine with the NVM row-buffer model on.
#include "pmlab/experiments/gemm_study.hpp"

#include <fmt/format.h>

#include "pmlab/core/error.hpp"
#include "pmlab/kernels/gemm.hpp"
#include "pmlab/run/sim_session.hpp"
#include "pmlab/sim/params.hpp"
#include "pmlab/sim/stats.hpp"

namespace pmlab::experiments {

using nlohmann::json;

const std::vector<GemmConfig>& gemm_configs() {
  static const std::vector<GemmConfig> c = {
      {"base", "base", false},      {"base-packed", "base", true},
      {"eager", "ep-eager", false}, {"eager-packed", "ep-eager", true},
      {"lazy", "ep-lazy", false},   {"lazy-packed", "ep-lazy", true}};
  return c;
}

json gemm_study_variant(const std::string& variant, const GemmStudyOptions& o) {
  sim::MachineSettings mo;
  if (o.llc_bytes > 0) mo.set("llc-size", o.llc_bytes);
  const sim::SimParams machine = sim::machine_from("thesis-ch4", mo);
  const std::uint64_t llc = machine.llc.size_bytes;
  // §4.7 (Hong-Kung style): at most M = LLC words of C can stay in cache, so at least n^2 - M
  // words must have been written to memory by the end of a run (no end-of-run drain here).
  const std::uint64_t n2 = o.n * o.n, m_words = llc / sizeof(double);
  const std::uint64_t bound_words = n2 > m_words ? n2 - m_words : 0;
  const auto v = kernels::gemm::variant_from_string(variant);
  if (!v)
    throw Error(ErrorCode::kInvalidArgument, fmt::format("unknown gemm variant '{}'", variant));
  json cells = json::array();
  for (const GemmConfig& c : gemm_configs()) {
    if (variant == "naive" && c.pack) continue;  // naive never packs
    run::SimRunSpec spec;
    spec.run.kernel = "gemm";
    spec.run.scheme = c.scheme;
    spec.run.n = o.n;
    spec.run.bs = o.bs;
    spec.run.seed = o.seed;
    spec.run.threads = static_cast<std::uint32_t>(o.threads);
    spec.run.set_kernel_param("variant", static_cast<std::uint64_t>(*v));
    if (c.pack) spec.run.set_kernel_param("pack", 1);
    if (o.row_order) spec.run.set_kernel_param("order", 1);
    spec.machine = machine;
    spec.drain = false;  // as the bound assumes: lines still cached at the end are not written
    const auto st = run::simulate(spec).stats;
    const std::uint64_t rows = st.nvm.row_buffer ? st.nvm.row_buffer->row_writes_total() : 0;
    cells.push_back({{"config", c.label},
                     {"scheme", c.scheme},
                     {"pack", c.pack},
                     {"cycles", st.cycles.value()},
                     {"line_writes", st.nvm.writes},
                     {"row_writes", rows},
                     {"fences", st.fences},
                     {"bound_words", bound_words},
                     {"bound_ok", st.nvm.writes * (64 / sizeof(double)) >= bound_words}});
  }
  return {{"variant", variant},   {"n", o.n},         {"bs", o.bs},
          {"threads", o.threads}, {"llc_bytes", llc}, {"order", o.row_order ? "rows" : "goto"},
          {"cells", cells}};
}

}  // namespace pmlab::experiments
