// The cache model's fast set lookup (tag hashes) and LRU victim (tournament) against plain scans.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "../../src/sim/cache.hpp"
#include "../../src/sim/replacement.hpp"
#include "pmlab/sim/tag_hash.hpp"

namespace pmlab::sim {
namespace {

std::size_t linear_find(const std::vector<std::uint64_t>& tags, std::size_t base, std::size_t ways,
                        std::uint64_t line) {
  for (std::size_t s = base; s < base + ways; ++s)
    if (tags[s] == line) return s;
  return ~std::size_t{0};
}

// Lines of one set whose 7-bit hashes are all equal: every way is a candidate.
std::vector<std::uint64_t> colliding_lines(std::uint8_t hash, std::size_t count) {
  std::vector<std::uint64_t> out;
  for (std::uint64_t line = 1; out.size() < count; ++line)
    if (detail::tag_hash(line) == hash) out.push_back(line);
  return out;
}

TEST(TagHashLookup, FindsEveryWayAndRejectsOthersEvenWhenAllHashesCollide) {
  for (std::size_t ways : {8u, 16u, 32u}) {
    const std::vector<std::uint64_t> lines = colliding_lines(0x2a, ways + 1);
    std::vector<std::uint64_t> tags(ways);
    std::vector<std::uint8_t> hashes(ways);
    for (std::size_t w = 0; w < ways; ++w) {
      tags[w] = lines[w];
      hashes[w] = detail::tag_hash(lines[w]);
    }
    for (std::size_t w = 0; w < ways; ++w)
      EXPECT_EQ(detail::find_hashed(tags.data(), hashes.data(), 0, ways, lines[w]), w) << ways;
    EXPECT_EQ(detail::find_hashed(tags.data(), hashes.data(), 0, ways, lines[ways]),
              ~std::size_t{0});
  }
}

TEST(TagHashLookup, InvalidWaysNeverMatchAndNoHashEqualsTheirMark) {
  for (std::uint64_t line = 0; line < 100000; ++line)
    ASSERT_NE(detail::tag_hash(line), detail::kNoHash);
  std::vector<std::uint64_t> tags(8, ~std::uint64_t{0});
  std::vector<std::uint8_t> hashes(8, detail::kNoHash);
  EXPECT_EQ(detail::find_hashed(tags.data(), hashes.data(), 0, 8, ~std::uint64_t{0}),
            ~std::size_t{0});
}

// Property: on random sets (with forced collisions, empty ways and several sets) the hashed
// lookup returns exactly what a scan of the tags returns.
TEST(TagHashLookup, EqualsALinearScanOnRandomSets) {
  std::mt19937_64 rng(7);
  for (std::size_t ways : {8u, 16u}) {
    const std::size_t sets = 4;
    for (int trial = 0; trial < 2000; ++trial) {
      std::vector<std::uint64_t> tags(sets * ways, ~std::uint64_t{0});
      std::vector<std::uint8_t> hashes(sets * ways, detail::kNoHash);
      const std::vector<std::uint64_t> pool = colliding_lines(rng() % 128, 4);
      for (std::size_t s = 0; s < tags.size(); ++s) {
        if (rng() % 4 == 0) continue;  // an invalid way
        const std::uint64_t line = rng() % 3 == 0 ? pool[rng() % pool.size()] : rng() % 512;
        if (linear_find(tags, s / ways * ways, ways, line) != ~std::size_t{0}) continue;
        tags[s] = line;
        hashes[s] = detail::tag_hash(line);
      }
      for (int q = 0; q < 20; ++q) {
        const std::uint64_t line = q % 2 == 0 ? pool[rng() % pool.size()] : rng() % 512;
        const std::size_t base = (rng() % sets) * ways;
        ASSERT_EQ(detail::find_hashed(tags.data(), hashes.data(), base, ways, line),
                  linear_find(tags, base, ways, line));
      }
    }
  }
}

// A cache of 8 and one of 12 ways (the latter keeps the plain scan) agree with a reference set
// model on a random stream of fills, invalidations and lookups.
TEST(TagHashLookup, CacheFindAgreesWithItsTagsUnderFillsAndInvalidations) {
  for (std::uint32_t ways : {8u, 12u, 16u}) {
    LevelParams p;
    p.name = "L";
    p.ways = ways;
    p.size_bytes = std::uint64_t{ways} * 4 * 64;  // 4 sets
    Cache c(p, false, 1);
    std::mt19937_64 rng(ways);
    for (int step = 0; step < 20000; ++step) {
      const std::uint64_t line = rng() % 256;
      const std::size_t found = c.find(line);
      std::size_t scan = kNoSlot;
      const std::size_t base = static_cast<std::size_t>(line % 4) * ways;
      for (std::size_t s = base; s < base + ways; ++s)
        if (c.tag(s) == line) scan = s;
      ASSERT_EQ(found, scan);
      if (found != kNoSlot) {
        if (rng() % 3 == 0) c.invalidate(found);
      } else {
        c.fill(c.victim_for(line), line, 0);
      }
    }
    c.clear();
    EXPECT_EQ(c.find(0), kNoSlot);
  }
}

// Property: the tournament picks the first way with the oldest stamp, ties included.
TEST(LruVictim, TournamentEqualsTheFirstOldestWay) {
  std::mt19937_64 rng(3);
  for (std::uint32_t ways : {8u, 16u}) {
    LruPolicy lru(ways, ways);
    for (int trial = 0; trial < 5000; ++trial) {
      lru.reset();
      for (std::uint32_t w = 0; w < ways; ++w)
        if (rng() % 4 != 0) lru.on_fill(w);  // the others stay 0 (invalid): ties
      for (int h = 0; h < 10; ++h) lru.on_hit(rng() % ways);
      const std::uint64_t* stamp = lru.stamp_data();
      std::size_t first = 0;
      for (std::size_t w = 1; w < ways; ++w)
        if (stamp[w] < stamp[first]) first = w;
      ASSERT_EQ(lru.victim(0), first);
    }
  }
}

}  // namespace
}  // namespace pmlab::sim
