// The rbtree benchmark's algorithm and checker over plain memory: random ops against std::set,
// the write-deferring accessor, reachability, and the checker's own negative controls.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <set>
#include <vector>

#include "pmlab/bep/node_pool.hpp"
#include "pmlab/bep/rbtree.hpp"
#include "word_line.hpp"

namespace pmlab::bep::rbtree {
namespace {

// The same type in every BEP test file (one unity-build batch may hold several).
using Line = test::WordLine;

// A tree in plain memory, with its root word on its own line.
struct Store {
  explicit Store(std::uint64_t capacity) : node_lines(capacity * 8), meta_line(1) {
    meta_line[0].w.fill(kNil);
    tree = {node_lines[0].w.data(), capacity, meta_line[0].w.data()};
  }
  std::vector<Line> node_lines, meta_line;
  Tree tree;
  [[nodiscard]] const std::uint64_t* nodes() const { return node_lines[0].w.data(); }
  [[nodiscard]] std::uint64_t root() const { return meta_line[0].w[0]; }
};

// Applies op (insert if absent, erase if present) with accessor `a`; mirrors it in `model`.
template <class A>
void apply_op(A& a, Direct& raw, const Tree& t, Arenas& arenas, std::set<std::uint64_t>& model,
              Op op) {
  Ops<A> ops(a, t);
  const std::uint64_t n = ops.search(op.key);
  if (op.kind == OpKind::kInsert && n == kNil) {
    const std::uint64_t z = arenas.alloc(0);
    write_payload(raw, t, z, op.key);
    ops.insert(z, op.key);
    model.insert(op.key);
  } else if (op.kind == OpKind::kErase && n != kNil) {
    ops.erase(n);
    arenas.free(0, n);
    model.erase(op.key);
  }
}

TEST(BepRbtree, RandomOpsKeepEveryInvariantAndMatchASet) {
  constexpr std::uint64_t kCap = 1024;
  Store s(kCap);
  Direct raw;
  Arenas arenas(kCap, 1);
  std::vector<std::uint8_t> none(kCap, 0);
  arenas.rebuild(none);
  std::set<std::uint64_t> model;
  std::vector<std::uint64_t> keys;
  for (int i = 0; i < 30000; ++i) {
    apply_op(raw, raw, s.tree, arenas, model, op_of(7, 0, static_cast<std::uint64_t>(i), 900));
    if (i % 101 == 0 || i > 29900) {
      ASSERT_EQ(check(raw, s.tree, keys), "") << "after op " << i;
      ASSERT_EQ(keys, std::vector<std::uint64_t>(model.begin(), model.end())) << "op " << i;
    }
  }
  EXPECT_GT(model.size(), 300u);  // the test exercised a deep tree
}

TEST(BepRbtree, DeferredWritesGiveTheSameTreeAndASmallLineSet) {
  constexpr std::uint64_t kCap = 2048;
  Store direct(kCap), deferred(kCap);
  Direct raw;
  Arenas a1(kCap, 1), a2(kCap, 1);
  std::vector<std::uint8_t> none(kCap, 0);
  a1.rebuild(none);
  a2.rebuild(none);
  std::set<std::uint64_t> m1, m2;
  std::size_t max_lines = 0;
  for (int i = 0; i < 20000; ++i) {
    apply_op(raw, raw, direct.tree, a1, m1, op_of(11, 0, static_cast<std::uint64_t>(i), 1800));
    Deferred<Direct> d(raw);
    apply_op(d, raw, deferred.tree, a2, m2, op_of(11, 0, static_cast<std::uint64_t>(i), 1800));
    std::array<const std::uint64_t*, Deferred<Direct>::kCapacity> lines{};
    const std::size_t n = d.lines(lines);
    max_lines = std::max(max_lines, n);
    // Every written word lies on line 0 of a node or on the root's line: payload is written
    // before the transaction, rotations touch only links.
    for (std::size_t j = 0; j < n; ++j) {
      const auto off = static_cast<std::size_t>(lines[j] - deferred.nodes());
      const bool root_line = lines[j] == deferred.tree.root;
      ASSERT_TRUE(root_line || (lines[j] >= deferred.nodes() && off % kEntryWords == 0));
    }
    d.apply(raw);
  }
  EXPECT_EQ(direct.node_lines, deferred.node_lines);
  EXPECT_EQ(direct.meta_line, deferred.meta_line);
  EXPECT_LE(max_lines, 64u);
  EXPECT_GE(max_lines, 4u);
}

TEST(BepRbtree, ReachabilityRebuildsTheFreeLists) {
  constexpr std::uint64_t kCap = 256;
  Store s(kCap);
  Direct raw;
  Arenas arenas(kCap, 2);
  std::vector<std::uint8_t> none(kCap, 0);
  arenas.rebuild(none);
  std::set<std::uint64_t> model;
  for (std::uint64_t k = 0; k < 100; ++k) {
    Ops<Direct> ops(raw, s.tree);
    const std::uint64_t z = arenas.alloc(static_cast<int>(k % 2));
    write_payload(raw, s.tree, z, k);
    ops.insert(z, k);
  }
  std::vector<std::uint8_t> mark(kCap, 0);
  ASSERT_EQ(mark_reachable(raw, s.tree, mark), "");
  Arenas rebuilt(kCap, 2);
  rebuilt.rebuild(mark);
  EXPECT_EQ(rebuilt.free_count(0), 128u - 50u);
  EXPECT_EQ(rebuilt.free_count(1), 128u - 50u);
}

// The checker's negative controls: each corruption must be reported.
TEST(BepRbtree, CheckerCatchesEachKindOfCorruption) {
  constexpr std::uint64_t kCap = 128;
  Direct raw;
  auto build = [&](Store& s) {
    Arenas arenas(kCap, 1);
    std::vector<std::uint8_t> none(kCap, 0);
    arenas.rebuild(none);
    Ops<Direct> ops(raw, s.tree);
    for (std::uint64_t k = 0; k < 60; ++k) {
      const std::uint64_t z = arenas.alloc(0);
      write_payload(raw, s.tree, z, k * 3);
      ops.insert(z, k * 3);
    }
  };
  std::vector<std::uint64_t> keys;
  const auto corrupted = [&](auto&& corrupt) {
    Store s(kCap);
    build(s);
    EXPECT_EQ(check(raw, s.tree, keys), "");
    corrupt(s);
    return check(raw, s.tree, keys);
  };
  const auto root = [](Store& s) { return s.root(); };
  EXPECT_NE(corrupted([&](Store& s) { *s.tree.word(root(s), kColor) = kRed; }), "");
  EXPECT_NE(corrupted([&](Store& s) {
              const auto l = *s.tree.word(root(s), kLeft);
              *s.tree.word(l, kKey) = 1000;  // now larger than the root
            }),
            "");
  EXPECT_NE(corrupted([&](Store& s) { *s.tree.word(*s.tree.word(root(s), kLeft), kParent) = 7; }),
            "");
  EXPECT_NE(corrupted([&](Store& s) { *s.tree.word(root(s), 40) ^= 1; }), "");  // torn payload
  EXPECT_NE(corrupted([&](Store& s) {
              // An unbalanced black height: drop a whole subtree.
              *s.tree.word(*s.tree.word(root(s), kLeft), kLeft) = kNil;
            }),
            "");
  EXPECT_NE(
      corrupted([&](Store& s) { *s.tree.word(*s.tree.word(root(s), kLeft), kRight) = root(s); }),
      "");  // a cycle
}

TEST(BepReplay, IsTheInitialFillPlusEachThreadsOwnOps) {
  const auto none = replay(5, 2, 16, 0);
  ASSERT_EQ(none.size(), 8u);
  EXPECT_EQ(none.front(), 32u);  // thread 2's range starts at 2 * 16
  // The replay follows the op stream exactly.
  std::set<std::uint64_t> model(none.begin(), none.end());
  for (int i = 0; i < 50; ++i) {
    const Op op = op_of(5, 2, static_cast<std::uint64_t>(i), 16);
    if (op.kind == OpKind::kInsert) model.insert(32 + op.key);
    if (op.kind == OpKind::kErase) model.erase(32 + op.key);
    EXPECT_EQ(replay(5, 2, 16, static_cast<std::uint64_t>(i) + 1),
              std::vector<std::uint64_t>(model.begin(), model.end()));
  }
}

}  // namespace
}  // namespace pmlab::bep::rbtree
