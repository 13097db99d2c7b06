// Example: a blocked prefix sum protected with lp::Loop, in two phases (each block's own sums,
// then the totals of the blocks before it added). The unprotected loop and the protected one are
// both here, between markers: scripts/check-examples counts the lines protection adds
// (docs/protect-your-own-loop.md) and compares the two results bit for bit.
//
//   prefix_sum POOL [--n N] [--bs B]      (threads: OMP_NUM_THREADS)
#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <string>
#include <vector>

#include <pmlab/core/error.hpp>
#include <pmlab/lp/loop.hpp>

namespace {

// [unprotected]
std::vector<double> prefix_sum(const std::vector<double>& x, std::uint64_t bs) {
  const std::uint64_t n = x.size(), blocks = (n + bs - 1) / bs;
  std::vector<double> s(n), z(n);
  for (std::uint64_t k = 0; k < blocks; ++k) {  // each block's own prefix sums
    double acc = 0;
    for (std::uint64_t i = k * bs; i < std::min(n, (k + 1) * bs); ++i) s[i] = acc += x[i];
  }
  for (std::uint64_t k = 0; k < blocks; ++k) {  // plus the totals of the blocks before it
    double offset = 0;
    for (std::uint64_t j = 0; j < k; ++j) offset += s[(j + 1) * bs - 1];
    for (std::uint64_t i = k * bs; i < std::min(n, (k + 1) * bs); ++i) z[i] = s[i] + offset;
  }
  return z;
}
// [end]

// [protected]
std::vector<double> prefix_sum(const char* path, const std::vector<double>& x, std::uint64_t bs,
                               pmlab::lp::LoopReport* report) {
  const std::uint64_t n = x.size();
  pmlab::lp::Loop loop(path, std::array{n, bs}, {{"s", n}, {"z", n}},
                       {.phases = 2, .outputs = {"s", "z"}, .chunk = bs});
  std::span<double> s(loop.array("s"), n), z(loop.array("z"), n);
  *report = loop.run([&](std::uint64_t phase, std::uint64_t k) {
    if (phase == 0) {  // each block's own prefix sums
      double acc = 0;
      for (std::uint64_t i = k * bs; i < std::min(n, (k + 1) * bs); ++i) s[i] = acc += x[i];
    } else {  // plus the totals of the blocks before it
      double offset = 0;
      for (std::uint64_t j = 0; j < k; ++j) offset += s[(j + 1) * bs - 1];
      for (std::uint64_t i = k * bs; i < std::min(n, (k + 1) * bs); ++i) z[i] = s[i] + offset;
    }
  });
  return {z.begin(), z.end()};
}
// [end]

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s POOL [--n N] [--bs B]\n", argv[0]);
    return 2;
  }
  std::uint64_t n = 1 << 20, bs = 4096;
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string opt = argv[i];
    char* end = nullptr;
    const std::uint64_t v = std::strtoull(argv[i + 1], &end, 10);
    if (*end != '\0' || v == 0) {
      std::fprintf(stderr, "prefix_sum: %s needs a positive integer, got '%s'\n", opt.c_str(),
                   argv[i + 1]);
      return 2;
    }
    if (opt == "--n")
      n = v;
    else if (opt == "--bs")
      bs = v;
    else {
      std::fprintf(stderr, "prefix_sum: unknown option %s\n", opt.c_str());
      return 2;
    }
  }
  // The input: regenerated identically by every run, so it need not live in the pool.
  std::vector<double> x(n);
  for (std::uint64_t i = 0; i < n; ++i) x[i] = static_cast<double>(i % 7) - 2.5;
  try {
    pmlab::lp::LoopReport r;
    const std::vector<double> got = prefix_sum(argv[1], x, bs, &r);
    std::printf("prefix_sum n=%llu bs=%llu: persistence %s\n", static_cast<unsigned long long>(n),
                static_cast<unsigned long long>(bs), r.persistence.c_str());
    if (r.already_done) std::printf("  the pool holds a completed run (already complete)\n");
    if (r.resumed)
      std::printf(
          "  recovered: %llu regions validated, %llu inconsistent, %llu never written, %llu "
          "recomputed; resumed at phase %llu\n",
          static_cast<unsigned long long>(r.recovery.regions_validated),
          static_cast<unsigned long long>(r.recovery.regions_inconsistent),
          static_cast<unsigned long long>(r.recovery.regions_unwritten),
          static_cast<unsigned long long>(r.recovery.regions_recomputed),
          static_cast<unsigned long long>(r.resume_phase));
    const std::vector<double> want = prefix_sum(x, bs);
    std::uint64_t bad = 0;
    for (std::size_t i = 0; i < want.size(); ++i)
      bad += std::bit_cast<std::uint64_t>(got[i]) != std::bit_cast<std::uint64_t>(want[i]);
    std::printf("  verify: %s (%llu of %zu values differ from the unprotected loop)\n",
                bad == 0 ? "OK" : "FAILED", static_cast<unsigned long long>(bad), want.size());
    return bad == 0 ? 0 : 1;
  } catch (const pmlab::Error& e) {
    std::fprintf(stderr, "prefix_sum: %s\n", e.what());
    return e.code() == pmlab::ErrorCode::kInvalidArgument ? 2 : 3;
  }
}
