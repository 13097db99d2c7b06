// Machine description files (JSON): writing every SimParams field, reading one back strictly.
#include "pmlab/sim/machine_file.hpp"

#include <fstream>
#include <limits>
#include <set>
#include <sstream>
#include <type_traits>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "pmlab/core/error.hpp"

namespace pmlab::sim {
namespace {

using nlohmann::json;

json level_file(const LevelParams& l) {
  return {{"name", l.name},
          {"size_bytes", l.size_bytes},
          {"ways", l.ways},
          {"hit_latency", l.hit_latency.value()},
          {"replacement", std::string(to_string(l.replacement))}};
}

// One JSON object being read: every key must be taken by a field, so a typo is an error rather
// than a silently ignored setting.
class Reader {
 public:
  Reader(const json& obj, std::string prefix, const std::string& source)
      : obj_(obj), prefix_(std::move(prefix)), source_(source) {
    if (!obj_.is_object()) fail(prefix_.empty() ? "the document" : prefix_, "must be an object");
  }

  [[noreturn]] void fail(const std::string& key, const std::string& what) const {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("machine file {}: '{}' {}", source_, key, what));
  }
  [[nodiscard]] std::string path(const std::string& key) const {
    return prefix_.empty() ? key : prefix_ + "." + key;
  }
  [[nodiscard]] const json* find(const std::string& key) {
    taken_.insert(key);
    auto it = obj_.find(key);
    return it == obj_.end() ? nullptr : &*it;
  }

  template <class T>
  void get(const std::string& key, T& out) {
    const json* v = find(key);
    if (v == nullptr) return;
    const std::string k = path(key);
    if constexpr (std::is_same_v<T, bool>) {
      if (!v->is_boolean()) fail(k, "must be true or false");
      out = v->get<bool>();
    } else if constexpr (std::is_same_v<T, std::string>) {
      if (!v->is_string()) fail(k, "must be a string");
      out = v->get<std::string>();
    } else if constexpr (std::is_floating_point_v<T>) {
      if (!v->is_number()) fail(k, "must be a number");
      out = v->get<double>();
    } else if constexpr (std::is_same_v<T, Cycles>) {
      std::uint64_t c = 0;
      get(key, c);
      out = Cycles{c};
    } else {
      static_assert(std::is_integral_v<T>);
      if (!v->is_number_integer()) fail(k, fmt::format("must be an integer, got {}", v->dump()));
      // A literal may be stored signed even when it is not negative.
      if (v->is_number_unsigned() || v->get<std::int64_t>() >= 0) {
        const auto u = v->get<std::uint64_t>();
        if (u > static_cast<std::uint64_t>(std::numeric_limits<T>::max()))
          fail(k, fmt::format("is {}, above the largest accepted value {}", u,
                              std::numeric_limits<T>::max()));
        out = static_cast<T>(u);
      } else {
        const auto s = v->get<std::int64_t>();
        if (std::is_unsigned_v<T> || s < static_cast<std::int64_t>(std::numeric_limits<T>::min()))
          fail(k, fmt::format("is {}, below the smallest accepted value {}", s,
                              std::numeric_limits<T>::min()));
        out = static_cast<T>(s);
      }
    }
  }

  // A string turned into an enum by `parse` (which throws pmlab::Error listing the names).
  template <class E, class Parse>
  void get_enum(const std::string& key, E& out, Parse parse) {
    std::string s;
    if (find(key) == nullptr) return;
    get(key, s);
    try {
      out = parse(s);
    } catch (const Error& e) {
      fail(path(key), fmt::format("is '{}': {}", s, e.what()));
    }
  }

  // Every key not taken by a field: the first, named, is an error.
  void finish() const {
    for (const auto& [key, v] : obj_.items())
      if (!taken_.contains(key)) fail(path(key), "is not a known key here (see docs/cli.md)");
  }

 private:
  const json& obj_;
  std::string prefix_;
  const std::string& source_;
  std::set<std::string> taken_;
};

void read_level(const json& j, const std::string& key, const std::string& source, LevelParams& l) {
  Reader r(j, key, source);
  r.get("name", l.name);
  r.get("size_bytes", l.size_bytes);
  r.get("ways", l.ways);
  r.get("hit_latency", l.hit_latency);
  r.get_enum("replacement", l.replacement, replacement_from_string);
  r.finish();
}

}  // namespace

json to_machine_file(const SimParams& p) {
  const RowBufferParams& rb = p.nvm.row_buffer;
  const PreflushParams& pf = p.preflush;
  const PersistencyParams& ps = p.persistency;
  return {{"pmlab_machine", kMachineFileVersion},
          {"name", p.name},
          {"cores", p.cores},
          {"threads", p.threads},
          {"freq_ghz", p.freq_ghz},
          {"l1", level_file(p.l1)},
          {"l2", p.l2 ? level_file(*p.l2) : json(nullptr)},
          {"llc", level_file(p.llc)},
          {"inclusive_llc", p.inclusive_llc},
          {"same_line_filter", p.same_line_filter},
          {"nvm",
           {{"read_ns", p.nvm.read_ns},
            {"write_ns", p.nvm.write_ns},
            {"write_queue_entries", p.nvm.write_queue_entries},
            {"write_units", p.nvm.write_units},
            {"write_queue", std::string(to_string(p.nvm.write_queue))},
            {"row_buffer",
             {{"enabled", rb.enabled},
              {"channels", rb.channels},
              {"ranks", rb.ranks},
              {"banks", rb.banks},
              {"row_bytes", rb.row_bytes},
              {"rq_entries", rb.rq_entries},
              {"wq_entries", rb.wq_entries},
              {"wq_high", rb.wq_high},
              {"wq_low", rb.wq_low},
              {"min_writes_per_drain", rb.min_writes_per_drain},
              {"merge", rb.merge}}}}},
          {"flush_issue_latency", p.flush_issue_latency.value()},
          {"fence_latency", p.fence_latency.value()},
          {"seed", p.seed},
          {"periodic_flush_cycles", p.periodic_flush_cycles.value()},
          {"nt_stores", p.nt_stores},
          {"wc_buffers", p.wc_buffers},
          {"core",
           {{"model", std::string(to_string(p.core.model))},
            {"issue_width", p.core.issue_width},
            {"rob_entries", p.core.rob_entries},
            {"mshrs", p.core.mshrs},
            {"insts_per_access", p.core.insts_per_access},
            {"flush_after_fill", p.core.flush_after_fill}}},
          {"interleave_quantum", p.interleave_quantum},
          {"whole_cache_flush", std::string(to_string(p.whole_cache_flush))},
          {"wbinvd_cycles_per_line", p.wbinvd_cycles_per_line},
          {"flush_mc_hop", p.flush_mc_hop},
          {"preflush",
           {{"enabled", pf.enabled},
            {"signatures", pf.signatures},
            {"flushed_tags", pf.flushed_tags},
            {"sample_every", pf.sample_every},
            {"dir_entries", pf.dir_entries},
            {"own_store_check", pf.own_store_check},
            {"nack", pf.nack},
            {"line_change", pf.line_change},
            {"trace", pf.trace},
            {"l1_marks", pf.l1_marks}}},
          {"persistency",
           {{"barrier", std::string(to_string(ps.barrier))},
            {"max_inflight", ps.max_inflight},
            {"idt_regs", ps.idt_regs},
            {"invalidating_epoch_flush", ps.invalidating_epoch_flush},
            {"epoch_ack", ps.epoch_ack.value()},
            {"pf_instant", ps.pf_instant},
            {"bsp_epoch_stores", ps.bsp_epoch_stores},
            {"bsp_log", ps.bsp_log},
            {"bsp_write_through", ps.bsp_write_through},
            {"check_order", ps.check_order},
            {"timed_locks", ps.timed_locks}}}};
}

SimParams from_machine_file(const json& doc, const std::string& source) {
  SimParams p;
  Reader r(doc, "", source);
  int version = kMachineFileVersion;
  r.get("pmlab_machine", version);
  if (version != kMachineFileVersion)
    r.fail("pmlab_machine",
           fmt::format("is {}: this pmlab reads version {}", version, kMachineFileVersion));
  r.get("name", p.name);
  r.get("cores", p.cores);
  r.get("threads", p.threads);
  r.get("freq_ghz", p.freq_ghz);
  if (const json* l1 = r.find("l1")) read_level(*l1, "l1", source, p.l1);
  if (const json* l2 = r.find("l2"); l2 != nullptr) {
    if (l2->is_null()) {
      p.l2.reset();  // no private L2
    } else {
      p.l2 = LevelParams{"L2", 256 * 1024, 8, Cycles{6}, Replacement::kLru};
      read_level(*l2, "l2", source, *p.l2);
    }
  }
  if (const json* llc = r.find("llc")) read_level(*llc, "llc", source, p.llc);
  r.get("inclusive_llc", p.inclusive_llc);
  r.get("same_line_filter", p.same_line_filter);
  if (const json* nvm = r.find("nvm")) {
    Reader n(*nvm, "nvm", source);
    n.get("read_ns", p.nvm.read_ns);
    n.get("write_ns", p.nvm.write_ns);
    n.get("write_queue_entries", p.nvm.write_queue_entries);
    n.get("write_units", p.nvm.write_units);
    n.get_enum("write_queue", p.nvm.write_queue, write_queue_model_from_string);
    if (const json* rbj = n.find("row_buffer")) {
      RowBufferParams& rb = p.nvm.row_buffer;
      Reader b(*rbj, "nvm.row_buffer", source);
      b.get("enabled", rb.enabled);
      b.get("channels", rb.channels);
      b.get("ranks", rb.ranks);
      b.get("banks", rb.banks);
      b.get("row_bytes", rb.row_bytes);
      b.get("rq_entries", rb.rq_entries);
      b.get("wq_entries", rb.wq_entries);
      b.get("wq_high", rb.wq_high);
      b.get("wq_low", rb.wq_low);
      b.get("min_writes_per_drain", rb.min_writes_per_drain);
      b.get("merge", rb.merge);
      b.finish();
    }
    n.finish();
  }
  r.get("flush_issue_latency", p.flush_issue_latency);
  r.get("fence_latency", p.fence_latency);
  r.get("seed", p.seed);
  r.get("periodic_flush_cycles", p.periodic_flush_cycles);
  r.get("nt_stores", p.nt_stores);
  r.get("wc_buffers", p.wc_buffers);
  if (const json* core = r.find("core")) {
    Reader c(*core, "core", source);
    c.get_enum("model", p.core.model, core_model_from_string);
    c.get("issue_width", p.core.issue_width);
    c.get("rob_entries", p.core.rob_entries);
    c.get("mshrs", p.core.mshrs);
    c.get("insts_per_access", p.core.insts_per_access);
    c.get("flush_after_fill", p.core.flush_after_fill);
    c.finish();
  }
  r.get("interleave_quantum", p.interleave_quantum);
  r.get_enum("whole_cache_flush", p.whole_cache_flush, whole_cache_flush_from_string);
  r.get("wbinvd_cycles_per_line", p.wbinvd_cycles_per_line);
  r.get("flush_mc_hop", p.flush_mc_hop);
  if (const json* pfj = r.find("preflush")) {
    PreflushParams& pf = p.preflush;
    Reader f(*pfj, "preflush", source);
    f.get("enabled", pf.enabled);
    f.get("signatures", pf.signatures);
    f.get("flushed_tags", pf.flushed_tags);
    f.get("sample_every", pf.sample_every);
    f.get("dir_entries", pf.dir_entries);
    f.get("own_store_check", pf.own_store_check);
    f.get("nack", pf.nack);
    f.get("line_change", pf.line_change);
    f.get("trace", pf.trace);
    f.get("l1_marks", pf.l1_marks);
    f.finish();
  }
  if (const json* psj = r.find("persistency")) {
    PersistencyParams& ps = p.persistency;
    Reader s(*psj, "persistency", source);
    s.get_enum("barrier", ps.barrier, barrier_from_string);
    s.get("max_inflight", ps.max_inflight);
    s.get("idt_regs", ps.idt_regs);
    s.get("invalidating_epoch_flush", ps.invalidating_epoch_flush);
    s.get("epoch_ack", ps.epoch_ack);
    s.get("pf_instant", ps.pf_instant);
    s.get("bsp_epoch_stores", ps.bsp_epoch_stores);
    s.get("bsp_log", ps.bsp_log);
    s.get("bsp_write_through", ps.bsp_write_through);
    s.get("check_order", ps.check_order);
    s.get("timed_locks", ps.timed_locks);
    s.finish();
  }
  r.finish();
  try {
    p.validate();
  } catch (const Error& e) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("machine file {}: impossible machine: {}", source, e.what()));
  }
  return p;
}

SimParams load_machine_file(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in)
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("machine file {}: cannot be read (no such file?)", path.string()));
  std::stringstream text;
  text << in.rdbuf();
  json doc;
  try {
    doc = json::parse(text.str());
  } catch (const json::parse_error& e) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("machine file {}: not valid JSON: {}", path.string(), e.what()));
  }
  return from_machine_file(doc, path.string());
}

}  // namespace pmlab::sim
