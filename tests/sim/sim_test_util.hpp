// Builder for tiny, fully specified simulator configurations used by the Sim* tests.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "pmlab/sim/params.hpp"

namespace pmlab::sim::testing {

inline constexpr std::uint64_t kLine = kCacheLineBytes;

// Defaults: 1 core, L1 2 cyc, LLC 10 cyc, NVM 100/200 cycles at 1 GHz, flush issue 1, fence 1.
class ParamsBuilder {
 public:
  ParamsBuilder() {
    p_.freq_ghz = 1.0;
    p_.l1 = {"L1", 4 * 2 * kLine, 2, Cycles{2}, Replacement::kLru};
    p_.llc = {"L2", 64 * 8 * kLine, 8, Cycles{10}, Replacement::kLru};
    p_.nvm.read_ns = 100;
    p_.nvm.write_ns = 200;
    p_.flush_issue_latency = Cycles{1};
    p_.fence_latency = Cycles{1};
  }
  ParamsBuilder& cores(int n) {
    p_.cores = n;
    p_.threads = n;
    return *this;
  }
  ParamsBuilder& l1(std::uint64_t sets, std::uint32_t ways, Replacement r = Replacement::kLru) {
    p_.l1 = {"L1", sets * ways * kLine, ways, Cycles{2}, r};
    return *this;
  }
  ParamsBuilder& l2(std::uint64_t sets, std::uint32_t ways) {
    p_.l2 = LevelParams{"L2", sets * ways * kLine, ways, Cycles{5}, Replacement::kLru};
    p_.llc.name = "L3";
    return *this;
  }
  ParamsBuilder& llc(std::uint64_t sets, std::uint32_t ways, Replacement r = Replacement::kLru) {
    p_.llc = {p_.l2 ? "L3" : "L2", sets * ways * kLine, ways, Cycles{10}, r};
    return *this;
  }
  ParamsBuilder& write_queue(std::uint32_t entries, std::uint32_t units) {
    p_.nvm.write_queue_entries = entries;
    p_.nvm.write_units = units;
    return *this;
  }
  ParamsBuilder& filter(bool on) {
    p_.same_line_filter = on;
    return *this;
  }
  ParamsBuilder& lean_misses(bool on) {
    p_.lean_miss_path = on;
    return *this;
  }
  ParamsBuilder& inline_hits(bool on) {
    p_.inline_l1_hits = on;
    return *this;
  }
  ParamsBuilder& periodic(std::uint64_t cycles) {
    p_.periodic_flush_cycles = Cycles{cycles};
    return *this;
  }
  ParamsBuilder& inclusive(bool on) {
    p_.inclusive_llc = on;
    return *this;
  }
  // The interval core model (CoreModel::kInterval) with these structural limits.
  ParamsBuilder& interval(std::uint32_t width, std::uint32_t rob, std::uint32_t mshrs,
                          std::uint32_t insts_per_access = 1) {
    p_.core = {CoreModel::kInterval, width, rob, mshrs, insts_per_access};
    return *this;
  }
  ParamsBuilder& quantum(std::uint64_t q) {
    p_.interleave_quantum = q;
    return *this;
  }
  ParamsBuilder& seed(std::uint64_t s) {
    p_.seed = s;
    return *this;
  }
  [[nodiscard]] SimParams build() const { return p_; }

 private:
  SimParams p_;
};

// Line-aligned zeroed heap buffer of `lines` cache lines.
struct LineBuffer {
  struct Free {
    void operator()(void* p) const { std::free(p); }
  };
  explicit LineBuffer(std::size_t lines)
      : bytes(lines * kLine),
        mem(static_cast<unsigned char*>(std::aligned_alloc(kLine, lines * kLine))) {
    std::memset(mem.get(), 0, bytes);
  }
  [[nodiscard]] unsigned char* line_ptr(std::size_t i) const { return mem.get() + i * kLine; }
  [[nodiscard]] LineAddr line(std::size_t i) const { return line_of(line_ptr(i)); }
  template <class T>
  [[nodiscard]] T* as() const {
    return reinterpret_cast<T*>(mem.get());
  }
  std::size_t bytes;
  std::unique_ptr<unsigned char, Free> mem;
};

}  // namespace pmlab::sim::testing
