// Queue (seed Table 2, Fig. 10a): a ring of 512 B slots, insert and delete copy-while-locked.
//
// Layout of the pool array "queue" (Layout): a head/tail line (monotone counts; slot = count
// mod cap), one record line per thread, then cap = n + T slots (pmlab's choice: the queue starts
// with n/2 entries and never holds more than n/2 + T, so an insert never overwrites a live slot).
// Thread t alternates insert (even op j: entry (producer t, seq j/2)) and delete (odd j), so a
// delete never finds the queue empty and the final head and tail are deterministic.
//
// Epochs, under the one lock (Fig. 10a): insert = E(copy the entry into slot[head], record :=
// (j, pending, head)), E(head + 1); delete = E(read slot[tail], record := (j, pending, tail)),
// E(tail + 1). The record is one word: ops done (j), a pending bit and the position. An op with
// a pending record completed iff its pointer has moved past the position (only the lock holder
// moves it, and its E2 is durable before the lock is released). Recovery resolves every pending
// record to "j + 1 done" or "j done" durably, before any other thread can move the pointers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "pmlab/bep/entry.hpp"
#include "pmlab/bep/epoch_tracked.hpp"
#include "pmlab/bep/progress.hpp"

namespace pmlab::bep::queue {

struct Shape {
  std::size_t n = 0;        // sizes the ring: initial fill n/2, capacity n + T
  std::size_t threads = 1;  // T
  std::size_t ops = 0;      // per thread
  [[nodiscard]] std::size_t cap() const { return n + threads; }
  [[nodiscard]] std::size_t initial() const { return n / 2; }
  [[nodiscard]] std::size_t bytes() const {
    return 64 + threads * sizeof(DoneCounter) + cap() * sizeof(Entry);
  }
  [[nodiscard]] std::uint64_t inserts_per_thread() const { return (ops + 1) / 2; }
  [[nodiscard]] std::uint64_t deletes_per_thread() const { return ops / 2; }
};

struct alignas(64) Pointers {
  std::uint64_t head;  // entries ever inserted
  std::uint64_t tail;  // entries ever deleted
  std::uint64_t reserved[6];
};

struct Layout {
  Pointers* ptr = nullptr;
  DoneCounter* rec = nullptr;  // DoneCounter::done holds the packed record
  Entry* slots = nullptr;
  Layout(std::byte* base, const Shape& s)
      : ptr(reinterpret_cast<Pointers*>(base)),
        rec(reinterpret_cast<DoneCounter*>(base + 64)),
        slots(reinterpret_cast<Entry*>(base + 64 + s.threads * sizeof(DoneCounter))) {}
};

// The record word: ops done (high 32 bits), pending (bit 31), position (low 31 bits).
[[nodiscard]] constexpr std::uint64_t pack(std::uint64_t done, bool pending, std::uint64_t pos) {
  return done << 32 | (pending ? std::uint64_t{1} << 31 : 0) | (pos & 0x7fffffffu);
}
[[nodiscard]] constexpr std::uint64_t id_of(std::uint64_t producer, std::uint64_t seq) {
  return producer << 32 | seq;
}

// Thread t's finished ops, from its record and the durable pointers.
template <mem::Backend B>
[[nodiscard]] std::uint64_t done_of(B& b, const Layout& l, std::size_t t) {
  const std::uint64_t r = b.load(&l.rec[t].done), done = r >> 32;
  if ((r >> 31 & 1) == 0) return done;
  const std::uint64_t pos = r & 0x7fffffffu;
  const std::uint64_t ptr = done % 2 == 0 ? b.load(&l.ptr->head) : b.load(&l.ptr->tail);
  return ptr > pos ? done + 1 : done;
}

// n/2 entries of the initial producer T, zero records, through `b` (see hash::init).
template <class B>
void init(B& b, const Layout& l, const Shape& s) {
  b.store(&l.ptr->head, std::uint64_t{s.initial()});
  b.store(&l.ptr->tail, std::uint64_t{0});
  for (std::size_t t = 0; t < s.threads; ++t) b.store(&l.rec[t].done, std::uint64_t{0});
  for (std::size_t i = 0; i < s.initial(); ++i) {
    const std::uint64_t id = id_of(s.threads, i);
    write_entry(b, l.slots[i], id, 0, id);
  }
}

template <EpochBackend B>
void run(B& b, const Layout& l, const Shape& s) {
  run_thread_ops(
      b, s.threads, s.ops, [&](std::size_t t) { return done_of(b, l, t); },
      [&](std::size_t t, std::size_t j) {
        b.exclusive(0, [&] {
          if (j % 2 == 0) {
            const std::uint64_t pos = b.load(&l.ptr->head);
            const std::uint64_t id = id_of(t, j / 2);
            write_entry(b, l.slots[pos % s.cap()], id, 0, id);
            b.store(&l.rec[t].done, pack(j, true, pos));
            b.barrier();
            b.store(&l.ptr->head, pos + 1);
            b.barrier();
          } else {
            const std::uint64_t pos = b.load(&l.ptr->tail);
            Entry out;  // the dequeued entry, copied out while locked (volatile)
            const Entry& slot = l.slots[pos % s.cap()];
            for (std::size_t k = 0; k < kEntryWords; ++k) out.w[k] = b.load(&slot.w[k]);
            b.store(&l.rec[t].done, pack(j, true, pos));
            b.barrier();
            b.store(&l.ptr->tail, pos + 1);
            b.barrier();
          }
        });
      });
}

// Resolves every pending record durably; returns how many ops it found completed.
template <EpochBackend B>
std::uint64_t recover(B& b, const Layout& l, const Shape& s) {
  std::uint64_t completed = 0;
  for (std::size_t t = 0; t < s.threads; ++t) {
    const std::uint64_t r = b.load(&l.rec[t].done);
    if ((r >> 31 & 1) == 0) continue;
    const std::uint64_t done = done_of(b, l, t);
    completed += done > (r >> 32) ? 1 : 0;
    b.store(&l.rec[t].done, pack(done, false, 0));
  }
  b.barrier();
  return completed;
}

struct Check {
  std::uint64_t elements = 0, bad = 0;
  std::string first;
  void fail(std::string why) {
    if (bad++ == 0) first = std::move(why);
  }
};

// Head and tail as every op requires, every live slot whole, and per producer the live entries
// a run of consecutive sequence numbers ending at its last insert (FIFO order, nothing lost or
// duplicated).
[[nodiscard]] inline Check check(const std::byte* base, const Shape& s) {
  Check c;
  const Layout l(const_cast<std::byte*>(base), s);
  const std::uint64_t head = l.ptr->head, tail = l.ptr->tail;
  const std::uint64_t want_head = s.initial() + s.threads * s.inserts_per_thread();
  const std::uint64_t want_tail = s.threads * s.deletes_per_thread();
  ++c.elements;
  if (head != want_head || tail != want_tail) {
    c.fail(fmt::format("head {} tail {}, every op done gives head {} tail {}", head, tail,
                       want_head, want_tail));
    return c;
  }
  std::map<std::uint64_t, std::uint64_t> next_seq;  // producer -> expected next seq
  for (std::uint64_t pos = tail; pos < head; ++pos) {
    ++c.elements;
    const Entry& e = l.slots[pos % s.cap()];
    const std::uint64_t producer = e.w[0] >> 32, seq = e.w[0] & 0xffffffffu;
    if (producer > s.threads || !entry_intact(e, e.w[0])) {
      c.fail(fmt::format("slot of position {}: torn entry or unknown producer {}", pos, producer));
      continue;
    }
    const auto it = next_seq.find(producer);
    if (it != next_seq.end() && seq != it->second)
      c.fail(
          fmt::format("position {}: producer {} seq {} after seq {} (FIFO order, loss or "
                      "duplicate)",
                      pos, producer, seq, it->second - 1));
    next_seq[producer] = seq + 1;
  }
  for (const auto& [producer, next] : next_seq) {
    const std::uint64_t last = producer == s.threads ? s.initial() : s.inserts_per_thread();
    if (next != last)
      c.fail(fmt::format("producer {}: live entries end at seq {}, its last insert is {}", producer,
                         next - 1, last - 1));
  }
  return c;
}

}  // namespace pmlab::bep::queue
