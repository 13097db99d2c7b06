// closest_name / edit_distance (pmlab/core/suggest.hpp): what "did you mean" suggests, and when
// it stays silent rather than guess.
#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "pmlab/core/suggest.hpp"

namespace pmlab::testing {
namespace {

TEST(Suggest, EditDistanceCountsASwapOfNeighboursAsOneEdit) {
  EXPECT_EQ(edit_distance("scheme", "scheme"), 0u);
  EXPECT_EQ(edit_distance("shceme", "scheme"), 1u);   // swap
  EXPECT_EQ(edit_distance("schme", "scheme"), 1u);    // deletion
  EXPECT_EQ(edit_distance("schemes", "scheme"), 1u);  // insertion
  EXPECT_EQ(edit_distance("lq", "lp"), 1u);           // substitution
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
  EXPECT_EQ(edit_distance("", "abc"), 3u);
  EXPECT_EQ(edit_distance("abc", ""), 3u);
  EXPECT_EQ(edit_distance("TMM", "tmm"), 0u);  // case is not a typo worth counting
  EXPECT_EQ(edit_distance("ca", "abc"), 3u);   // optimal string alignment, not full Damerau
}

TEST(Suggest, ClosestNameFindsTheTypo) {
  const std::vector<std::string> options{"help",    "scheme",   "n",    "bs",
                                         "threads", "checksum", "seed", "pool"};
  EXPECT_EQ(closest_name("shceme", options), "scheme");
  EXPECT_EQ(closest_name("thread", options), "threads");
  EXPECT_EQ(closest_name("Pool", options), "pool");
  // An abbreviation that only one name starts with.
  EXPECT_EQ(closest_name("check", options), "checksum");
  const std::vector<std::string_view> kernels{"tmm", "cholesky", "lu", "gauss", "conv2d"};
  EXPECT_EQ(closest_name("tmn", kernels), "tmm");
  EXPECT_EQ(closest_name("cholesk", kernels), "cholesky");
  EXPECT_EQ(closest_name("gaus", kernels), "gauss");
}

TEST(Suggest, TiesGoToTheEarlierCandidate) {
  const std::vector<std::string> schemes{"base", "lp", "ep-ii", "ep-jj", "wal-ii", "wal-jj"};
  EXPECT_EQ(closest_name("lq", schemes), "lp");
  EXPECT_EQ(closest_name("ep-ij", schemes), "ep-ii");  // 1 from ep-ii and from ep-jj
}

TEST(Suggest, SilentWhenNothingIsClose) {
  const std::vector<std::string> schemes{"base", "progress", "device", "native-typed"};
  EXPECT_EQ(closest_name("magic", schemes), "");
  EXPECT_EQ(closest_name("", schemes), "");
  EXPECT_EQ(closest_name("x", std::vector<std::string>{}), "");
  // A two-letter word allows one edit, not two.
  EXPECT_EQ(closest_name("qq", std::vector<std::string>{"lp"}), "");
  // A prefix shared by two names suggests neither.
  EXPECT_EQ(closest_name("wal", std::vector<std::string>{"wal-ii", "wal-jj"}), "");
  // A short prefix is not an abbreviation.
  EXPECT_EQ(closest_name("ch", std::vector<std::string>{"checksum"}), "");
}

TEST(Suggest, DidYouMeanIsAClauseOrNothing) {
  const std::vector<std::string> kernels{"tmm", "lu"};
  EXPECT_EQ(did_you_mean("tmn", kernels), "; did you mean tmm?");
  EXPECT_EQ(did_you_mean("fourier", kernels), "");
}

}  // namespace
}  // namespace pmlab::testing
