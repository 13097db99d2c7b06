// The sdg BEP micro-benchmark's data structure: an undirected sparse graph whose vertices hold
// adjacency lists of 512 B edge entries (by index), every access through a WordAccess.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <numeric>
#include <span>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "pmlab/bep/epoch_tracked.hpp"
#include "pmlab/bep/node_pool.hpp"
#include "pmlab/bep/progress.hpp"
#include "pmlab/bep/replay_check.hpp"
#include "pmlab/bep/tx.hpp"
#include "pmlab/core/error.hpp"

namespace pmlab::bep::sdg {

// A vertex is one 64 B line (adjacency head, degree): a line per vertex, because an undo log
// restores whole lines, and a line shared by vertices under different stripe locks would let
// one thread's recovery roll back another's committed head.
enum VertexWord : std::size_t { kHead = 0, kDegree = 1 };
// An edge entry is 512 B: line 0 the list fields, lines 1..7 a payload written before linking.
enum EntryWord : std::size_t { kKey = 0, kNeighbor = 1, kNext = 2, kSelf = 3 };
inline constexpr std::size_t kPayloadFirst = kLineWords;

// Largest graph: its pair count stays below 2^31 (EdgeSpace's arithmetic), beyond the spec's
// full size of 2^14 vertices.
inline constexpr std::uint64_t kMaxVertices = std::uint64_t{1} << 16;

// Edge keys [0, size()) name the V(V-1)/2 unordered vertex pairs, one each: k is scrambled by
// a multiplier coprime with size() (a bijection, so nearby keys land on unrelated vertices),
// then read as (u, distance d) with v = u + d mod V: d in [1, (V-1)/2] for the first
// V·floor((V-1)/2) values (a distance below V/2 names the pair once), and for even V the last
// V/2 values are the diametric pairs {u, u + V/2}, u < V/2.
class EdgeSpace {
 public:
  explicit EdgeSpace(std::uint64_t vertices)
      : v_(vertices), size_(vertices * (vertices - (vertices > 0 ? 1 : 0)) / 2) {
    // Reduced below size() (< 2^31 for n <= kMaxVertices), so key * mul_ fits 64 bits.
    mul_ = size_ > 1 ? 0x9E3779B1ull % size_ : 1;
    while (mul_ == 0 || std::gcd(mul_, size_) != 1) ++mul_;
  }
  [[nodiscard]] std::uint64_t vertices() const { return v_; }
  [[nodiscard]] std::uint64_t size() const { return size_; }
  [[nodiscard]] std::pair<std::uint64_t, std::uint64_t> ends(std::uint64_t key) const {
    const std::uint64_t s = key * mul_ % size_;
    const std::uint64_t short_pairs = v_ * ((v_ - 1) / 2);
    if (s < short_pairs) {
      const std::uint64_t u = s % v_;
      return {u, (u + 1 + s / v_) % v_};
    }
    const std::uint64_t u = s - short_pairs;
    return {u, u + v_ / 2};
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

// --- The benchmark (spec §3.6): shape, initial fill, the two schemes, recovery, verification ---
//
// pmlab's choices (the seed gives only the 512 B entry and the op kinds): `n` vertices and
// E = min(2n, n(n-1)/2) edge keys (average degree up to 4), split into T per-thread ranges of
// R = floor(E / T) keys (thread t owns keys t·R .. t·R + R - 1; with R = 0 its ops only count)
// and T arenas of 2R entries. The graph starts with every even key of every range. An edge op
// holds the stripe locks of both end vertices.
struct Shape {
  std::uint64_t n = 0;  // vertices
  std::uint64_t threads = 1;
  std::uint64_t ops = 0;  // per thread
  std::uint64_t seed = 0;
  [[nodiscard]] std::uint64_t keys() const {
    return std::min(2 * n, n * (n - (n > 0 ? 1 : 0)) / 2);
  }
  [[nodiscard]] std::uint64_t range() const { return keys() / threads; }
  [[nodiscard]] std::uint64_t capacity() const { return 2 * range() * threads; }
  // Words of the heap array: the vertex lines, then the entries.
  [[nodiscard]] std::uint64_t heap_words() const {
    return n * kLineWords + capacity() * kEntryWords;
  }
};

[[nodiscard]] inline Graph graph_of(std::uint64_t* heap, const Shape& s) {
  return {heap, heap + s.n * kLineWords, s.n, s.capacity()};
}

// The initial graph: edge t·R + k (k even) in entries 2·key (at u) and 2·key + 1 (at v).
template <WordAccess A>
void build_initial(A& a, const Graph& g, const EdgeSpace& space, const Shape& s) {
  for (std::uint64_t v = 0; v < s.n; ++v) {
    a.store(g.vword(v, kHead), kNil);
    a.store(g.vword(v, kDegree), std::uint64_t{0});
  }
  Ops<A> ops(a, g);
  for (std::uint64_t key = 0; key < s.range() * s.threads; ++key)
    if (key % s.range() % 2 == 0) {
      const auto [u, v] = space.ends(key);
      write_payload(a, g, 2 * key, key, u);
      write_payload(a, g, 2 * key + 1, key, v);
      ops.insert(key, u, v, 2 * key, 2 * key + 1);
    }
}

inline void init(std::uint64_t* heap, const Shape& s) {
  std::memset(heap, 0, s.heap_words() * sizeof(std::uint64_t));
  Direct d;
  build_initial(d, graph_of(heap, s), EdgeSpace(s.n), s);
}

// Volatile allocator state at the start of a run: the graph is checked first (a list cycle
// would make an op loop forever), then the free entries are the unlinked ones. Reads memory
// directly: the runtime's own set-up, not simulated.
[[nodiscard]] inline Arenas arenas_of(const Graph& g, const EdgeSpace& space, const Shape& s) {
  Direct d;
  std::vector<std::uint64_t> keys;
  if (const std::string e = check(d, g, space, keys); !e.empty())
    throw Error(ErrorCode::kPoolCorrupt, fmt::format("sdg: the graph is corrupt: {}", e));
  std::vector<std::uint8_t> mark(g.capacity, 0);
  (void)mark_reachable(d, g, mark);  // clean: check walked the same lists
  Arenas arenas(g.capacity, static_cast<int>(s.threads));
  arenas.rebuild(mark);
  return arenas;
}

// Op j of thread th: its kind, edge key and end vertices (none when the thread has no keys).
struct Planned {
  Op op;
  std::uint64_t key = 0, u = 0, v = 0;
  bool any = false;
};
[[nodiscard]] inline Planned plan(const Shape& s, const EdgeSpace& space, std::uint64_t th,
                                  std::uint64_t j) {
  if (s.range() == 0) return {};
  Planned p;
  p.op = op_of(s.seed, th, j, s.range());
  p.key = th * s.range() + p.op.key;
  std::tie(p.u, p.v) = space.ends(p.key);
  p.any = true;
  return p;
}

// Runs fn holding the stripe locks of both ends (in stripe order; once if they share one).
template <EpochBackend B, class Fn>
void exclusive_pair(B& b, std::uint64_t u, std::uint64_t v, Fn&& fn) {
  constexpr std::uint64_t kStripes = std::remove_reference_t<B>::kStripes;
  const std::uint64_t lo = std::min(u % kStripes, v % kStripes);
  const std::uint64_t hi = std::max(u % kStripes, v % kStripes);
  if (lo == hi)
    b.exclusive(lo, fn);
  else
    b.exclusive(lo, [&] { b.exclusive(hi, fn); });
}

// The planned op on accessor a; payloads of new entries through `payload` (straight to memory,
// E1 of a transaction: unlinked entries need no undo). Returns the entries an erase unlinked.
template <WordAccess A, WordAccess P>
std::pair<std::uint64_t, std::uint64_t> apply_op(A& a, P& payload, const Graph& g, Arenas& arenas,
                                                 const Planned& p, std::uint64_t th) {
  Ops<A> ops(a, g);
  const bool present = ops.find(p.u, p.key) != kNil;
  if (p.op.kind == OpKind::kInsert && !present) {
    const std::uint64_t eu = arenas.alloc(static_cast<int>(th));
    const std::uint64_t ev = arenas.alloc(static_cast<int>(th));
    write_payload(payload, g, eu, p.key, p.u);
    write_payload(payload, g, ev, p.key, p.v);
    ops.insert(p.key, p.u, p.v, eu, ev);
  } else if (p.op.kind == OpKind::kErase && present) {
    return ops.erase(p.key, p.u, p.v);
  }
  return {kNil, kNil};
}

// Epoch persistency: every op (a search too: its E4 counts it) one undo-log transaction over
// the lines it relinks: both vertex lines and the predecessor entry (or new entry) of each list.
template <EpochBackend B>
void run_tx(B& b, std::uint64_t* heap, TxLog* logs, const Shape& s) {
  const Graph g = graph_of(heap, s);
  const EdgeSpace space(s.n);
  Arenas arenas = arenas_of(g, space, s);
  order_sections_after_commits(b, logs);
  const auto tx_op = [&](std::size_t th, const Planned& p) {
    Deferred<B> d(b);
    const auto freed = p.any ? apply_op(d, b, g, arenas, p, th)
                             : std::pair<std::uint64_t, std::uint64_t>{kNil, kNil};
    Tx<B> tx(b, logs[th], reinterpret_cast<std::byte*>(heap));
    std::array<const std::uint64_t*, kTxMaxLines> lines{};
    const std::size_t m = d.lines(lines);
    for (std::size_t i = 0; i < m; ++i) tx.add(lines[i], kLineWords * sizeof(std::uint64_t));
    tx.begin();
    d.apply(b);
    tx.commit();
    // Reusable only now that the unlink is durable.
    if (freed.first != kNil) arenas.free(static_cast<int>(th), freed.first);
    if (freed.second != kNil) arenas.free(static_cast<int>(th), freed.second);
  };
  run_thread_ops(
      b, s.threads, s.ops, [&](std::size_t th) { return tx_done(b, logs[th]); },
      [&](std::size_t th, std::size_t j) {
        const Planned p = plan(s, space, th, j);
        if (p.any)
          exclusive_pair(b, p.u, p.v, [&] { tx_op(th, p); });
        else
          tx_op(th, p);
      });
}

template <EpochBackend B>
std::uint64_t recover_tx(B& b, std::uint64_t* heap, TxLog* logs, const Shape& s) {
  std::uint64_t undone = 0;
  for (std::size_t th = 0; th < s.threads; ++th)
    undone += tx_recover(b, logs[th], reinterpret_cast<std::byte*>(heap)) ? 1 : 0;
  return undone;
}

// No persistency (the throughput baseline): the same ops in place, under the same locks.
template <EpochBackend B>
void run_base(B& b, std::uint64_t* heap, const Shape& s) {
  const Graph g = graph_of(heap, s);
  const EdgeSpace space(s.n);
  Arenas arenas = arenas_of(g, space, s);
  b.parallel_for(0, s.threads * s.ops, [&](std::size_t i) {
    const std::size_t th = i / s.ops, j = i % s.ops;
    const Planned p = plan(s, space, th, j);
    if (!p.any) return;
    exclusive_pair(b, p.u, p.v, [&] {
      const auto freed = apply_op(b, b, g, arenas, p, th);
      if (freed.first != kNil) arenas.free(static_cast<int>(th), freed.first);
      if (freed.second != kNil) arenas.free(static_cast<int>(th), freed.second);
    });
  });
}

using Check = SetCheck;

// The graph's invariants, then its edge set against the replay of `done` ops of every thread.
[[nodiscard]] inline Check check_all(std::uint64_t* heap, const Shape& s, std::uint64_t done) {
  Check c;
  std::vector<std::uint64_t> want;
  for (std::uint64_t th = 0; th < s.threads; ++th) {
    const auto k = replay(s.seed, th, s.range(), done);
    want.insert(want.end(), k.begin(), k.end());
  }
  c.keys = want.size();
  Direct d;
  std::vector<std::uint64_t> got;
  if (std::string e = check(d, graph_of(heap, s), EdgeSpace(s.n), got); !e.empty()) {
    c.bad = 1;
    c.first = std::move(e);
    return c;
  }
  compare_with_replay(c, want, got, "edge");
  return c;
}

}  // namespace pmlab::bep::sdg
