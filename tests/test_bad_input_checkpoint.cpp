// Checkpoints a resume cannot trust: damaged bytes (the CRC32C they carry from version 6 on) and
// the training images of another dataset (the identity they carry). The command-line cases, which
// train, are BadInputResumeSlow.* in test_bad_input_cli.cpp.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "core/crc32c.h"
#include "core/error.h"
#include "io/checkpoint.h"
#include "test_util.h"

namespace splat {
namespace {

namespace fs = std::filesystem;
using test::error_of;
using test::expect_contains;

TEST(BadInputChecksum, Crc32cOfTheStandardCheckString) {
  // The check value of CRC-32C (the Castagnoli polynomial, reflected) for "123456789".
  EXPECT_EQ(crc32c(0, "123456789", 9), 0xE3069283u);
  EXPECT_EQ(crc32c(0, "", 0), 0u);
  // Continued over pieces of every length (the 8-byte blocks and the tail) it is the same.
  const std::string text = "a checkpoint is checksummed as it is written, section by section";
  const std::uint32_t whole = crc32c(0, text.data(), text.size());
  for (std::size_t cut = 0; cut <= text.size(); ++cut)
    EXPECT_EQ(crc32c(crc32c(0, text.data(), cut), text.data() + cut, text.size() - cut), whole);
}

Checkpoint small_checkpoint() {
  Checkpoint c;
  c.iteration = 10;
  c.params.sh_degree = c.adam_m.sh_degree = c.adam_v.sh_degree = 0;
  c.params.resize(2);
  c.params.quats = {1, 0, 0, 0, 1, 0, 0, 0};
  c.adam_m = c.adam_v = c.params;
  c.rng_state = {1, 2};
  c.view_order = {1, 0};
  c.view_pos = 1;
  c.config_toml = "[train]\n";
  c.run_id = "0123456789abcdef";
  c.train_images = {{"r_0", 16, 12, 345}, {"r_1", 16, 12, 351}};
  return c;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// A new file each time: ext4 writes back a file truncated and rewritten on close, which for
// thousands of rewrites is a minute of waiting on the disk.
void write_bytes(const std::string& path, const std::string& bytes) {
  fs::remove(path);
  std::ofstream(path, std::ios::binary) << bytes;
}

// A flipped bit leaves most sections well-formed (a float's bits are all valid): without a
// checksum it would resume a damaged model. Every bit of a whole file, flipped in turn.
TEST(BadInputChecksum, EveryFlippedBitIsRefusedNamingTheChecksum) {
  const std::string path = (test::temp_dir("bad_ckpt_bit_flips") / "c.ckpt").string();
  write_checkpoint(path, small_checkpoint());
  const std::string good = slurp(path);
  ASSERT_NO_THROW(read_checkpoint(path));
  constexpr std::size_t kPreamble = 12;  // magic and version: named as such ("magic", "version")
  for (std::size_t byte = 0; byte < good.size(); ++byte)
    for (int bit = 0; bit < 8; ++bit) {
      std::string bad = good;
      bad[byte] = char(bad[byte] ^ (1 << bit));
      write_bytes(path, bad);
      const std::string msg = error_of([&] { read_checkpoint(path); });
      SCOPED_TRACE("byte " + std::to_string(byte) + " bit " + std::to_string(bit));
      expect_contains(msg, {path});
      if (byte >= kPreamble) expect_contains(msg, {"checksum", "damaged"});
      if (HasFailure()) return;  // one case tells it all
    }
}

// The damage is named first, then what it broke, so that a truncated copy says so.
TEST(BadInputChecksum, DamageNamesTheChecksumAndWhatItBroke) {
  const std::string path = (test::temp_dir("bad_ckpt_damage") / "c.ckpt").string();
  write_checkpoint(path, small_checkpoint());
  const std::string good = slurp(path);
  write_bytes(path, good.substr(0, good.size() - 100));
  expect_contains(error_of([&] { read_checkpoint(path); }), {path, "checksum", "truncated"});
  std::string renamed = good;
  renamed[renamed.find("view_pos")] = 'V';
  write_bytes(path, renamed);
  expect_contains(error_of([&] { read_checkpoint(path); }),
                  {path, "checksum", "section view_pos", "found section 'View_pos'"});
}

// ---- the dataset's identity --------------------------------------------------------------------

TEST(BadInputCheckpointImages, SavedAndCompared) {
  const std::string path = (test::temp_dir("bad_ckpt_images") / "c.ckpt").string();
  write_checkpoint(path, small_checkpoint());
  EXPECT_EQ(read_checkpoint(path).train_images, small_checkpoint().train_images);
  const std::vector<TrainImage> saved = small_checkpoint().train_images;
  EXPECT_NO_THROW(check_same_images(saved, saved));
  EXPECT_NO_THROW(check_same_images({}, saved));  // a checkpoint before version 6
  // A file size that could not be stat'ed (0) is not compared.
  std::vector<TrainImage> here = saved;
  here[1].file_bytes = 0;
  EXPECT_NO_THROW(check_same_images(saved, here));
}

TEST(BadInputCheckpointImages, TheFirstDifferingImageIsNamed) {
  const std::vector<TrainImage> saved = small_checkpoint().train_images;
  std::vector<TrainImage> here = saved;
  here[1].file_bytes = 999;  // another scene with the same names and sizes
  expect_contains(error_of([&] { check_same_images(saved, here); }),
                  {"training image 2 of 2", "r_1 (16x12, 999 bytes) here",
                   "r_1 (16x12, 351 bytes) in the checkpoint", "file size differs"});
  here = saved;
  here[0].width = 8;
  here[0].height = 6;
  expect_contains(error_of([&] { check_same_images(saved, here); }),
                  {"training image 1 of 2", "r_0 (8x6", "r_0 (16x12", "size in pixels differs",
                   "data.downscale"});
  here = saved;
  here[0].name = "other";
  expect_contains(error_of([&] { check_same_images(saved, here); }),
                  {"training image 1 of 2", "other (16x12", "r_0 (16x12", "name differs"});
  here = saved;
  here.pop_back();
  expect_contains(error_of([&] { check_same_images(saved, here); }),
                  {"2 training images", "this dataset has 1"});
}

TEST(BadInputCheckpointImages, BadImageListsAreRefused) {
  const std::string path = (test::temp_dir("bad_ckpt_image_list") / "c.ckpt").string();
  Checkpoint c = small_checkpoint();
  c.train_images[1].height = 0;
  expect_contains(error_of([&] { write_checkpoint(path, c); }),
                  {path, "section train_image_sizes", "image 1", "16x0"});
  c = small_checkpoint();
  c.train_images[0].name = std::string("r\0x", 3);
  expect_contains(error_of([&] { write_checkpoint(path, c); }),
                  {path, "section train_image_names", "NUL"});
  EXPECT_FALSE(fs::exists(path));
}

}  // namespace
}  // namespace splat
