// The rbtree BEP micro-benchmark's data structure: a red-black tree of 512 B nodes addressed by
// index, every access through a WordAccess (backend, Deferred or Direct); plus its checker.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <span>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "pmlab/bep/epoch_tracked.hpp"
#include "pmlab/bep/node_pool.hpp"
#include "pmlab/bep/progress.hpp"
#include "pmlab/bep/replay_check.hpp"
#include "pmlab/bep/tx.hpp"
#include "pmlab/core/error.hpp"

namespace pmlab::bep::rbtree {

// A node is 512 B: line 0 holds the links a rebalance rewrites (so an undo log of a rotation
// copies only line 0 of each node it touches), lines 1..7 the payload, written once when the
// node is inserted. Words 5..7 of line 0 stay zero.
enum Word : std::size_t { kKey = 0, kColor = 1, kLeft = 2, kRight = 3, kParent = 4 };
inline constexpr std::size_t kPayloadFirst = kLineWords;
inline constexpr std::uint64_t kRed = 0;
inline constexpr std::uint64_t kBlack = 1;

// The tree's persistent memory: `capacity` nodes and the root index (a word on its own line,
// so logging it never drags a node along).
struct Tree {
  std::uint64_t* nodes = nullptr;
  std::uint64_t capacity = 0;
  std::uint64_t* root = nullptr;

  [[nodiscard]] std::uint64_t* word(std::uint64_t n, std::size_t w) const {
    return nodes + n * kEntryWords + w;
  }
};

// Writes node n's payload for `key` (lines 1..7). Done before the node is linked, so the
// payload needs no undo: an unlinked node is free after recovery whatever it holds.
template <WordAccess A>
void write_payload(A& a, const Tree& t, std::uint64_t n, std::uint64_t key) {
  for (std::size_t w = kPayloadFirst; w < kEntryWords; ++w)
    a.store(t.word(n, w), payload_word(key, w));
}

// The operations over one accessor. Nil children are kNil (no sentinel node: a sentinel's
// parent field is written by every erase, which would put one shared line in every write set).
template <WordAccess A>
class Ops {
 public:
  Ops(A& a, const Tree& t) : a_(a), t_(t) {}

  [[nodiscard]] std::uint64_t search(std::uint64_t key) {
    std::uint64_t x = root();
    while (x != kNil) {
      const std::uint64_t k = get(x, kKey);
      if (key == k) return x;
      x = get(x, key < k ? kLeft : kRight);
    }
    return kNil;
  }

  // Links node z (its payload already written) under `key`; the key must be absent.
  void insert(std::uint64_t z, std::uint64_t key) {
    std::uint64_t y = kNil;
    std::uint64_t x = root();
    while (x != kNil) {
      y = x;
      x = get(x, key < get(x, kKey) ? kLeft : kRight);
    }
    set(z, kKey, key);
    set(z, kLeft, kNil);
    set(z, kRight, kNil);
    set(z, kParent, y);
    set(z, kColor, kRed);
    if (y == kNil)
      set_root(z);
    else
      set(y, key < get(y, kKey) ? kLeft : kRight, z);
    insert_fixup(z);
  }

  // Unlinks node z (CLRS's erase with transplant: z's successor is moved, not its payload).
  void erase(std::uint64_t z) {
    std::uint64_t y = z;
    std::uint64_t y_color = get(y, kColor);
    std::uint64_t x = kNil;
    std::uint64_t xp = kNil;
    if (get(z, kLeft) == kNil) {
      x = get(z, kRight);
      xp = get(z, kParent);
      transplant(z, x);
    } else if (get(z, kRight) == kNil) {
      x = get(z, kLeft);
      xp = get(z, kParent);
      transplant(z, x);
    } else {
      y = minimum(get(z, kRight));
      y_color = get(y, kColor);
      x = get(y, kRight);
      if (get(y, kParent) == z) {
        xp = y;
      } else {
        xp = get(y, kParent);
        transplant(y, x);
        set(y, kRight, get(z, kRight));
        set(get(y, kRight), kParent, y);
      }
      transplant(z, y);
      set(y, kLeft, get(z, kLeft));
      set(get(y, kLeft), kParent, y);
      set(y, kColor, get(z, kColor));
    }
    if (y_color == kBlack) erase_fixup(x, xp);
  }

 private:
  [[nodiscard]] std::uint64_t get(std::uint64_t n, Word w) { return a_.load(t_.word(n, w)); }
  void set(std::uint64_t n, Word w, std::uint64_t v) { a_.store(t_.word(n, w), v); }
  [[nodiscard]] std::uint64_t root() { return a_.load(t_.root); }
  void set_root(std::uint64_t n) { a_.store(t_.root, n); }
  [[nodiscard]] bool red(std::uint64_t n) { return n != kNil && get(n, kColor) == kRed; }
  // Only stores a colour that changes, so unchanged nodes stay out of the write set.
  void paint(std::uint64_t n, std::uint64_t c) {
    if (get(n, kColor) != c) set(n, kColor, c);
  }

  [[nodiscard]] std::uint64_t minimum(std::uint64_t x) {
    for (std::uint64_t l = get(x, kLeft); l != kNil; l = get(x, kLeft)) x = l;
    return x;
  }

  // Replaces the subtree at u by the one at v (v may be nil) in u's parent.
  void transplant(std::uint64_t u, std::uint64_t v) {
    const std::uint64_t up = get(u, kParent);
    if (up == kNil)
      set_root(v);
    else if (u == get(up, kLeft))
      set(up, kLeft, v);
    else
      set(up, kRight, v);
    if (v != kNil) set(v, kParent, up);
  }

  // Rotation towards `dir` (kLeft: x's right child y takes x's place, x becomes y's left).
  void rotate(std::uint64_t x, Word dir) {
    const Word other = dir == kLeft ? kRight : kLeft;
    const std::uint64_t y = get(x, other);
    const std::uint64_t beta = get(y, dir);
    set(x, other, beta);
    if (beta != kNil) set(beta, kParent, x);
    transplant(x, y);
    set(y, dir, x);
    set(x, kParent, y);
  }

  void insert_fixup(std::uint64_t z) {
    for (std::uint64_t p = get(z, kParent); p != kNil && red(p); p = get(z, kParent)) {
      const std::uint64_t g = get(p, kParent);  // exists: a red node is never the root
      const Word side = p == get(g, kLeft) ? kLeft : kRight;
      const Word other = side == kLeft ? kRight : kLeft;
      const std::uint64_t u = get(g, other);
      if (red(u)) {
        paint(p, kBlack);
        paint(u, kBlack);
        paint(g, kRed);
        z = g;
        continue;
      }
      if (z == get(p, other)) {
        z = p;
        rotate(z, side);
        p = get(z, kParent);
      }
      paint(p, kBlack);
      paint(g, kRed);
      rotate(g, other);
    }
    paint(root(), kBlack);
  }

  // x (possibly nil) carries an extra black; xp is its parent (needed when x is nil).
  void erase_fixup(std::uint64_t x, std::uint64_t xp) {
    while (x != root() && !red(x)) {
      const Word side = x == get(xp, kLeft) ? kLeft : kRight;
      const Word other = side == kLeft ? kRight : kLeft;
      std::uint64_t w = get(xp, other);  // exists: x's side is one black short
      if (red(w)) {
        paint(w, kBlack);
        paint(xp, kRed);
        rotate(xp, side);
        w = get(xp, other);
      }
      if (!red(get(w, kLeft)) && !red(get(w, kRight))) {
        paint(w, kRed);
        x = xp;
        xp = get(x, kParent);
        continue;
      }
      if (!red(get(w, other))) {
        paint(get(w, side), kBlack);
        paint(w, kRed);
        rotate(w, other);
        w = get(xp, other);
      }
      paint(w, get(xp, kColor));
      paint(xp, kBlack);
      paint(get(w, other), kBlack);
      rotate(xp, side);
      x = root();
      break;
    }
    if (x != kNil) paint(x, kBlack);
  }

  A& a_;
  const Tree& t_;
};

// Marks every node reachable from the root (bounded: a corrupt index or a cycle stops the
// walk with an error message instead of looping). Empty string when the walk was clean.
template <WordAccess A>
[[nodiscard]] std::string mark_reachable(A& a, const Tree& t, std::span<std::uint8_t> mark) {
  std::vector<std::uint64_t> stack;
  const std::uint64_t r = a.load(t.root);
  if (r != kNil) stack.push_back(r);
  while (!stack.empty()) {
    const std::uint64_t n = stack.back();
    stack.pop_back();
    if (n >= t.capacity) return fmt::format("node index {} out of range", n);
    if (mark[n] != 0) return fmt::format("node {} reached twice (cycle or shared child)", n);
    mark[n] = 1;
    for (const Word w : {kLeft, kRight})
      if (const std::uint64_t c = a.load(t.word(n, w)); c != kNil) stack.push_back(c);
  }
  return {};
}

// Every invariant of the tree: indices in range and each node reached once, parent links,
// strict BST order, root black, no red node with a red child, the same black height on every
// path, colours 0/1, zero spare words, and every payload word a function of its key. Returns
// the first violation ("" if none); `keys` gets the in-order key sequence.
template <WordAccess A>
[[nodiscard]] std::string check(A& a, const Tree& t, std::vector<std::uint64_t>& keys) {
  keys.clear();
  struct Frame {
    std::uint64_t n, parent;
    std::uint64_t lo, hi;  // exclusive key bounds; lo_open/hi_open say whether they apply
    bool lo_open, hi_open;
    std::uint32_t blacks;  // black nodes above n
    bool visited_left;
  };
  std::vector<std::uint8_t> seen(t.capacity, 0);
  std::vector<Frame> stack;
  std::int64_t black_height = -1;
  const std::uint64_t r = a.load(t.root);
  if (r != kNil && r >= t.capacity) return fmt::format("root index {} out of range", r);
  if (r != kNil && a.load(t.word(r, kColor)) != kBlack) return "root is red";
  // Iterative in-order walk; each nil child closes a path whose black count must agree.
  const auto nil_leaf = [&](std::uint32_t blacks) -> std::string {
    if (black_height < 0) black_height = blacks;
    if (black_height != blacks)
      return fmt::format("black heights differ ({} and {})", black_height, blacks);
    return {};
  };
  if (r == kNil) return {};
  stack.push_back({r, kNil, 0, 0, false, false, 0, false});
  while (!stack.empty()) {
    Frame& f = stack.back();
    const std::uint64_t n = f.n;
    if (!f.visited_left) {
      f.visited_left = true;
      if (n >= t.capacity) return fmt::format("node index {} out of range", n);
      if (seen[n] != 0) return fmt::format("node {} reached twice (cycle or shared child)", n);
      seen[n] = 1;
      const std::uint64_t key = a.load(t.word(n, kKey));
      const std::uint64_t color = a.load(t.word(n, kColor));
      if (a.load(t.word(n, kParent)) != f.parent)
        return fmt::format("node {} (key {}): parent link {} but its parent is {}", n, key,
                           a.load(t.word(n, kParent)), f.parent);
      if ((f.lo_open && key <= f.lo) || (f.hi_open && key >= f.hi))
        return fmt::format("node {}: key {} breaks BST order", n, key);
      if (color != kRed && color != kBlack) return fmt::format("node {}: colour {}", n, color);
      if (color == kRed)
        for (const Word w : {kLeft, kRight})
          if (const std::uint64_t c = a.load(t.word(n, w));
              c != kNil && c < t.capacity && a.load(t.word(c, kColor)) == kRed)
            return fmt::format("red node {} (key {}) has a red child {}", n, key, c);
      for (std::size_t w = kParent + 1; w < kPayloadFirst; ++w)
        if (a.load(t.word(n, w)) != 0) return fmt::format("node {}: spare word {} set", n, w);
      for (std::size_t w = kPayloadFirst; w < kEntryWords; ++w)
        if (a.load(t.word(n, w)) != payload_word(key, w))
          return fmt::format("node {} (key {}): payload word {} torn", n, key, w);
      const std::uint32_t blacks = f.blacks + (color == kBlack ? 1 : 0);
      const std::uint64_t l = a.load(t.word(n, kLeft));
      if (l == kNil) {
        if (auto e = nil_leaf(blacks); !e.empty()) return e;
      } else {
        const Frame child{l, n, f.lo, key, f.lo_open, true, blacks, false};
        stack.push_back(child);  // invalidates f
      }
      continue;
    }
    // Left subtree done: emit n, then replace the frame by n's right subtree.
    const Frame done = f;
    stack.pop_back();
    const std::uint64_t key = a.load(t.word(n, kKey));
    keys.push_back(key);
    const std::uint32_t blacks = done.blacks + (a.load(t.word(n, kColor)) == kBlack ? 1 : 0);
    const std::uint64_t rc = a.load(t.word(n, kRight));
    if (rc == kNil) {
      if (auto e = nil_leaf(blacks); !e.empty()) return e;
    } else {
      stack.push_back({rc, n, key, done.hi, true, done.hi_open, blacks, false});
    }
  }
  return {};
}

// --- The benchmark (spec §3.6): shape, initial fill, the two schemes, recovery, verification ---
//
// pmlab's choices (the seed gives only the 512 B entry and the op kinds): `n` nodes split into
// T per-thread key ranges of R = ceil(n / T) keys (thread t owns keys t·R .. t·R + R - 1) and
// T arenas of R nodes, so a thread never runs out of nodes and the final key set is the replay
// of each thread's own ops whatever the interleaving. The tree starts with every even key of
// every range. One lock (stripe 0) serializes the whole tree, as in the seed's table.
struct Shape {
  std::uint64_t n = 0;  // nodes requested
  std::uint64_t threads = 1;
  std::uint64_t ops = 0;  // per thread
  std::uint64_t seed = 0;
  [[nodiscard]] std::uint64_t range() const { return (n + threads - 1) / threads; }
  [[nodiscard]] std::uint64_t capacity() const { return range() * threads; }
  // Words of the heap array: the root's line, then the nodes.
  [[nodiscard]] std::uint64_t heap_words() const { return kLineWords + capacity() * kEntryWords; }
};

[[nodiscard]] inline Tree tree_of(std::uint64_t* heap, const Shape& s) {
  return {heap + kLineWords, s.capacity(), heap};
}

// The initial tree: key t·R + k (k even) in node t·R + k, inserted in key order.
template <WordAccess A>
void build_initial(A& a, const Tree& t, const Shape& s) {
  a.store(t.root, kNil);
  Ops<A> ops(a, t);
  for (std::uint64_t key = 0; key < s.capacity(); ++key)
    if (key % s.range() % 2 == 0) {
      write_payload(a, t, key, key);
      ops.insert(key, key);
    }
}

// Writes the initial tree into a fresh heap (every spare word zero).
inline void init(std::uint64_t* heap, const Shape& s) {
  std::memset(heap, 0, s.heap_words() * sizeof(std::uint64_t));
  Direct d;
  build_initial(d, tree_of(heap, s), s);
}

// Volatile allocator state at the start of a run (fresh or resumed): the whole tree is checked
// first, since operations on a corrupt tree (say a parent cycle) need not terminate; then the
// free nodes are the unreachable ones. Reads memory directly: it is the runtime's own set-up,
// not the benchmark's persistent work, and is not simulated.
[[nodiscard]] inline Arenas arenas_of(const Tree& t, const Shape& s) {
  Direct d;
  std::vector<std::uint64_t> keys;
  if (const std::string e = check(d, t, keys); !e.empty())
    throw Error(ErrorCode::kPoolCorrupt, fmt::format("rbtree: the tree is corrupt: {}", e));
  std::vector<std::uint8_t> mark(t.capacity, 0);
  (void)mark_reachable(d, t, mark);  // clean: check walked the same links
  Arenas arenas(t.capacity, static_cast<int>(s.threads));
  arenas.rebuild(mark);
  return arenas;
}

// Op j of thread th on accessor a (the backend itself, or Deferred for a transaction). Returns
// the node an erase unlinked (freed by the caller once the op is durable), else kNil.
template <WordAccess A, WordAccess P>
std::uint64_t apply_op(A& a, P& payload, const Tree& t, Arenas& arenas, const Shape& s,
                       std::uint64_t th, std::uint64_t j) {
  const Op op = op_of(s.seed, th, j, s.range());
  const std::uint64_t key = th * s.range() + op.key;
  Ops<A> ops(a, t);
  const std::uint64_t n = ops.search(key);
  if (op.kind == OpKind::kInsert && n == kNil) {
    // The payload goes straight to memory (E1 of a transaction): the node is unreachable until
    // the links are, so it needs no undo.
    const std::uint64_t z = arenas.alloc(static_cast<int>(th));
    write_payload(payload, t, z, key);
    ops.insert(z, key);
  } else if (op.kind == OpKind::kErase && n != kNil) {
    ops.erase(n);
    return n;
  }
  return kNil;
}

// Epoch persistency: every op (a search too: its E4 counts it) one undo-log transaction whose
// log holds line 0 of every node the op relinks or recolours, and the root's line.
template <EpochBackend B>
void run_tx(B& b, std::uint64_t* heap, TxLog* logs, const Shape& s) {
  const Tree t = tree_of(heap, s);
  Arenas arenas = arenas_of(t, s);
  order_sections_after_commits(b, logs);
  run_thread_ops(
      b, s.threads, s.ops, [&](std::size_t th) { return tx_done(b, logs[th]); },
      [&](std::size_t th, std::size_t j) {
        b.exclusive(0, [&] {
          Deferred<B> d(b);
          const std::uint64_t freed = apply_op(d, b, t, arenas, s, th, j);
          Tx<B> tx(b, logs[th], reinterpret_cast<std::byte*>(heap));
          std::array<const std::uint64_t*, kTxMaxLines> lines{};
          const std::size_t m = d.lines(lines);
          for (std::size_t i = 0; i < m; ++i) tx.add(lines[i], kLineWords * sizeof(std::uint64_t));
          tx.begin();
          d.apply(b);
          tx.commit();
          // Reusable only now: the unlink is durable, so no later op's writes can land in a
          // node the recovered tree still links.
          if (freed != kNil) arenas.free(static_cast<int>(th), freed);
        });
      });
}

// Rolls back each thread's interrupted transaction; returns how many there were.
template <EpochBackend B>
std::uint64_t recover_tx(B& b, std::uint64_t* heap, TxLog* logs, const Shape& s) {
  std::uint64_t undone = 0;
  for (std::size_t th = 0; th < s.threads; ++th)
    undone += tx_recover(b, logs[th], reinterpret_cast<std::byte*>(heap)) ? 1 : 0;
  return undone;
}

// No persistency (the throughput baseline): the same ops in place, under the same lock.
template <EpochBackend B>
void run_base(B& b, std::uint64_t* heap, const Shape& s) {
  const Tree t = tree_of(heap, s);
  Arenas arenas = arenas_of(t, s);
  b.parallel_for(0, s.threads * s.ops, [&](std::size_t i) {
    const std::size_t th = i / s.ops, j = i % s.ops;
    b.exclusive(0, [&] {
      const std::uint64_t freed = apply_op(b, b, t, arenas, s, th, j);
      if (freed != kNil) arenas.free(static_cast<int>(th), freed);
    });
  });
}

using Check = SetCheck;

// The tree's invariants, then its key set against the replay of `done` ops of every thread.
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
  if (std::string e = check(d, tree_of(heap, s), got); !e.empty()) {
    c.bad = 1;
    c.first = std::move(e);
    return c;
  }
  compare_with_replay(c, want, got, "key");
  return c;
}

}  // namespace pmlab::bep::rbtree
