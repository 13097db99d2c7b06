// The sdg BEP micro-benchmark's data structure: an undirected sparse graph whose vertices hold
// adjacency lists of 512 B edge entries (by index), every access through a WordAccess.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "pmlab/bep/node_pool.hpp"

namespace pmlab::bep::sdg {

// A vertex is one 64 B line (adjacency head, degree): a line per vertex, because an undo log
// restores whole lines, and a line shared by vertices under different stripe locks would let
// one thread's recovery roll back another's committed head.
enum VertexWord : std::size_t { kHead = 0, kDegree = 1 };
// An edge entry is 512 B: line 0 the list fields, lines 1..7 a payload written before linking.
enum EntryWord : std::size_t { kKey = 0, kNeighbor = 1, kNext = 2, kSelf = 3 };
inline constexpr std::size_t kPayloadFirst = kLineWords;

// Edge keys [0, size()) name distinct unordered vertex pairs: k is scrambled by a multiplier
// coprime with size() (a bijection, so nearby keys land on unrelated vertices), then read as
// (u, distance d in [1, V/2 - 1]) with v = u + d mod V. Distances below V/2 make {u, v} name
// one key only. Needs V >= 4.
class EdgeSpace {
 public:
  explicit EdgeSpace(std::uint64_t vertices)
      : v_(vertices), size_(vertices * (vertices / 2 - 1)), mul_(0x9E3779B1ull) {
    while (std::gcd(mul_, size_) != 1) mul_ += 2;
  }
  [[nodiscard]] std::uint64_t vertices() const { return v_; }
  [[nodiscard]] std::uint64_t size() const { return size_; }
  [[nodiscard]] std::pair<std::uint64_t, std::uint64_t> ends(std::uint64_t key) const {
    const std::uint64_t s =
        static_cast<std::uint64_t>((static_cast<unsigned __int128>(key) * mul_) % size_);
    const std::uint64_t u = s % v_;
    return {u, (u + 1 + s / v_) % v_};
  }

 private:
  std::uint64_t v_, size_, mul_;
};

// The graph's persistent memory.
struct Graph {
  std::uint64_t* vertices = nullptr;  // kLineWords words per vertex
  std::uint64_t* entries = nullptr;   // kEntryWords words per entry
  std::uint64_t vertex_count = 0;
  std::uint64_t capacity = 0;  // entries

  [[nodiscard]] std::uint64_t* vword(std::uint64_t v, std::size_t w) const {
    return vertices + v * kLineWords + w;
  }
  [[nodiscard]] std::uint64_t* eword(std::uint64_t e, std::size_t w) const {
    return entries + e * kEntryWords + w;
  }
};

// The payload of the entry of edge `key` kept in the list of vertex `self`.
[[nodiscard]] inline std::uint64_t entry_payload(std::uint64_t key, std::uint64_t self,
                                                 std::size_t w) {
  return payload_word(key * 0x100000001ull + self, w);
}

// Writes entry e's payload (lines 1..7) before it is linked: it needs no undo (an unlinked
// entry is free after recovery whatever it holds).
template <WordAccess A>
void write_payload(A& a, const Graph& g, std::uint64_t e, std::uint64_t key, std::uint64_t self) {
  for (std::size_t w = kPayloadFirst; w < kEntryWords; ++w)
    a.store(g.eword(e, w), entry_payload(key, self, w));
}

template <WordAccess A>
class Ops {
 public:
  Ops(A& a, const Graph& g) : a_(a), g_(g) {}

  // The entry of `key` in u's list, or kNil.
  [[nodiscard]] std::uint64_t find(std::uint64_t u, std::uint64_t key) {
    for (std::uint64_t e = a_.load(g_.vword(u, kHead)); e != kNil; e = a_.load(g_.eword(e, kNext)))
      if (a_.load(g_.eword(e, kKey)) == key) return e;
    return kNil;
  }

  // Links fresh entries eu (into u's list) and ev (into v's) for edge `key` = {u, v}, absent.
  void insert(std::uint64_t key, std::uint64_t u, std::uint64_t v, std::uint64_t eu,
              std::uint64_t ev) {
    link(u, v, key, eu);
    link(v, u, key, ev);
  }

  // Unlinks edge `key` = {u, v} from both lists; returns its two entries (for the free list).
  std::pair<std::uint64_t, std::uint64_t> erase(std::uint64_t key, std::uint64_t u,
                                                std::uint64_t v) {
    return {unlink(u, key), unlink(v, key)};
  }

 private:
  void link(std::uint64_t self, std::uint64_t other, std::uint64_t key, std::uint64_t e) {
    a_.store(g_.eword(e, kKey), key);
    a_.store(g_.eword(e, kNeighbor), other);
    a_.store(g_.eword(e, kNext), a_.load(g_.vword(self, kHead)));
    a_.store(g_.eword(e, kSelf), self);
    a_.store(g_.vword(self, kHead), e);
    a_.store(g_.vword(self, kDegree), a_.load(g_.vword(self, kDegree)) + 1);
  }
  std::uint64_t unlink(std::uint64_t self, std::uint64_t key) {
    std::uint64_t* prev = g_.vword(self, kHead);
    for (std::uint64_t e = a_.load(prev); e != kNil; e = a_.load(prev)) {
      if (a_.load(g_.eword(e, kKey)) == key) {
        a_.store(prev, a_.load(g_.eword(e, kNext)));
        a_.store(g_.vword(self, kDegree), a_.load(g_.vword(self, kDegree)) - 1);
        return e;
      }
      prev = g_.eword(e, kNext);
    }
    return kNil;  // callers erase only edges they found
  }

  A& a_;
  const Graph& g_;
};

// Marks every entry on some adjacency list (bounded walk). Empty string when clean.
template <WordAccess A>
[[nodiscard]] std::string mark_reachable(A& a, const Graph& g, std::span<std::uint8_t> mark) {
  for (std::uint64_t u = 0; u < g.vertex_count; ++u)
    for (std::uint64_t e = a.load(g.vword(u, kHead)); e != kNil; e = a.load(g.eword(e, kNext))) {
      if (e >= g.capacity) return fmt::format("vertex {}: entry index {} out of range", u, e);
      if (mark[e] != 0) return fmt::format("entry {} on two lists or a cycle (vertex {})", e, u);
      mark[e] = 1;
    }
  return {};
}

// Every invariant: indices in range, each entry on one list once, entry fields consistent with
// its list and its key, no self loop, no duplicate edge in a list, degree = list length, zero
// spare words, payloads intact, and symmetry: every edge in u's list appears in v's list and
// nowhere else. Returns the first violation ("" if none); `keys` gets the sorted edge keys.
template <WordAccess A>
[[nodiscard]] std::string check(A& a, const Graph& g, const EdgeSpace& space,
                                std::vector<std::uint64_t>& keys) {
  keys.clear();
  std::vector<std::uint8_t> seen(g.capacity, 0);
  struct Half {
    std::uint64_t key, self, other;
  };
  std::vector<Half> halves;
  std::vector<std::uint64_t> own;
  for (std::uint64_t u = 0; u < g.vertex_count; ++u) {
    own.clear();
    std::uint64_t len = 0;
    for (std::uint64_t e = a.load(g.vword(u, kHead)); e != kNil; e = a.load(g.eword(e, kNext))) {
      if (e >= g.capacity) return fmt::format("vertex {}: entry index {} out of range", u, e);
      if (seen[e] != 0) return fmt::format("entry {} on two lists or a cycle (vertex {})", e, u);
      seen[e] = 1;
      ++len;
      const std::uint64_t key = a.load(g.eword(e, kKey));
      const std::uint64_t nb = a.load(g.eword(e, kNeighbor));
      if (a.load(g.eword(e, kSelf)) != u)
        return fmt::format("entry {} in vertex {}'s list names vertex {}", e, u,
                           a.load(g.eword(e, kSelf)));
      if (key >= space.size()) return fmt::format("entry {}: key {} out of range", e, key);
      const auto [x, y] = space.ends(key);
      if (!((x == u && y == nb) || (y == u && x == nb)))
        return fmt::format("entry {}: key {} is edge {{{}, {}}}, not {{{}, {}}}", e, key, x, y, u,
                           nb);
      for (std::size_t w = kSelf + 1; w < kPayloadFirst; ++w)
        if (a.load(g.eword(e, w)) != 0) return fmt::format("entry {}: spare word {} set", e, w);
      for (std::size_t w = kPayloadFirst; w < kEntryWords; ++w)
        if (a.load(g.eword(e, w)) != entry_payload(key, u, w))
          return fmt::format("entry {} (edge {}, vertex {}): payload word {} torn", e, key, u, w);
      own.push_back(key);
      halves.push_back({key, u, nb});
    }
    if (a.load(g.vword(u, kDegree)) != len)
      return fmt::format("vertex {}: degree {} but {} entries", u, a.load(g.vword(u, kDegree)),
                         len);
    for (std::size_t w = kDegree + 1; w < kLineWords; ++w)
      if (a.load(g.vword(u, w)) != 0) return fmt::format("vertex {}: spare word {} set", u, w);
    std::sort(own.begin(), own.end());
    if (std::adjacent_find(own.begin(), own.end()) != own.end())
      return fmt::format("vertex {}: an edge listed twice", u);
  }
  // Symmetry: sorted by key, every key has exactly two halves, seen from opposite ends.
  std::sort(halves.begin(), halves.end(),
            [](const Half& l, const Half& r) { return l.key < r.key; });
  for (std::size_t i = 0; i < halves.size();) {
    const Half& h = halves[i];
    if (i + 1 >= halves.size() || halves[i + 1].key != h.key)
      return fmt::format("edge {} = {{{}, {}}} is in {}'s list only (asymmetric)", h.key, h.self,
                         h.other, h.self);
    const Half& m = halves[i + 1];
    if (m.self != h.other || m.other != h.self ||
        (i + 2 < halves.size() && halves[i + 2].key == h.key))
      return fmt::format("edge {}: halves do not mirror each other", h.key);
    keys.push_back(h.key);
    i += 2;
  }
  return {};
}

}  // namespace pmlab::bep::sdg
