// The sdg benchmark's algorithm and checker over plain memory: random edge ops against std::set,
// the write-deferring accessor, the edge-key bijection, and the checker's negative controls.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <set>
#include <utility>
#include <vector>

#include "pmlab/bep/node_pool.hpp"
#include "pmlab/bep/sdg.hpp"
#include "word_line.hpp"

namespace pmlab::bep::sdg {
namespace {

// The same type in every BEP test file (one unity-build batch may hold several).
using Line = test::WordLine;

struct Store {
  Store(std::uint64_t vertices, std::uint64_t capacity) : vs(vertices), es(capacity * 8) {
    for (auto& v : vs) v.w[kHead] = kNil;
    graph = {vs[0].w.data(), es[0].w.data(), vertices, capacity};
  }
  std::vector<Line> vs, es;
  Graph graph;
};

template <class A>
void apply_op(A& a, Direct& raw, const Graph& g, const EdgeSpace& space, Arenas& arenas,
              std::set<std::uint64_t>& model, Op op) {
  Ops<A> ops(a, g);
  const auto [u, v] = space.ends(op.key);
  const std::uint64_t e = ops.find(u, op.key);
  if (op.kind == OpKind::kInsert && e == kNil) {
    const std::uint64_t eu = arenas.alloc(0), ev = arenas.alloc(0);
    write_payload(raw, g, eu, op.key, u);
    write_payload(raw, g, ev, op.key, v);
    ops.insert(op.key, u, v, eu, ev);
    model.insert(op.key);
  } else if (op.kind == OpKind::kErase && e != kNil) {
    const auto [fu, fv] = ops.erase(op.key, u, v);
    ASSERT_NE(fu, kNil);
    ASSERT_NE(fv, kNil);
    arenas.free(0, fu);
    arenas.free(0, fv);
    model.erase(op.key);
  }
}

TEST(BepSdg, EdgeKeysNameEveryUnorderedPairOnce) {
  for (const std::uint64_t nv : {2u, 3u, 4u, 5u, 32u, 33u}) {
    const EdgeSpace space(nv);
    EXPECT_EQ(space.size(), nv * (nv - 1) / 2);
    std::set<std::pair<std::uint64_t, std::uint64_t>> pairs;
    for (std::uint64_t k = 0; k < space.size(); ++k) {
      auto [u, v] = space.ends(k);
      ASSERT_NE(u, v);
      ASSERT_LT(u, nv);
      ASSERT_LT(v, nv);
      pairs.insert({std::min(u, v), std::max(u, v)});
    }
    EXPECT_EQ(pairs.size(), space.size()) << nv << " vertices";
  }
}

TEST(BepSdg, RandomOpsKeepEveryInvariantAndMatchASet) {
  constexpr std::uint64_t kV = 64, kCap = 1024;
  Store s(kV, kCap);
  const EdgeSpace space(kV);
  Direct raw;
  Arenas arenas(kCap, 1);
  std::vector<std::uint8_t> none(kCap, 0);
  arenas.rebuild(none);
  std::set<std::uint64_t> model;
  std::vector<std::uint64_t> keys;
  for (int i = 0; i < 20000; ++i) {
    apply_op(raw, raw, s.graph, space, arenas, model,
             op_of(3, 0, static_cast<std::uint64_t>(i), 500));
    if (i % 97 == 0 || i > 19900) {
      ASSERT_EQ(check(raw, s.graph, space, keys), "") << "after op " << i;
      ASSERT_EQ(keys, std::vector<std::uint64_t>(model.begin(), model.end())) << "op " << i;
    }
  }
  std::vector<std::uint8_t> mark(kCap, 0);
  ASSERT_EQ(mark_reachable(raw, s.graph, mark), "");
  Arenas rebuilt(kCap, 1);
  rebuilt.rebuild(mark);
  EXPECT_EQ(rebuilt.free_count(0), kCap - 2 * model.size());
}

TEST(BepSdg, DeferredWritesGiveTheSameGraph) {
  constexpr std::uint64_t kV = 64, kCap = 1024;
  Store direct(kV, kCap), deferred(kV, kCap);
  const EdgeSpace space(kV);
  Direct raw;
  Arenas a1(kCap, 1), a2(kCap, 1);
  std::vector<std::uint8_t> none(kCap, 0);
  a1.rebuild(none);
  a2.rebuild(none);
  std::set<std::uint64_t> m1, m2;
  for (int i = 0; i < 10000; ++i) {
    apply_op(raw, raw, direct.graph, space, a1, m1,
             op_of(9, 0, static_cast<std::uint64_t>(i), 400));
    Deferred<Direct> d(raw);
    apply_op(d, raw, deferred.graph, space, a2, m2,
             op_of(9, 0, static_cast<std::uint64_t>(i), 400));
    std::array<const std::uint64_t*, 16> lines{};
    EXPECT_LE(d.lines(lines), 4u);  // two vertex lines + two entry (or predecessor) lines
    d.apply(raw);
  }
  EXPECT_EQ(direct.vs, deferred.vs);
  EXPECT_EQ(direct.es, deferred.es);
}

TEST(BepSdg, CheckerCatchesEachKindOfCorruption) {
  constexpr std::uint64_t kV = 16, kCap = 128;
  const EdgeSpace space(kV);
  Direct raw;
  std::vector<std::uint64_t> keys;
  const auto corrupted = [&](auto&& corrupt) {
    Store s(kV, kCap);
    Arenas arenas(kCap, 1);
    std::vector<std::uint8_t> none(kCap, 0);
    arenas.rebuild(none);
    std::set<std::uint64_t> model;
    for (std::uint64_t k = 0; k < 40; ++k)
      apply_op(raw, raw, s.graph, space, arenas, model, {OpKind::kInsert, k});
    EXPECT_EQ(check(raw, s.graph, space, keys), "");
    corrupt(s);
    return check(raw, s.graph, space, keys);
  };
  const auto head = [](Store& s, std::uint64_t v) { return *s.graph.vword(v, kHead); };
  const std::uint64_t u = space.ends(0).first;
  // Asymmetric: unlink key 0's entry from u's list only (fix the degree so only symmetry breaks).
  EXPECT_NE(corrupted([&](Store& s) {
              Ops<Direct> ops(raw, s.graph);
              const std::uint64_t e = ops.find(u, 0);
              std::uint64_t* prev = s.graph.vword(u, kHead);
              while (*prev != e) prev = s.graph.eword(*prev, kNext);
              *prev = *s.graph.eword(e, kNext);
              --*s.graph.vword(u, kDegree);
            }),
            "");
  EXPECT_NE(corrupted([&](Store& s) { ++*s.graph.vword(u, kDegree); }), "");
  EXPECT_NE(corrupted([&](Store& s) { *s.graph.eword(head(s, u), kNeighbor) = u; }), "");
  EXPECT_NE(corrupted([&](Store& s) { *s.graph.eword(head(s, u), 20) ^= 4; }), "");
  EXPECT_NE(corrupted([&](Store& s) { *s.graph.eword(head(s, u), kNext) = head(s, u); }), "");
}

}  // namespace
}  // namespace pmlab::bep::sdg
