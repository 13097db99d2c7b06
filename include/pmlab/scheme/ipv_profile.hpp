// Seed 002 §4.1's profile-guided rule finding, pmlab's counterpart of the paper's LLVM trace
// tool: a backend that runs a kernel's original in-place loop through its first outer iteration
// and classifies each target object as basic, post-update or non-uniform (the paper's Table 2).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "pmlab/mem/backend.hpp"

namespace pmlab::scheme {

// The paper's rules (§4.1, Table 2). kNotUpdated: the first iteration never writes the object.
enum class IpvRule {
  kBasic,       // every element written once per iteration, each read only before its write
  kPostUpdate,  // ... and some element read again after its write (Fig. 9's version switch)
  kNonUniform,  // some element left unwritten, or written by other loops than the rest (Fig. 10)
  kNotUpdated,
};

[[nodiscard]] constexpr std::string_view to_string(IpvRule r) {
  switch (r) {
    case IpvRule::kBasic:
      return "basic";
    case IpvRule::kPostUpdate:
      return "post-update";
    case IpvRule::kNonUniform:
      return "non-uniform";
    case IpvRule::kNotUpdated:
      return "not updated";
  }
  return "?";
}

// A target object: elements [begin, end) (doubles) of the profiled array, and the rule the
// kernel's in-place versioning assumes for it, when it has an ipv row: uniform (basic or
// post-update: the working version needs no copy) or not (the non-temporal-copy fallback).
struct IpvObject {
  enum class Declared { kNone, kUniform, kNonUniform };
  std::string name;
  std::size_t begin = 0, end = 0;
  Declared declared = Declared::kNone;
};

struct IpvObjectProfile {
  std::string name;
  IpvRule rule = IpvRule::kNotUpdated;
  std::size_t elements = 0;
  std::size_t written = 0;           // elements stored at least once in the first iteration
  std::size_t read_after_write = 0;  // elements loaded after their own first store
  std::size_t writing_loops = 0;     // distinct loops that stored into the object
  IpvObject::Declared declared = IpvObject::Declared::kNone;

  // False when the kernel's ipv rows assume a rule the first iteration contradicts: a uniform
  // declaration of a non-uniform object would leave stale elements in the working version. (A
  // non-uniform declaration of a uniform object is only slower: its copy is redundant.)
  [[nodiscard]] bool matches_declaration() const {
    switch (declared) {
      case IpvObject::Declared::kNone:
        return true;
      case IpvObject::Declared::kUniform:
        return rule == IpvRule::kBasic || rule == IpvRule::kPostUpdate;
      case IpvObject::Declared::kNonUniform:
        return rule == IpvRule::kNonUniform;
    }
    return false;
  }
};

// Thrown by outer_step_done to end the profiled run after its first outer iteration.
struct IpvProfileDone {};

// A plain backend (loads and stores go to memory, parallel loops run serially, no flushes) that
// watches one array of doubles. Each parallel_for call is one loop, and so is each serial
// stretch between two of them (the paper traces "one trace per loop or per stretch between
// loops"). Only the first outer iteration is recorded: its end (mem::outer_step_done) throws
// IpvProfileDone, which the caller catches. Accesses that are not whole aligned doubles of the
// array are not watched (the kernels' targets are arrays of doubles).
class IpvProfileBackend {
 public:
  IpvProfileBackend(const double* target, std::size_t elements, int threads)
      : target_(target),
        elements_(elements),
        threads_(threads < 1 ? 1 : threads),
        loops_(elements),
        reread_(elements, false) {}

  template <class T>
  [[nodiscard]] T load(const T* p) {
    if (const std::size_t e = index_of(p, sizeof(T)); e < elements_ && !loops_[e].empty())
      reread_[e] = true;
    T v;
    std::memcpy(&v, p, sizeof(T));
    return v;
  }
  template <class T>
  void store(T* p, T v) {
    if (const std::size_t e = index_of(p, sizeof(T)); e < elements_)
      if (loops_[e].empty() || loops_[e].back() != loop_) loops_[e].push_back(loop_);
    std::memcpy(p, &v, sizeof(T));
  }
  void flush(const void*) const {}
  void fence() const {}
  void persist(const void*, std::size_t) const {}
  void region_begin(mem::RegionId) const {}
  void region_end(mem::RegionId) const {}
  template <class Fn>
  void parallel_for(std::size_t begin, std::size_t end, Fn&& fn) {
    ++loop_;  // the serial stretch before this loop ends
    for (std::size_t i = begin; i < end; ++i) fn(i);
    ++loop_;
  }
  [[nodiscard]] int threads() const { return threads_; }
  [[noreturn]] void outer_step_done() { throw IpvProfileDone{}; }

  // The rule of each object, from what the first iteration did.
  [[nodiscard]] std::vector<IpvObjectProfile> classify(
      const std::vector<IpvObject>& objects) const {
    std::vector<IpvObjectProfile> out;
    for (const IpvObject& o : objects) {
      IpvObjectProfile r{.name = o.name, .elements = o.end - o.begin, .declared = o.declared};
      bool same_loops = true;
      std::vector<std::uint64_t> all_loops;
      const std::vector<std::uint64_t>* first_written = nullptr;
      for (std::size_t e = o.begin; e < o.end && e < elements_; ++e) {
        if (loops_[e].empty()) continue;
        ++r.written;
        if (reread_[e]) ++r.read_after_write;
        if (first_written == nullptr)
          first_written = &loops_[e];
        else if (loops_[e] != *first_written)
          same_loops = false;
        for (const std::uint64_t l : loops_[e])
          if (std::find(all_loops.begin(), all_loops.end(), l) == all_loops.end())
            all_loops.push_back(l);
      }
      r.writing_loops = all_loops.size();
      if (r.written == 0)
        r.rule = IpvRule::kNotUpdated;
      else if (r.written < r.elements || !same_loops)
        r.rule = IpvRule::kNonUniform;
      else if (r.read_after_write > 0)
        r.rule = IpvRule::kPostUpdate;
      else
        r.rule = IpvRule::kBasic;
      out.push_back(std::move(r));
    }
    return out;
  }

 private:
  // The element a whole, aligned double at p is, or elements_ when p is not one of the array's.
  [[nodiscard]] std::size_t index_of(const void* p, std::size_t size) const {
    const auto a = reinterpret_cast<std::uintptr_t>(p),
               t = reinterpret_cast<std::uintptr_t>(target_);
    if (size != sizeof(double) || a < t || (a - t) % sizeof(double) != 0) return elements_;
    const std::size_t e = (a - t) / sizeof(double);
    return e < elements_ ? e : elements_;
  }

  const double* target_;
  std::size_t elements_;
  int threads_;
  std::uint64_t loop_ = 0;
  std::vector<std::vector<std::uint64_t>> loops_;  // per element: the loops that stored it
  std::vector<bool> reread_;                       // per element: loaded after its first store
};

static_assert(mem::Backend<IpvProfileBackend>);

}  // namespace pmlab::scheme
