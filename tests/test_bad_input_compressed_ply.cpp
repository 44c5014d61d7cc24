// A compressed .ply (PlayCanvas layout) whose header counts lie.
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "bad_input_util.h"
#include "io/compressed_ply.h"
#include "io/model_file.h"
#include "test_util.h"

namespace splat {
namespace {

namespace fs = std::filesystem;

// Counts whose body size wraps past 2^64 to a few bytes the file has: the size check passed, and
// the reader asked for ~10^18 splats (an out-of-memory message blaming model.init_points).
TEST(BadInputCompressedPly, CountsWrappingPast2To64AreNamed) {
  const fs::path path = test::temp_dir("bad_cply_wrap") / "m.compressed.ply";
  write_compressed_ply(path.string(), test::model_in_range(0, 256, 3));  // 1 chunk, no sh
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), {});
  in.close();
  // A chunk row is 18 floats, a vertex row 4 uints, a chunk per 256 splats: 4168 bytes a chunk.
  const std::uint64_t chunks = UINT64_MAX / 4168 + 1, splats = 256 * chunks;
  // Mod 2^64 the body is then below the one chunk's 4168 bytes the file has.
  ASSERT_LT(chunks * 4168, 4168u);
  for (const auto& [from, to] :
       {std::pair<std::string, std::string>{"element chunk 1\n",
                                            "element chunk " + std::to_string(chunks) + "\n"},
        {"element vertex 256\n", "element vertex " + std::to_string(splats) + "\n"}}) {
    const std::size_t at = bytes.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    bytes.replace(at, from.size(), to);
  }
  test::write_text(path, bytes);
  test::expect_contains(test::error_of([&] { read_model(path.string()); }),
                        {path.string(), "element chunk", std::to_string(chunks), "whole file"});
}

}  // namespace
}  // namespace splat
