#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <iterator>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "core/crc32c.h"
#include "core/error.h"
#include "io/checkpoint.h"
#include "test_util.h"

namespace splat {
namespace {

using test::error_of;
using test::expect_contains;

namespace fs = std::filesystem;

Gaussians random_model(int degree, std::size_t n, std::mt19937& rng) {
  Gaussians g;
  g.sh_degree = degree;
  g.resize(n);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  g.for_each_group([&](const char*, std::vector<float>& v) {
    for (float& x : v) x = normal(rng);
  });
  return g;
}

// Every field non-trivial, including values only a bit-exact path keeps.
Checkpoint make_checkpoint(std::size_t n, int degree) {
  std::mt19937 rng(11);
  Checkpoint c;
  c.iteration = 123456789012LL;
  c.params = random_model(degree, n, rng);
  c.adam_m = random_model(degree, n, rng);
  c.adam_v = random_model(degree, n, rng);
  if (n > 0) {
    c.params.means[0] = -0.0f;
    c.adam_v.sh.back() = std::numeric_limits<float>::denorm_min();
    c.adam_m.raw_opacity[0] = std::numeric_limits<float>::quiet_NaN();  // moments may be anything
  }
  c.rng_state = {0, 1, std::numeric_limits<std::uint64_t>::max(), 0x9E3779B97F4A7C15ULL};
  for (std::int32_t i = 0; i < 9; ++i) c.view_order.push_back((i * 4) % 9);
  c.view_pos = 5;
  c.config_toml = std::string("[train]\niterations = 30000\nname = \"caf\xc3\xa9\"\n") + '\0' + "x";
  for (std::size_t i = 0; i < n; ++i) {
    c.adc_grad2d.push_back(std::uniform_real_distribution<float>(0, 1)(rng));
    c.adc_count.push_back(std::int32_t(i % 7));
    c.adc_grad2d_abs.push_back(std::uniform_real_distribution<float>(0, 2)(rng));
    c.filter3d.push_back(std::uniform_real_distribution<float>(0, 1e-4f)(rng));
  }
  // Three training images' appearance transforms and moments.
  for (std::size_t i = 0; i < 3 * 12; ++i) {
    c.appearance.push_back(std::normal_distribution<float>(0.0f, 1.0f)(rng));
    c.appearance_m.push_back(std::normal_distribution<float>(0.0f, 1e-3f)(rng));
    c.appearance_v.push_back(std::uniform_real_distribution<float>(0.0f, 1e-6f)(rng));
  }
  c.appearance_v[5] = std::numeric_limits<float>::denorm_min();
  // Their pose corrections, moments and step counts.
  for (std::size_t i = 0; i < 3 * 9; ++i) {
    c.pose.push_back(std::normal_distribution<float>(0.0f, 0.01f)(rng));
    c.pose_m.push_back(std::normal_distribution<float>(0.0f, 1e-4f)(rng));
    c.pose_v.push_back(std::uniform_real_distribution<float>(0.0f, 1e-8f)(rng));
  }
  c.pose_steps = {0, 7, 2147483647};
  c.train_images = {{"r_0", 800, 800, 612345}, {"caf\xc3\xa9", 1, 2, 0}, {"r_2", 7, 5, 1}};
  return c;
}

void expect_identical(const Checkpoint& a, const Checkpoint& b) {
  EXPECT_EQ(a.iteration, b.iteration);
  test::expect_bit_identical(a.params, b.params);
  test::expect_bit_identical(a.adam_m, b.adam_m);
  test::expect_bit_identical(a.adam_v, b.adam_v);
  EXPECT_EQ(a.rng_state, b.rng_state);
  EXPECT_EQ(a.view_order, b.view_order);
  EXPECT_EQ(a.view_pos, b.view_pos);
  EXPECT_EQ(a.config_toml, b.config_toml);
  EXPECT_EQ(a.adc_grad2d, b.adc_grad2d);
  EXPECT_EQ(a.adc_count, b.adc_count);
  EXPECT_EQ(a.adc_grad2d_abs, b.adc_grad2d_abs);
  EXPECT_EQ(a.run_id, b.run_id);
  EXPECT_EQ(a.filter3d, b.filter3d);
  EXPECT_EQ(a.appearance, b.appearance);
  EXPECT_EQ(a.appearance_m, b.appearance_m);
  EXPECT_EQ(a.appearance_v, b.appearance_v);
  EXPECT_EQ(a.train_images, b.train_images);
  EXPECT_EQ(a.pose, b.pose);
  EXPECT_EQ(a.pose_m, b.pose_m);
  EXPECT_EQ(a.pose_v, b.pose_v);
  EXPECT_EQ(a.pose_steps, b.pose_steps);
}

std::string file_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_bytes(const fs::path& p, const std::string& s) {
  std::ofstream(p, std::ios::binary | std::ios::trunc) << s;
}

// Byte offset of the u64 count of section `name` (after its length-prefixed name and u32 element
// type); the length prefix keeps "params.sh" from matching "params.sh_degree".
std::size_t section_count_offset(const std::string& bytes, const std::string& name) {
  std::string key(sizeof(std::uint32_t), '\0');
  const auto len = static_cast<std::uint32_t>(name.size());
  std::memcpy(key.data(), &len, sizeof len);
  key += name;
  const std::size_t at = bytes.find(key);
  EXPECT_NE(at, std::string::npos) << name;
  return at + key.size() + sizeof(std::uint32_t);
}

template <class T>
void poke(std::string& bytes, std::size_t offset, T v) {
  std::memcpy(bytes.data() + offset, &v, sizeof v);
}

class CheckpointFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = test::temp_dir(::testing::UnitTest::GetInstance()->current_test_info()->name());
    path_ = (dir_ / "run.ckpt").string();
    write_checkpoint(path_, make_checkpoint(37, 3));
    bytes_ = file_bytes(path_);
  }
  std::string read_error() {
    return error_of([&] { read_checkpoint(path_); });
  }
  fs::path dir_;
  std::string path_;
  std::string bytes_;
};

TEST_F(CheckpointFile, RoundTripIsBitExactForEveryField) {
  expect_identical(make_checkpoint(37, 3), read_checkpoint(path_));
  EXPECT_FALSE(fs::exists(path_ + ".tmp"));
  EXPECT_EQ(bytes_.substr(0, 8), "SPLATCKP");
}

TEST_F(CheckpointFile, EmptyStateRoundTrips) {
  Checkpoint c;
  c.params.sh_degree = c.adam_m.sh_degree = c.adam_v.sh_degree = 0;
  write_checkpoint(path_, c);
  expect_identical(c, read_checkpoint(path_));
}

TEST_F(CheckpointFile, EveryTruncationIsAnErrorNamingTheFile) {
  // Every cut inside the headers, then a sample through the float payloads.
  for (std::size_t cut = 0; cut < bytes_.size(); cut += cut < 400 ? 1 : 61) {
    write_bytes(path_, bytes_.substr(0, cut));
    SCOPED_TRACE("cut at " + std::to_string(cut));
    expect_contains(read_error(), {path_, "truncated"});
  }
}

// A file of an older version: c written now, cut where section `first_absent` begins and stamped
// `version`. It reads back as c.
void expect_older_version_reads(const std::string& path,
                                const Checkpoint& c,
                                std::uint32_t version,
                                const std::string& first_absent) {
  write_checkpoint(path, c);
  std::string bytes = file_bytes(path);
  bytes.resize(section_count_offset(bytes, first_absent) - sizeof(std::uint32_t) -
               first_absent.size() - sizeof(std::uint32_t));
  poke(bytes, 8, version);
  if (version >= 6) {  // checksummed: the CRC32C of every byte before it
    const std::uint32_t crc = crc32c(0, bytes.data(), bytes.size());
    bytes.append(reinterpret_cast<const char*>(&crc), sizeof crc);
  }
  write_bytes(path, bytes);
  expect_identical(c, read_checkpoint(path));
}

// A file of each older version, cut where its first missing section begins, reads as a full
// checkpoint without the sections that version lacks: version 1 ended at config_toml (no ADC
// statistics: a resume starts them fresh, as version 1 did), 3 at run_id (no 3D filter), 4 at
// filter3d (no appearance transforms), 5 at appearance_v with no checksum (no training images: a
// resume does not compare them; unchecked), 6 at the training images and its checksum (no
// absolute gradient statistic: a resume starts it fresh), 7 at adc_grad2d_abs (no pose
// corrections).
TEST_F(CheckpointFile, OlderVersionsReadWithoutTheirLaterSections) {
  struct Older {
    std::uint32_t version;
    const char* first_absent;
  };
  for (const Older o :
       {Older{1, "adc_grad2d"}, Older{3, "filter3d"}, Older{4, "appearance"},
        Older{5, "train_image_names"}, Older{6, "adc_grad2d_abs"}, Older{7, "pose"}}) {
    SCOPED_TRACE("version " + std::to_string(o.version));
    Checkpoint c = make_checkpoint(5, 1);
    if (o.version < 2) {
      c.adc_grad2d.clear();
      c.adc_count.clear();
    }
    if (o.version < 4) c.filter3d.clear();
    if (o.version < 5) {
      c.appearance.clear();
      c.appearance_m.clear();
      c.appearance_v.clear();
    }
    if (o.version < 6) c.train_images.clear();
    if (o.version < 7) c.adc_grad2d_abs.clear();
    if (o.version < 8) {
      c.pose.clear();
      c.pose_m.clear();
      c.pose_v.clear();
      c.pose_steps.clear();
    }
    expect_older_version_reads(path_, c, o.version, o.first_absent);
  }
}

// Corrections that are not whole 9-float entries, moments or step counts of another size, a
// negative count and a non-finite correction are refused on writing and on reading, naming the
// file and the section.
TEST_F(CheckpointFile, BadPoseIsNamed) {
  const std::string out = (dir_ / "bad.ckpt").string();
  Checkpoint c = make_checkpoint(5, 1);
  c.pose.pop_back();
  c.pose_m.pop_back();
  c.pose_v.pop_back();
  expect_contains(error_of([&] { write_checkpoint(out, c); }),
                  {out, "section pose", "26 floats", "9-float pose corrections"});
  c = make_checkpoint(5, 1);
  c.pose_m.resize(18);
  expect_contains(error_of([&] { write_checkpoint(out, c); }),
                  {out, "section pose_m", "18 floats"});
  c = make_checkpoint(5, 1);
  c.pose_steps.pop_back();
  expect_contains(error_of([&] { write_checkpoint(out, c); }),
                  {out, "section pose_steps", "2 step counts for 3 pose corrections"});
  c = make_checkpoint(5, 1);
  c.pose_steps[1] = -1;
  expect_contains(error_of([&] { write_checkpoint(out, c); }), {out, "section pose_steps", "-1"});
  c = make_checkpoint(5, 1);
  c.pose[4] = std::numeric_limits<float>::quiet_NaN();
  expect_contains(error_of([&] { write_checkpoint(out, c); }), {out, "section pose", "entry 4"});
  EXPECT_FALSE(fs::exists(out));
  // The same in a file: pose_steps cut to two counts.
  const std::size_t at = section_count_offset(bytes_, "pose_steps");
  poke<std::uint64_t>(bytes_, at, 2);
  poke<std::uint64_t>(bytes_, at + 8, 2 * sizeof(std::int32_t));
  bytes_.erase(at + 16 + 2 * sizeof(std::int32_t), sizeof(std::int32_t));
  write_bytes(path_, bytes_);
  expect_contains(read_error(), {path_, "section pose_steps", "2 step counts"});
}

// Transforms that are not whole 12-float matrices, moments of another size and a non-finite
// transform are refused on writing and on reading, naming the file and the section.
TEST_F(CheckpointFile, BadAppearanceIsNamed) {
  const std::string out = (dir_ / "bad.ckpt").string();
  Checkpoint c = make_checkpoint(5, 1);
  c.appearance.pop_back();
  c.appearance_m.pop_back();
  c.appearance_v.pop_back();
  expect_contains(error_of([&] { write_checkpoint(out, c); }),
                  {out, "section appearance", "35 floats"});
  c = make_checkpoint(5, 1);
  c.appearance_v.resize(24);
  expect_contains(error_of([&] { write_checkpoint(out, c); }),
                  {out, "section appearance_v", "24 floats"});
  c = make_checkpoint(5, 1);
  c.appearance[7] = std::numeric_limits<float>::infinity();
  expect_contains(error_of([&] { write_checkpoint(out, c); }), {out, "section appearance", "7"});
  EXPECT_FALSE(fs::exists(out));
  // The same in a file: appearance_m cut to 12 floats.
  const std::size_t at = section_count_offset(bytes_, "appearance_m");
  poke<std::uint64_t>(bytes_, at, 12);
  poke<std::uint64_t>(bytes_, at + 8, 12 * sizeof(float));
  std::string cut = bytes_.substr(0, at + 16 + 12 * sizeof(float));
  cut += bytes_.substr(at + 16 + 36 * sizeof(float));
  write_bytes(path_, cut);
  expect_contains(read_error(), {path_, "section appearance_m", "12 floats"});
}

TEST_F(CheckpointFile, BadFilter3dIsNamed) {
  Checkpoint c = make_checkpoint(5, 1);
  c.filter3d.pop_back();
  EXPECT_NE(error_of([&] { write_checkpoint(path_, c); }).find("filter3d"), std::string::npos);
  c = make_checkpoint(5, 1);
  c.filter3d[2] = -1.0f;
  EXPECT_NE(error_of([&] { write_checkpoint(path_, c); }).find("filter3d"), std::string::npos);
}

TEST_F(CheckpointFile, AdcStatisticsOfAnotherModelSizeAreNamed) {
  Checkpoint c = make_checkpoint(5, 1);
  c.adc_count.pop_back();
  c.adc_grad2d.pop_back();
  EXPECT_NE(error_of([&] { write_checkpoint(path_, c); }).find("adc_count"), std::string::npos);
  c = make_checkpoint(5, 1);
  c.adc_grad2d_abs.pop_back();
  expect_contains(error_of([&] { write_checkpoint(path_, c); }),
                  {path_, "section adc_grad2d_abs", "4 absolute gradient sums for 5 counts"});
  // The same in a file: one sum cut off.
  const std::size_t at = section_count_offset(bytes_, "adc_grad2d_abs");
  poke<std::uint64_t>(bytes_, at, 36);
  poke<std::uint64_t>(bytes_, at + 8, 36 * sizeof(float));
  bytes_.erase(at + 16 + 36 * sizeof(float), sizeof(float));
  write_bytes(path_, bytes_);
  expect_contains(read_error(), {path_, "section adc_grad2d_abs", "36 absolute gradient sums"});
}

TEST_F(CheckpointFile, WrongMagicIsNamed) {
  bytes_[0] = 'X';
  write_bytes(path_, bytes_);
  expect_contains(read_error(), {path_, "magic"});
}

TEST_F(CheckpointFile, CorruptedVersionIsNamed) {
  for (std::uint32_t v : {0u, 9u, 0xFFFFFFFFu}) {
    poke(bytes_, 8, v);
    write_bytes(path_, bytes_);
    expect_contains(read_error(), {path_, "version", std::to_string(v)});
  }
}

TEST_F(CheckpointFile, CorruptedSectionNameIsNamed) {
  bytes_[bytes_.find("adam_m.means") + 2] = '#';
  write_bytes(path_, bytes_);
  expect_contains(read_error(), {path_, "section adam_m.means", "ad#m_m.means"});
}

TEST_F(CheckpointFile, SizeMismatchIsNamed) {
  const std::size_t at = section_count_offset(bytes_, "params.means");
  poke<std::uint64_t>(bytes_, at, 37 * 3 + 1);  // count no longer matches the byte size
  write_bytes(path_, bytes_);
  expect_contains(read_error(), {path_, "section params.means", "size"});
}

TEST_F(CheckpointFile, HugeCountIsTruncationNotAllocation) {
  const std::size_t at = section_count_offset(bytes_, "params.sh");
  const std::uint64_t count = std::uint64_t(1) << 40;
  poke(bytes_, at, count);
  poke(bytes_, at + sizeof count, count * sizeof(float));
  write_bytes(path_, bytes_);
  expect_contains(read_error(), {path_, "section params.sh", "truncated"});
}

TEST_F(CheckpointFile, InconsistentShapesInTheFileAreNamed) {
  // adam_m claims degree 2 while its sh section holds degree-3 data.
  poke<std::int32_t>(bytes_, section_count_offset(bytes_, "adam_m.sh_degree") + 16, 2);
  write_bytes(path_, bytes_);
  expect_contains(read_error(), {path_, "section adam_m.sh"});
}

TEST_F(CheckpointFile, TrailingBytesAreAnError) {
  write_bytes(path_, bytes_ + "junk");
  expect_contains(read_error(), {path_, "4 unexpected bytes"});
}

TEST_F(CheckpointFile, MissingFileIsNamed) {
  const std::string absent = (dir_ / "absent.ckpt").string();
  expect_contains(error_of([&] { read_checkpoint(absent); }), {absent, "cannot open"});
}

TEST_F(CheckpointFile, InconsistentStateIsNotWritten) {
  const std::string out = (dir_ / "bad.ckpt").string();
  Checkpoint c = make_checkpoint(10, 1);
  c.adam_m.resize(9);
  expect_contains(error_of([&] { write_checkpoint(out, c); }), {out, "adam_m", "10"});

  c = make_checkpoint(10, 1);
  c.adam_v.sh_degree = 2;  // sizes now disagree with the degree
  expect_contains(error_of([&] { write_checkpoint(out, c); }), {out, "adam_v.sh"});

  c = make_checkpoint(10, 1);
  c.view_pos = 10;
  expect_contains(error_of([&] { write_checkpoint(out, c); }), {out, "view_pos"});
  EXPECT_FALSE(fs::exists(out));
  EXPECT_FALSE(fs::exists(out + ".tmp"));

  // The earlier good checkpoint is untouched by a failed overwrite.
  c.view_pos = 0;
  c.params.quats.pop_back();
  EXPECT_THROW(write_checkpoint(path_, c), Error);
  EXPECT_EQ(file_bytes(path_), bytes_);
}

}  // namespace
}  // namespace splat
