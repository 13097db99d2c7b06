// The tx and base scheme rows every undo-log BEP benchmark (rbtree, sdg, sps) shares.
#pragma once

#include <cstddef>
#include <cstdint>
#include <tuple>
#include <vector>

#include "pmlab/bep/tx.hpp"
#include "pmlab/mem/backend.hpp"
#include "pmlab/pool/pool.hpp"
#include "pmlab/run/bep_bench_params.hpp"
#include "pmlab/run/catalog.hpp"
#include "pmlab/scheme/scheme.hpp"

namespace pmlab::bep {

// The pool array of the per-thread undo logs (one TxLog per thread).
inline constexpr std::string_view kTxLogArray = "txlog";

// The scheme table of a benchmark whose every op is one undo-log Tx (tx.hpp): `tx` (epoch
// persistency, per-thread logs in the pool array "txlog", per-thread resume) and `base` (no
// persistency; recovery restarts from the initial structure). Ops supplies, for the run's
// operands in Ctx (a scheme::SchemeContext):
//   static void run_tx(auto& tracked, const Ctx&, TxLog* logs);
//   static std::uint64_t recover_tx(auto& tracked, const Ctx&, TxLog* logs);  // ops rolled back
//   static void run_base(auto& backend, const Ctx&);
//   static void restart(auto& backend, const Ctx&);  // writes the initial structure again
//   static constexpr mem::MutationSet kMutants;  // tx's negative controls (bep_bench_params.hpp)
template <class Ctx, class Ops>
constexpr auto undo_log_schemes() {
  constexpr auto logs = [](const Ctx& c) { return c.pool.template array<TxLog>(kTxLogArray); };
  return std::tuple{
      scheme::Scheme{
          .name = "tx",
          .family = scheme::Family::kTx,
          .arrays =
              [](const pool::RunParams& p) {
                return std::vector<pool::ArraySpec>{{kTxLogArray, p.threads * sizeof(TxLog)}};
              },
          .run =
              [logs](mem::Backend auto& be, const Ctx& c, std::size_t) {
                with_epochs(be, configured_barrier(be),
                            [&](auto& et) { Ops::run_tx(et, c, logs(c)); });
              },
          .recover = [logs](mem::Backend auto& be, const Ctx& c,
                            scheme::RunReport& r) -> std::size_t {
            r.recovery_action = "undo-log rollback, per-thread resume";
            with_epochs(be, configured_barrier(be), [&](auto& et) {
              r.recovery.regions_recomputed = Ops::recover_tx(et, c, logs(c));
            });
            return 0;  // each thread resumes at its own count (bep/progress.hpp)
          },
          .mutants = Ops::kMutants},
      scheme::Scheme{
          .name = scheme::kBaseScheme,
          .family = scheme::Family::kBase,
          .run = [](mem::Backend auto& be, const Ctx& c, std::size_t) { Ops::run_base(be, c); },
          .recover = [](mem::Backend auto& be, const Ctx& c, scheme::RunReport& r) -> std::size_t {
            r.recovery_action = "restart";  // no log: back to the initial structure
            Ops::restart(be, c);
            return 0;
          }}};
}

}  // namespace pmlab::bep
