// Hash (seed Table 2): insert, delete and search in a chained hash table of 512 B entries.
//
// Layout of the pool array "hash" (Layout): one DoneCounter line per thread, the bucket heads
// (entry index + 1, 0 = empty), then the n entries. Entry k holds key k (a static slot per key:
// pmlab's choice, so no allocator has to be rebuilt after a crash); word 1 is its chain link.
// Thread t owns keys [t·n/T, (t+1)·n/T), so the final key set is deterministic; op j of thread t
// draws its key and kind (insert, delete, search: 1/3 each) from op_random(seed, t, j). The
// table starts with every even key. Buckets: max(1, n/4); lock stripe = bucket.
//
// Epochs (under the bucket's lock, copy-while-locked): insert = E(write the entry, next = head),
// E(head = k + 1); delete = E(predecessor's link = victim's next); then E(done_t = j + 1). Each
// mutation is a one-word commit on a durable entry, so no log is needed. Insert-if-absent and
// delete-if-present are idempotent: replaying an op whose commit persisted changes nothing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "pmlab/bep/entry.hpp"
#include "pmlab/bep/epoch_tracked.hpp"
#include "pmlab/bep/progress.hpp"
#include "pmlab/core/error.hpp"

namespace pmlab::bep::hash {

struct Shape {
  std::size_t n = 0;        // keys = entries
  std::size_t threads = 1;  // T
  std::size_t ops = 0;      // per thread
  std::uint64_t seed = 0;
  [[nodiscard]] std::size_t buckets() const { return n / 4 > 0 ? n / 4 : 1; }
  [[nodiscard]] std::size_t bucket_of(std::uint64_t key) const { return mix(key) % buckets(); }
  [[nodiscard]] std::size_t lo(std::size_t t) const { return t * n / threads; }
  [[nodiscard]] std::size_t hi(std::size_t t) const { return (t + 1) * n / threads; }
  [[nodiscard]] std::size_t bytes() const {
    return threads * sizeof(DoneCounter) + bucket_bytes() + n * sizeof(Entry);
  }
  [[nodiscard]] std::size_t bucket_bytes() const { return (buckets() * 8 + 63) / 64 * 64; }
};

enum class Kind { kInsert, kDelete, kSearch };
struct Op {
  std::uint64_t key = 0;
  Kind kind = Kind::kSearch;
  bool none = true;  // the thread owns no key
};
[[nodiscard]] inline Op op_of(const Shape& s, std::size_t t, std::size_t j) {
  const std::size_t len = s.hi(t) - s.lo(t);
  if (len == 0) return {};
  const std::uint64_t r = op_random(s.seed, t, j);
  return {s.lo(t) + (r & 0xffffffffu) % len, static_cast<Kind>((r >> 32) % 3), false};
}

// Views of the array.
struct Layout {
  DoneCounter* done = nullptr;
  std::uint64_t* heads = nullptr;
  Entry* entries = nullptr;
  Layout(std::byte* base, const Shape& s)
      : done(reinterpret_cast<DoneCounter*>(base)),
        heads(reinterpret_cast<std::uint64_t*>(base + s.threads * sizeof(DoneCounter))),
        entries(
            reinterpret_cast<Entry*>(base + s.threads * sizeof(DoneCounter) + s.bucket_bytes())) {}
};

// The initial table (every even key) and zero progress, through `b` (the pool's init writes
// directly; base's restart writes through the backend).
template <class B>
void init(B& b, const Layout& l, const Shape& s) {
  for (std::size_t t = 0; t < s.threads; ++t) b.store(&l.done[t].done, std::uint64_t{0});
  for (std::size_t i = 0; i < s.buckets(); ++i) b.store(&l.heads[i], std::uint64_t{0});
  for (std::uint64_t k = 0; k < s.n; k += 2) {
    std::uint64_t* head = &l.heads[s.bucket_of(k)];
    write_entry(b, l.entries[k], k, b.load(head), k);
    b.store(head, k + 1);
  }
}

// One op (without done counting); true if it changed the table.
template <EpochBackend B>
bool apply(B& b, const Layout& l, const Shape& s, const Op& op) {
  bool changed = false;
  const std::size_t bucket = s.bucket_of(op.key);
  b.exclusive(bucket, [&] {
    std::uint64_t* link = &l.heads[bucket];  // the word that points at the current entry
    std::size_t steps = 0;
    for (std::uint64_t cur = b.load(link); cur != 0; cur = b.load(link)) {
      // A corrupt table (only without barriers) must fail the run, not hang it.
      if (cur > s.n || ++steps > s.n)
        throw Error(
            ErrorCode::kPoolCorrupt,
            fmt::format("hash: bucket {} holds a cycle or a link outside the table", bucket));
      Entry& e = l.entries[cur - 1];
      if (b.load(&e.w[0]) == op.key) break;
      link = &e.w[1];
    }
    const std::uint64_t found = b.load(link);  // 0 if absent, else key + 1
    if (op.kind == Kind::kInsert && found == 0) {
      Entry& e = l.entries[op.key];
      write_entry(b, e, op.key, b.load(&l.heads[bucket]), op.key);
      b.barrier();
      b.store(&l.heads[bucket], op.key + 1);
      b.barrier();
      changed = true;
    } else if (op.kind == Kind::kDelete && found != 0) {
      b.store(link, b.load(&l.entries[found - 1].w[1]));
      b.barrier();
      changed = true;
    }
  });
  return changed;
}

template <EpochBackend B>
void run(B& b, const Layout& l, const Shape& s) {
  run_thread_ops(
      b, s.threads, s.ops, [&](std::size_t t) { return b.load(&l.done[t].done); },
      [&](std::size_t t, std::size_t j) {
        const Op op = op_of(s, t, j);
        if (!op.none && apply(b, l, s, op)) mark_done(b, l.done[t], j);
      });
}

// The key set after every op (the fault-free replay): present[k].
[[nodiscard]] inline std::vector<bool> reference(const Shape& s) {
  std::vector<bool> present(s.n, false);
  for (std::uint64_t k = 0; k < s.n; k += 2) present[k] = true;
  for (std::size_t t = 0; t < s.threads; ++t)
    for (std::size_t j = 0; j < s.ops; ++j) {
      const Op op = op_of(s, t, j);
      if (op.none) break;
      if (op.kind == Kind::kInsert) present[op.key] = true;
      if (op.kind == Kind::kDelete) present[op.key] = false;
    }
  return present;
}

struct Check {
  std::uint64_t elements = 0, bad = 0;
  std::string first;
  void fail(std::string why) {
    if (bad++ == 0) first = std::move(why);
  }
};

// Chains acyclic and within the entries, every key in its bucket and whole, and the key set
// equal to the replay.
[[nodiscard]] inline Check check(const std::byte* base, const Shape& s) {
  Check c;
  const Layout l(const_cast<std::byte*>(base), s);
  std::vector<bool> seen(s.n, false);
  for (std::size_t bkt = 0; bkt < s.buckets(); ++bkt) {
    std::size_t steps = 0;
    for (std::uint64_t cur = l.heads[bkt]; cur != 0; cur = l.entries[cur - 1].w[1]) {
      if (cur > s.n) {
        c.fail(fmt::format("bucket {}: link {} outside the {} entries", bkt, cur, s.n));
        break;
      }
      const std::uint64_t k = cur - 1;
      if (seen[k] || ++steps > s.n) {
        c.fail(fmt::format("bucket {}: entry {} reached twice (a cycle or a shared tail)", bkt, k));
        break;
      }
      seen[k] = true;
      const Entry& e = l.entries[k];
      if (e.w[0] != k || !entry_intact(e, k))
        c.fail(fmt::format("entry {}: torn or wrong key {}", k, e.w[0]));
      else if (s.bucket_of(k) != bkt)
        c.fail(fmt::format("key {} in bucket {}, belongs in {}", k, bkt, s.bucket_of(k)));
    }
  }
  const auto present = reference(s);
  for (std::size_t k = 0; k < s.n; ++k) {
    ++c.elements;
    if (seen[k] != present[k])
      c.fail(fmt::format("key {} is {} the table, the replay says {}", k,
                         seen[k] ? "in" : "missing from", present[k] ? "present" : "absent"));
  }
  return c;
}

}  // namespace pmlab::bep::hash
