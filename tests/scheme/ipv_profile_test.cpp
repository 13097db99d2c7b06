// Seed 002's rule profiler: the paper's Fig. 9 and Fig. 10 loops classify as the paper says, and
// every catalog kernel's first iteration gives the rule its IPV rows rely on ("Table 2 (pmlab)"
// in docs/seed002.md).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "../support/small_run.hpp"
#include "pmlab/run/catalog.hpp"
#include "pmlab/scheme/ipv_profile.hpp"

namespace pmlab::scheme_test {
namespace {

using scheme::IpvRule;

// Runs `iteration` once on the profiler over u (n doubles) and returns the rule of u.
template <class Fn>
IpvRule rule_of(std::size_t n, Fn&& iteration) {
  std::vector<double> u(n, 1.0);
  scheme::IpvProfileBackend be(u.data(), n, 1);
  try {
    iteration(be, u.data());
    mem::outer_step_done(be);
  } catch (const scheme::IpvProfileDone&) {
  }
  return be.classify({{"u", 0, n}}).front().rule;
}

TEST(IpvProfile, ThePapersLoopsGetThePapersRules) {
  constexpr std::size_t n = 16;
  // Basic rule: every element read, then written once.
  EXPECT_EQ(rule_of(n,
                    [](auto& be, double* u) {
                      be.parallel_for(
                          0, n, [&](std::size_t i) { be.store(u + i, be.load(u + i) + 1.0); });
                    }),
            IpvRule::kBasic);
  // Fig. 9: u_new[i] = u_old[i] + e; later u_new[i] = u_new[i] + f (a read after the update).
  EXPECT_EQ(rule_of(n,
                    [](auto& be, double* u) {
                      be.parallel_for(
                          0, n, [&](std::size_t i) { be.store(u + i, be.load(u + i) + 1.0); });
                      be.parallel_for(
                          0, n, [&](std::size_t i) { be.store(u + i, be.load(u + i) * 2.0); });
                    }),
            IpvRule::kPostUpdate);
  // Fig. 10: loop 1 updates [1, n - 1), loop 2 all of [0, n): non-uniform.
  EXPECT_EQ(rule_of(n,
                    [](auto& be, double* u) {
                      be.parallel_for(
                          1, n - 1, [&](std::size_t i) { be.store(u + i, be.load(u + i) + 1.0); });
                      be.parallel_for(
                          0, n, [&](std::size_t i) { be.store(u + i, be.load(u + i) * 2.0); });
                    }),
            IpvRule::kNonUniform);
  // An element never written in the iteration (a shrinking trailing matrix): non-uniform.
  EXPECT_EQ(rule_of(n,
                    [](auto& be, double* u) {
                      be.parallel_for(1, n, [&](std::size_t i) { be.store(u + i, 0.0); });
                    }),
            IpvRule::kNonUniform);
  EXPECT_EQ(rule_of(n, [](auto& be, double* u) { (void)be.load(u); }), IpvRule::kNotUpdated);
  // A uniform declaration of a non-uniform object is the one mismatch that corrupts a run.
  scheme::IpvObjectProfile o{
      .name = "u", .rule = IpvRule::kNonUniform, .declared = scheme::IpvObject::Declared::kUniform};
  EXPECT_FALSE(o.matches_declaration());
  o.rule = IpvRule::kPostUpdate;
  EXPECT_TRUE(o.matches_declaration());
  // Only the first outer iteration counts: a second, different one is not recorded.
  EXPECT_EQ(rule_of(n,
                    [](auto& be, double* u) {
                      be.parallel_for(0, n, [&](std::size_t i) { be.store(u + i, 2.0); });
                      mem::outer_step_done(be);
                      be.parallel_for(1, n,
                                      [&](std::size_t i) { be.store(u + i, be.load(u + i)); });
                    }),
            IpvRule::kBasic);
}

namespace fs = std::filesystem;

// Each catalog kernel's objects and their rules, profiled on a small run; every rule must agree
// with what the kernel's ipv rows declare.
std::map<std::string, std::string> profile(const std::string& kernel, bool mg_like = false) {
  const auto& k = run::find_kernel(kernel);
  auto p = test::small_run(k, "base");
  if (mg_like) p.set_kernel_param("mg-like", 1);
  k.validate(p);
  const fs::path dir = fs::temp_directory_path() / ("pmlab-ipvprof-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::map<std::string, std::string> out;
  {
    auto pool = pool::Pool::create((dir / "p").string(), p, k.arrays(p), k.init);
    for (const auto& o : k.profile_ipv(pool)) {
      EXPECT_TRUE(o.matches_declaration()) << kernel << " " << o.name << ": " << to_string(o.rule);
      out[o.name] = std::string(to_string(o.rule));
    }
  }
  fs::remove_all(dir);
  return out;
}

using Rules = std::map<std::string, std::string>;

// The seed's Table 2 for pmlab's kernels. The kernels with ipv rows need a uniform target (or,
// jacobi --mg-like, declare the non-uniform fallback: IpvUpdates::kNonUniform); the tiled
// factorizations have no ipv row because their trailing matrix shrinks (MG's case).
TEST(IpvRules, MatchDeclared) {
  EXPECT_EQ(profile("tmm"), (Rules{{"C", "basic"}}));
  EXPECT_EQ(
      profile("cg"),
      (Rules{{"z", "post-update"}, {"r", "post-update"}, {"p", "basic"}, {"scalars", "basic"}}));
  EXPECT_EQ(profile("jacobi"), (Rules{{"u", "basic"}, {"scalars", "basic"}}));
  EXPECT_EQ(profile("jacobi", true).at("u"), "non-uniform");
  for (const char* k : {"gauss", "lu", "cholesky"})
    EXPECT_EQ(profile(k), (Rules{{"output", "non-uniform"}})) << k;
}

}  // namespace
}  // namespace pmlab::scheme_test
