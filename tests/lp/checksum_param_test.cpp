// LP's checksum kind as a run parameter: stored by name, LP's default when not given, every kind
// round-trips, and an unknown name is refused with the known ones listed.
#include <gtest/gtest.h>

#include <string>

#include "pmlab/core/error.hpp"
#include "pmlab/lp/checksum_param.hpp"

namespace pmlab::lp {
namespace {

TEST(ChecksumParam, DefaultsToModularAndEveryKindRoundTripsByName) {
  EXPECT_EQ(checksum_of(pool::RunParams{}), ChecksumKind::kModular);
  for (const ChecksumKind k : kAllChecksumKinds) {
    pool::RunParams p;
    set_checksum(p, k);
    EXPECT_EQ(p.checksum, to_string(k));
    EXPECT_EQ(checksum_of(p), k);
  }
}

TEST(ChecksumParam, AnUnknownNameIsRefusedNamingTheKnownOnes) {
  pool::RunParams p;
  p.checksum = "md5";
  try {
    (void)checksum_of(p);
    ADD_FAILURE() << "md5 was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("crc32c"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace pmlab::lp
