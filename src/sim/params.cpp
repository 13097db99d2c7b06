// Validation of simulator parameters: every impossible value gets a message naming the field.
#include "pmlab/sim/params.hpp"

#include <bit>
#include <cmath>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "pmlab/core/error.hpp"
#include "pmlab/sim/machine_params.hpp"

namespace pmlab::sim {

namespace {
[[noreturn]] void bad(const std::string& msg) {
  throw Error(ErrorCode::kInvalidArgument, msg);
}

std::uint64_t ns_to_cycles(double ns, double ghz) {
  return static_cast<std::uint64_t>(std::llround(ns * ghz));
}
}  // namespace

std::string_view to_string(Replacement r) {
  switch (r) {
    case Replacement::kLru:
      return "lru";
    case Replacement::kRandom:
      return "random";
    case Replacement::kSrrip:
      return "srrip";
  }
  return "?";
}

Replacement replacement_from_string(std::string_view s) {
  for (Replacement r : {Replacement::kLru, Replacement::kRandom, Replacement::kSrrip})
    if (s == to_string(r)) return r;
  bad(fmt::format("unknown replacement policy '{}' (expected lru, random or srrip)", s));
}

std::string_view to_string(CoreModel m) {
  return m == CoreModel::kInterval ? "interval" : "memory";
}

CoreModel core_model_from_string(std::string_view s) {
  for (CoreModel m : {CoreModel::kMemory, CoreModel::kInterval})
    if (s == to_string(m)) return m;
  bad(fmt::format("unknown core model '{}' (expected memory or interval)", s));
}

std::string_view to_string(WriteQueueModel m) {
  switch (m) {
    case WriteQueueModel::kShared:
      return "shared";
    case WriteQueueModel::kBanks:
      return "banks";
    case WriteQueueModel::kPerCore:
      break;
  }
  return "per-core";
}

WriteQueueModel write_queue_model_from_string(std::string_view s) {
  for (WriteQueueModel m :
       {WriteQueueModel::kPerCore, WriteQueueModel::kShared, WriteQueueModel::kBanks})
    if (s == to_string(m)) return m;
  bad(fmt::format("unknown write-queue model '{}' (expected per-core, shared or banks)", s));
}

void CoreParams::validate() const {
  if (flush_after_fill && model != CoreModel::kInterval)
    bad("core.flush_after_fill needs the interval core model (--core-model interval)");
  if (store_queue && model != CoreModel::kInterval)
    bad("core.store_queue needs the interval core model (--core-model interval)");
}

std::uint64_t PreflushParams::storage_bytes(std::uint64_t l1_sets, std::uint64_t l1_ways) const {
  // Bits per entry (thesis §5.3.4): LastStore 32 PC bits + VT + PreFlushed + type; a signature
  // 32 PC bits + 2-bit confidence + type; a FlushedTags entry a 42-bit tag + 32-bit signature +
  // valid; a directory PreFlushers entry a 42-bit tag + an 8-core bitmap.
  // The baseline trace design (§5.3.3): 32 trace bits + VT on every line, no sampling.
  const std::uint64_t sampled_lines = (l1_sets + sample_every - 1) / sample_every * l1_ways;
  const std::uint64_t line_bits = trace ? l1_sets * l1_ways * 33 : sampled_lines * 35;
  const std::uint64_t sig_bits = line_change ? 35 + 42 : 35;  // + the previous line's tag
  // l1_marks: a PreFlushed bit + the predicting signature's index on every L1 line, instead of
  // the FlushedTags entries and the directory's PreFlushers entries.
  const std::uint64_t mark_bits =
      l1_marks ? l1_sets * l1_ways * (1 + std::bit_width(std::uint64_t{signatures} - 1))
               : std::uint64_t{flushed_tags} * 75 + std::uint64_t{dir_entries} * 50;
  const std::uint64_t bits = line_bits + std::uint64_t{signatures} * sig_bits + mark_bits;
  return (bits + 7) / 8;
}

void PreflushParams::validate() const {
  if (trace && line_change)
    bad("preflush: the line-change loop extension keys on store PCs, so it needs the optimised "
        "design, not the trace design");
  if (trace && l1_marks)
    bad("preflush: L1 marks name the predicting signature by its index, so they need the "
        "optimised design, not the trace design");
}

std::string_view to_string(PrefetchModel m) {
  return m == PrefetchModel::kStream ? "stream" : "off";
}

PrefetchModel prefetch_model_from_string(std::string_view s) {
  for (PrefetchModel m : {PrefetchModel::kOff, PrefetchModel::kStream})
    if (s == to_string(m)) return m;
  bad(fmt::format("unknown prefetcher '{}' (expected off or stream)", s));
}

void PrefetchParams::validate() const {
  if (!std::has_single_bit(page_bytes) || page_bytes < kCacheLineBytes)
    bad(fmt::format("prefetch.page_bytes must be a power of two of at least {} (got {})",
                    kCacheLineBytes, page_bytes));
}

void LevelParams::validate() const {
  const std::string who = name.empty() ? std::string("cache level") : "cache " + name;
  if (ways == 0) bad(fmt::format("{}: ways must be at least 1", who));
  if (size_bytes == 0) bad(fmt::format("{}: size_bytes must be positive", who));
  const std::uint64_t way_bytes = std::uint64_t{ways} * kCacheLineBytes;
  if (size_bytes % way_bytes != 0)
    bad(fmt::format("{}: size_bytes {} is not a multiple of ways x {}-byte lines ({})", who,
                    size_bytes, kCacheLineBytes, way_bytes));
  if (sets() > (std::uint64_t{1} << 32)) bad(fmt::format("{}: {} sets is too many", who, sets()));
}

void NvmParams::validate() const {
  row_buffer.validate();
  if (write_queue == WriteQueueModel::kBanks && !row_buffer.enabled)
    bad("nvm.write_queue = banks times the row-buffer model's banks: it needs the row-buffer "
        "model on (--row-buffer on)");
}

Cycles SimParams::nvm_read_cycles() const {
  return Cycles(ns_to_cycles(nvm.read_ns, freq_ghz));
}
Cycles SimParams::nvm_write_cycles() const {
  return Cycles(ns_to_cycles(nvm.write_ns, freq_ghz));
}
Cycles SimParams::nvm_timing_cycles(double ns) const {
  return Cycles(ns_to_cycles(ns, freq_ghz));
}

void PersistencyParams::validate() const {
  if (bsp() && !hardware())
    bad("persistency.bsp_epoch_stores / bsp_write_through (BSP bulk mode) need a hardware "
        "persist barrier: lb, lb-idt, lb-pf or lb++");
  if (bsp_log && bsp_epoch_stores == 0)
    bad("persistency.bsp_log needs bsp_epoch_stores > 0 (BSP bulk mode)");
  if (bsp_write_through && bsp_epoch_stores != 0)
    bad("persistency.bsp_write_through and bsp_epoch_stores exclude each other");
}

std::string_view to_string(WholeCacheFlush w) {
  switch (w) {
    case WholeCacheFlush::kAuto:
      return "auto";
    case WholeCacheFlush::kNever:
      return "never";
    case WholeCacheFlush::kAlways:
      return "always";
  }
  return "?";
}

WholeCacheFlush whole_cache_flush_from_string(std::string_view s) {
  for (WholeCacheFlush w :
       {WholeCacheFlush::kAuto, WholeCacheFlush::kNever, WholeCacheFlush::kAlways})
    if (s == to_string(w)) return w;
  throw Error(ErrorCode::kInvalidArgument,
              fmt::format("unknown whole-cache flush '{}' (expected auto, never or always)", s));
}

void SimParams::validate() const {
  // Each parameter's own range is declared with it (machine_params.cpp); what follows are the
  // rules that tie parameters together.
  check_declared_ranges(*this);
  l1.validate();
  if (l2) l2->validate();
  llc.validate();
  nvm.validate();
  core.validate();
  preflush.validate();
  prefetch.validate();
  persistency.validate();
  if (persistency.hardware() && periodic_flush_cycles.value() != 0)
    bad("periodic cache cleaning cannot be combined with a hardware persist barrier (lb*): the "
        "barrier alone decides when a line persists");
  // The epoch engine keeps its tags in the LLC and models neither PreFlush nor WC buffers.
  if (persistency.hardware() && (!inclusive_llc || preflush.enabled || nt_stores))
    bad("a hardware persist barrier (lb*) needs an inclusive LLC and no preflush or nt_stores");
  // The epoch engine's rules see demand accesses only; the prefetcher hides unused lines from
  // the inline L1 path by their tag hashes, which L1s of 8, 16, ... ways keep.
  if (prefetch.on() && persistency.hardware())
    bad("the stream prefetcher (--prefetch stream) is not modelled under a hardware persist "
        "barrier (lb*)");
  if (prefetch.on() && (l1.ways % 8 != 0 || l1.sets() < 2))
    bad(
        fmt::format("the stream prefetcher (--prefetch stream) needs an L1 of at least 2 sets "
                    "whose ways are a multiple of 8 (got {} sets of {} ways)",
                    l1.sets(), l1.ways));
  if (!inclusive_llc && cores != 1)
    bad(
        fmt::format("a non-inclusive {} needs cores = 1 (got {}): with several cores the inclusive "
                    "LLC is the coherence directory",
                    llc.name, cores));
  // Inclusion needs the shared LLC to be able to hold what one core's private caches hold.
  const std::uint64_t private_bytes = l1.size_bytes + (l2 ? l2->size_bytes : 0);
  if (inclusive_llc && llc.size_bytes < private_bytes)
    bad(
        fmt::format("cache {} ({} bytes) is inclusive and must be at least as large as one core's "
                    "private caches ({} bytes)",
                    llc.name, llc.size_bytes, private_bytes));
  if (l2 && l2->size_bytes < l1.size_bytes)
    bad(fmt::format("cache {} ({} bytes) is inclusive of {} and must not be smaller ({} bytes)",
                    l2->name, l2->size_bytes, l1.name, l1.size_bytes));
}

namespace {
nlohmann::json level_json(const LevelParams& l, bool shared) {
  return {{"name", l.name},
          {"shared", shared},
          {"size_bytes", l.size_bytes},
          {"ways", l.ways},
          {"sets", l.sets()},
          {"hit_latency", l.hit_latency.value()},
          {"replacement", std::string(to_string(l.replacement))}};
}
}  // namespace

nlohmann::json to_json(const SimParams& p) {
  nlohmann::json levels = nlohmann::json::array();
  levels.push_back(level_json(p.l1, false));
  if (p.l2) levels.push_back(level_json(*p.l2, false));
  levels.push_back(level_json(p.llc, true));
  nlohmann::json j = {{"name", p.name},
                      {"cores", p.cores},
                      {"threads", p.threads},
                      {"freq_ghz", p.freq_ghz},
                      {"inclusive_llc", p.inclusive_llc},
                      {"levels", levels},
                      {"nvm",
                       {{"read_ns", p.nvm.read_ns},
                        {"write_ns", p.nvm.write_ns},
                        {"read_cycles", p.nvm_read_cycles().value()},
                        {"write_cycles", p.nvm_write_cycles().value()},
                        {"write_queue_entries", p.nvm.write_queue_entries},
                        {"write_units", p.nvm.write_units}}},
                      {"flush_issue_latency", p.flush_issue_latency.value()},
                      {"fence_latency", p.fence_latency.value()},
                      {"periodic_flush_cycles", p.periodic_flush_cycles.value()},
                      {"nt_stores", p.nt_stores},
                      {"wc_buffers", p.wc_buffers},
                      {"core",
                       {{"model", std::string(to_string(p.core.model))},
                        {"issue_width", p.core.issue_width},
                        {"rob_entries", p.core.rob_entries},
                        {"mshrs", p.core.mshrs},
                        {"insts_per_access", p.core.insts_per_access}}},
                      {"interleave_quantum", p.interleave_quantum}};
  if (p.nvm.row_buffer.enabled) j["nvm"]["row_buffer"] = to_json(p.nvm.row_buffer);
  if (p.nvm.write_queue != WriteQueueModel::kPerCore)
    j["nvm"]["write_queue"] = std::string(to_string(p.nvm.write_queue));
  if (p.nvm.write_queue == WriteQueueModel::kBanks) {
    const RowBufferParams& r = p.nvm.row_buffer;
    j["nvm"]["timing_ns"] = {{"t_rcd", r.t_rcd_ns},
                             {"t_cl", r.t_cl_ns},
                             {"t_wr", r.t_wr_ns},
                             {"t_rp", r.t_rp_ns},
                             {"t_burst", r.t_burst_ns}};
  }
  // Only when set, so the JSON of every existing configuration stays as it was.
  if (p.flush_mc_hop != 0) j["flush_mc_hop"] = p.flush_mc_hop;
  if (p.core.flush_after_fill) j["core"]["flush_after_fill"] = true;
  if (p.whole_cache_flush != WholeCacheFlush::kAuto || p.wbinvd_cycles_per_line != 1)
    j["helper"] = {{"whole_cache_flush", std::string(to_string(p.whole_cache_flush))},
                   {"wbinvd_cycles_per_line", p.wbinvd_cycles_per_line}};
  if (p.preflush.enabled)
    j["preflush"] = {{"signatures", p.preflush.signatures},
                     {"flushed_tags", p.preflush.flushed_tags},
                     {"sample_every", p.preflush.sample_every},
                     {"dir_entries", p.preflush.dir_entries},
                     {"own_store_check", p.preflush.own_store_check},
                     {"nack", p.preflush.nack},
                     {"loop", p.preflush.line_change ? "line-change" : "off"},
                     {"design", p.preflush.trace ? "trace" : "optimised"},
                     {"marks", p.preflush.l1_marks ? "l1" : "table"},
                     {"storage_bytes_per_core", p.preflush.storage_bytes(p.l1.sets(), p.l1.ways)}};
  if (p.prefetch.on())  // only when on: the golden JSON stays as it was
    j["prefetch"] = {{"model", std::string(to_string(p.prefetch.model))},
                     {"streams", p.prefetch.streams},
                     {"train_misses", p.prefetch.train_misses},
                     {"startup", p.prefetch.startup},
                     {"unit_filter", p.prefetch.unit_filter},
                     {"nonunit_filter", p.prefetch.nonunit_filter},
                     {"page_bytes", p.prefetch.page_bytes},
                     {"cross_page", p.prefetch.cross_page}};
  if (p.persistency.barrier != Barrier::kSoftware) {
    j["persistency"] = {{"barrier", std::string(to_string(p.persistency.barrier))}};
    if (p.persistency.hardware())
      j["persistency"].update({{"max_inflight", p.persistency.max_inflight},
                               {"idt_regs", p.persistency.idt_regs},
                               {"invalidating_epoch_flush", p.persistency.invalidating_epoch_flush},
                               {"epoch_ack", p.persistency.epoch_ack.value()}});
    if (p.persistency.pf_instant) j["persistency"]["pf_instant"] = true;
    if (p.persistency.bsp_epoch_stores != 0)
      j["persistency"].update({{"bsp_epoch_stores", p.persistency.bsp_epoch_stores},
                               {"bsp_log", p.persistency.bsp_log}});
    if (p.persistency.bsp_write_through) j["persistency"]["bsp_write_through"] = true;
  }
  if (p.dram_cache.enabled)  // only when on: the golden JSON stays as it was
    j["dram_cache"] = {{"size_bytes", p.dram_cache.size_bytes},
                       {"latency_cycles", p.dram_cache.latency_cycles},
                       {"flush_cycles_per_line", p.dram_cache.flush_cycles_per_line}};
  if (p.persistency.check_order) {  // only when on: the golden JSON stays as it was
    j["persistency"]["barrier"] = std::string(to_string(p.persistency.barrier));
    j["persistency"]["check_order"] = true;
  }
  return j;
}

}  // namespace pmlab::sim
