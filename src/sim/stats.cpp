// JSON form of SimStats; the key names are documented in docs/simulator.md.
#include "pmlab/sim/stats.hpp"

#include <nlohmann/json.hpp>

namespace pmlab::sim {

std::string_view to_string(WriteCause c) {
  switch (c) {
    case WriteCause::kEviction:
      return "eviction";
    case WriteCause::kFlush:
      return "flush";
    case WriteCause::kPeriodic:
      return "periodic";
    case WriteCause::kDrain:
      return "drain";
    case WriteCause::kNonTemporal:
      return "non_temporal";
    case WriteCause::kEpochOnline:
      return "epoch_online";
    case WriteCause::kEpochProactive:
      return "epoch_proactive";
  }
  return "?";
}

std::string_view to_string(EpochCause c) {
  switch (c) {
    case EpochCause::kNatural:
      return "natural";
    case EpochCause::kIntra:
      return "intra";
    case EpochCause::kInterRaw:
      return "inter_raw";
    case EpochCause::kInterWaw:
      return "inter_waw";
    case EpochCause::kReplacement:
      return "replacement";
    case EpochCause::kCapacity:
      return "capacity";
    case EpochCause::kProactive:
      return "proactive";
    case EpochCause::kDrain:
      return "drain";
  }
  return "?";
}

std::uint64_t EpochStats::conflicting() const {
  const auto n = [&](EpochCause c) { return flushed_by[static_cast<std::size_t>(c)]; };
  return n(EpochCause::kIntra) + n(EpochCause::kInterRaw) + n(EpochCause::kInterWaw) +
         n(EpochCause::kReplacement);
}
double EpochStats::conflict_pct() const {
  return epochs == 0 ? 0.0
                     : 100.0 * static_cast<double>(conflicting()) / static_cast<double>(epochs);
}
std::uint64_t EpochStats::stall_total() const {
  std::uint64_t t = 0;
  for (std::uint64_t x : stall_cycles) t += x;
  return t;
}

nlohmann::json to_json(const SimStats& s) {
  nlohmann::json j;
  j["cycles"] = s.cycles.value();
  auto& per_core = j["core_cycles"] = nlohmann::json::array();
  for (Cycles c : s.core_cycles) per_core.push_back(c.value());
  j["loads"] = s.loads;
  j["stores"] = s.stores;
  j["accesses"] = s.accesses();
  j["filtered_accesses"] = s.filtered_accesses;
  j["flushes"] = s.flushes;
  j["dirty_flushes"] = s.dirty_flushes;
  j["fences"] = s.fences;
  j["fence_stall_cycles"] = s.fence_stall_cycles;
  j["instructions"] = s.instructions;
  j["rob_stall_cycles"] = s.rob_stall_cycles;
  j["mshr_stall_cycles"] = s.mshr_stall_cycles;
  // Only when there are any, so the JSON of every existing configuration stays as it was.
  if (s.mshr_full_events != 0) j["mshr_full_events"] = s.mshr_full_events;
  if (s.sq_full_events != 0) {
    j["sq_full_events"] = s.sq_full_events;
    j["sq_full_stall_cycles"] = s.sq_full_stall_cycles;
  }
  j["nvm_reads"] = s.nvm.reads;
  j["nvm_writes"] = s.nvm.writes;
  auto& by_cause = j["nvm_writes_by_cause"] = nlohmann::json::object();
  const std::size_t causes = s.epochs ? kWriteCauseCount : kWriteCauseCountOff;
  for (std::size_t i = 0; i < causes; ++i)
    by_cause[std::string(to_string(static_cast<WriteCause>(i)))] = s.nvm.writes_by_cause[i];
  j["write_queue_stall_cycles"] = s.nvm.write_queue_stall_cycles;
  if (s.nvm.row_buffer) j["row_buffer"] = to_json(*s.nvm.row_buffer);
  if (s.nvm.dram_reads + s.nvm.dram_writes > 0) {  // absent unless volatile ranges were used
    j["dram_reads"] = s.nvm.dram_reads;
    j["dram_writes"] = s.nvm.dram_writes;
  }
  auto& levels = j["levels"] = nlohmann::json::object();
  for (const LevelStats& l : s.levels) {
    levels[l.name] = {{"hits", l.hits},
                      {"misses", l.misses},
                      {"miss_rate", l.miss_rate()},
                      {"evictions", l.evictions},
                      {"dirty_evictions", l.dirty_evictions}};
  }
  j["coherence"] = {{"upgrades", s.coherence.upgrades},
                    {"interventions", s.coherence.interventions},
                    {"invalidations", s.coherence.invalidations},
                    {"back_invalidations", s.coherence.back_invalidations}};
  j["volatility"] = {{"episodes", s.volatility.episodes},
                     {"max_cycles", s.volatility.max_cycles},
                     {"mean_cycles", s.volatility.mean_cycles()},
                     {"open_lines", s.volatility.open_lines},
                     {"open_max_cycles", s.volatility.open_max_cycles}};
  if (s.preflush) {
    const PreflushStats& p = *s.preflush;
    const auto ratio = [](std::uint64_t a, std::uint64_t b) {
      return b == 0 ? 0.0 : static_cast<double>(a) / static_cast<double>(b);
    };
    j["preflush"] = {{"issued", p.issued},
                     {"nvm_writes", p.nvm_writes},
                     {"correct", p.correct},
                     {"mispredicted_store", p.mispredicted_store},
                     {"nacked", p.nacked},
                     {"tag_evictions", p.tag_evictions},
                     {"marks_lost", p.marks_lost},
                     {"uncovered_flushes", p.uncovered_flushes},
                     {"signatures_inserted", p.signatures_inserted},
                     {"dir_evictions", p.dir_evictions},
                     {"dir_back_invalidations", p.dir_back_invalidations},
                     {"dir_occupancy_max", p.dir_occupancy_max},
                     {"transparency_violations", p.transparency_violations},
                     {"storage_bytes_per_core", p.storage_bytes_per_core},
                     // coverage: flushes ACKed early; accuracy: PreFlushes that were used.
                     {"coverage", ratio(p.correct, s.flushes)},
                     {"accuracy", ratio(p.correct, p.issued)}};
  }
  if (s.prefetch) {
    const PrefetchStats& p = *s.prefetch;
    j["prefetch"] = {{"issued", p.issued},   {"used", p.used},       {"late", p.late},
                     {"useless", p.useless}, {"dropped", p.dropped}, {"streams", p.streams}};
  }
  if (s.epochs) {
    const EpochStats& e = *s.epochs;
    auto& je = j["epochs"] = {{"barriers", e.barriers},
                              {"epochs", e.epochs},
                              {"splits", e.splits},
                              {"idt_deps", e.idt_deps},
                              {"idt_overflows", e.idt_overflows},
                              {"conflicting", e.conflicting()},
                              {"conflict_pct", e.conflict_pct()},
                              {"stall_cycles", e.stall_total()}};
    if (e.bsp_barriers != 0 || e.write_through != 0)  // BSP only: other outputs unchanged
      je.update({{"bsp_barriers", e.bsp_barriers},
                 {"log_writes", e.log_writes},
                 {"write_through", e.write_through}});
    auto& by = je["flushed_by"] = nlohmann::json::object();
    auto& stall = je["stall_cycles_by_cause"] = nlohmann::json::object();
    for (std::size_t i = 0; i < kEpochCauseCount; ++i) {
      const std::string c(to_string(static_cast<EpochCause>(i)));
      by[c] = e.flushed_by[i];
      stall[c] = e.stall_cycles[i];
    }
  }
  if (s.helper) {
    const HelperStats& h = *s.helper;
    j["helper"] = {{"core", h.core},
                   {"requests", h.requests},
                   {"flush_ops", h.flush_ops},
                   {"copy_requests", h.copy_requests},
                   {"copy_ops", h.copy_ops},
                   {"wbinvd_ops", h.wbinvd_ops},
                   {"wbinvd_requests", h.wbinvd_requests},
                   {"fences", h.fences},
                   {"barriers", h.barriers},
                   {"busy_cycles", h.busy_cycles},
                   {"exposed_cycles", h.exposed_cycles},
                   {"overlap", h.overlap()}};
  }
  if (s.dram_cache) {
    const DramCacheStats& d = *s.dram_cache;
    j["dram_cache"] = {{"objects", d.objects},
                       {"refused_objects", d.refused_objects},
                       {"placed_bytes", d.placed_bytes},
                       {"hits", d.hits},
                       {"absorbed_writes", d.absorbed_writes},
                       {"flushes", d.flushes},
                       {"flushed_lines", d.flushed_lines},
                       {"lost_lines", d.lost_lines},
                       {"dirty_lines", d.dirty_lines}};
  }
  return j;
}

}  // namespace pmlab::sim
