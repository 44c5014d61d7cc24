// The training report page: its encoders, its pictures and plots, and the page as a whole
// (self-contained, escaped, well-formed, and complete with missing data).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/base64.h"

namespace splat {
namespace {

// ---- base64 -------------------------------------------------------------------------------------

TEST(Base64, Rfc4648Vectors) {
  const std::pair<std::string, std::string> cases[] = {{"", ""},
                                                       {"f", "Zg=="},
                                                       {"fo", "Zm8="},
                                                       {"foo", "Zm9v"},
                                                       {"foob", "Zm9vYg=="},
                                                       {"fooba", "Zm9vYmE="},
                                                       {"foobar", "Zm9vYmFy"}};
  for (const auto& [in, out] : cases) {
    EXPECT_EQ(base64_encode(reinterpret_cast<const std::uint8_t*>(in.data()), in.size()), out)
        << in;
  }
}

TEST(Base64, AllByteValuesUseTheStandardAlphabet) {
  std::vector<std::uint8_t> bytes = {0xfb, 0xff, 0xbf, 0x00, 0x10, 0x83};
  EXPECT_EQ(base64_encode(bytes), "+/+/ABCD");
}

}  // namespace
}  // namespace splat
