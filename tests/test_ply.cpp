#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
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

#include "core/error.h"
#include "io/ply.h"
#include "test_util.h"

namespace splat {
namespace {

using test::error_of;
using test::expect_contains;

namespace fs = std::filesystem;

// Values that only a bit-exact path preserves: negative zero, subnormals, extremes.
Gaussians random_model(int degree, std::size_t n, unsigned seed) {
  Gaussians g;
  g.sh_degree = degree;
  g.resize(n);
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  const float specials[] = {-0.0f, std::numeric_limits<float>::denorm_min(),
                            std::numeric_limits<float>::max(), -1e-30f};
  std::size_t count = 0;
  g.for_each_group([&](const char*, std::vector<float>& v) {
    for (float& x : v) x = (++count % 97 == 0) ? specials[count % 4] : normal(rng);
  });
  return g;
}

std::string file_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_text(const fs::path& p, const std::string& s) {
  std::ofstream(p, std::ios::binary) << s;
}

std::size_t body_start(const std::string& bytes) {
  const std::size_t at = bytes.find("end_header\n");
  EXPECT_NE(at, std::string::npos);
  return at + std::strlen("end_header\n");
}

std::vector<float> body_floats(const fs::path& p) {
  const std::string bytes = file_bytes(p);
  const std::size_t start = body_start(bytes);
  std::vector<float> out((bytes.size() - start) / sizeof(float));
  std::memcpy(out.data(), bytes.data() + start, out.size() * sizeof(float));
  return out;
}

// The standard names, spelled out independently of the implementation.
std::vector<std::string> standard_names(int degree) {
  std::vector<std::string> n = {"x", "y", "z", "nx", "ny", "nz", "f_dc_0", "f_dc_1", "f_dc_2"};
  for (int i = 0; i < 3 * (sh_coeffs(degree) - 1); ++i) n.push_back("f_rest_" + std::to_string(i));
  for (const char* s :
       {"opacity", "scale_0", "scale_1", "scale_2", "rot_0", "rot_1", "rot_2", "rot_3"})
    n.push_back(s);
  return n;
}

// Index of a property in the standard degree-3 row.
std::size_t column(const std::string& name) {
  const auto names = standard_names(3);
  return std::find(names.begin(), names.end(), name) - names.begin();
}

// A minimal valid degree-0 ascii header with the given vertex count, minus one property.
std::string ascii_header(std::size_t n, const std::string& without = "") {
  std::string h = "ply\nformat ascii 1.0\nelement vertex " + std::to_string(n) + "\n";
  for (const auto& name : standard_names(0))
    if (name != without) h += "property float " + name + "\n";
  return h + "end_header\n";
}

TEST(Ply, RoundTripIsBitExactForEveryDegree) {
  const fs::path dir = test::temp_dir("ply_round_trip");
  for (int degree = 0; degree <= 3; ++degree) {
    for (std::size_t n : {std::size_t(0), std::size_t(57)}) {
      const Gaussians g = random_model(degree, n, 7 + degree);
      const std::string path = (dir / ("m" + std::to_string(degree) + ".ply")).string();
      write_ply(path, g);
      test::expect_bit_identical(g, read_ply(path));
      EXPECT_FALSE(fs::exists(path + ".tmp"));
    }
  }
}

TEST(Ply, HeaderListsExactlyTheStandardFieldsInOrder) {
  const fs::path path = test::temp_dir("ply_header") / "m.ply";
  const std::size_t n = 5;
  write_ply(path.string(), random_model(3, n, 1));
  const std::string bytes = file_bytes(path);
  const std::size_t start = body_start(bytes);
  std::vector<std::string> lines;
  for (std::size_t pos = 0; pos < start;) {
    const std::size_t nl = bytes.find('\n', pos);
    lines.push_back(bytes.substr(pos, nl - pos));
    pos = nl + 1;
  }
  const auto names = standard_names(3);
  ASSERT_EQ(names.size(), 62u);
  ASSERT_EQ(lines.size(), 3 + names.size() + 1);
  EXPECT_EQ(lines[0], "ply");
  EXPECT_EQ(lines[1], "format binary_little_endian 1.0");
  EXPECT_EQ(lines[2], "element vertex 5");
  for (std::size_t i = 0; i < names.size(); ++i)
    EXPECT_EQ(lines[3 + i], "property float " + names[i]);
  EXPECT_EQ(lines.back(), "end_header");
  EXPECT_EQ(bytes.size() - start, n * names.size() * sizeof(float));
}

TEST(Ply, BodyPinsChannelMajorRestAndEveryColumn) {
  Gaussians g;
  g.sh_degree = 3;
  g.resize(2);
  const int K = g.K();
  for (int i = 0; i < 2; ++i) {
    for (int k = 0; k < K; ++k)
      for (int c = 0; c < 3; ++c) g.sh[(i * K + k) * 3 + c] = 1000.0f * i + 100.0f * c + k;
    for (int j = 0; j < 3; ++j) g.means[i * 3 + j] = 10.0f * i + j + 0.5f;
    for (int j = 0; j < 3; ++j) g.log_scales[i * 3 + j] = -(10.0f * i + j + 1);
    for (int j = 0; j < 4; ++j) g.quats[i * 4 + j] = 20.0f * i + j + 0.25f;
    g.raw_opacity[i] = 7.0f + i;
  }
  const fs::path path = test::temp_dir("ply_layout") / "m.ply";
  write_ply(path.string(), g);
  const std::vector<float> body = body_floats(path);
  ASSERT_EQ(body.size(), 2u * 62);
  for (int i = 0; i < 2; ++i) {
    const float* row = body.data() + i * 62;
    EXPECT_EQ(row[0], 10.0f * i + 0.5f);
    EXPECT_EQ(row[2], 10.0f * i + 2.5f);
    EXPECT_EQ(row[3], 0.0f);
    EXPECT_EQ(row[5], 0.0f);
    for (int c = 0; c < 3; ++c) EXPECT_EQ(row[6 + c], 1000.0f * i + 100.0f * c);
    // f_rest_{c*15 + (k-1)} = sh[i, k, c]: all of R's coefficients, then G's, then B's.
    for (int c = 0; c < 3; ++c)
      for (int k = 1; k < K; ++k)
        EXPECT_EQ(row[9 + c * 15 + (k - 1)], 1000.0f * i + 100.0f * c + k)
            << "c=" << c << " k=" << k;
    EXPECT_EQ(row[54], 7.0f + i);
    for (int j = 0; j < 3; ++j) EXPECT_EQ(row[55 + j], -(10.0f * i + j + 1));
    for (int j = 0; j < 4; ++j) EXPECT_EQ(row[58 + j], 20.0f * i + j + 0.25f);
  }
}

TEST(Ply, ReadsHandWrittenAsciiInAnyOrderWithExtras) {
  const fs::path path = test::temp_dir("ply_ascii") / "hand.ply";
  write_text(path,
             "ply\r\nformat ascii 1.0\r\ncomment written by hand\r\n"
             "element vertex 2\r\n"
             "property double opacity\r\nproperty float rot_0\r\nproperty float rot_1\r\n"
             "property float rot_2\r\nproperty float rot_3\r\nproperty uchar red\r\n"
             "property float x\r\nproperty float y\r\nproperty float z\r\n"
             "property float scale_0\r\nproperty float scale_1\r\nproperty float scale_2\r\n"
             "property float f_dc_2\r\nproperty float f_dc_1\r\nproperty float f_dc_0\r\n"
             "element face 1\r\nproperty list uchar int vertex_indices\r\n"
             "end_header\r\n"
             "0.5 1 0 0 0 255 1.5 -2 3e2 -1 -2 -3 0.3 0.2 0.1\r\n"
             "\r\n"
             "-0.25 0.5 0.5 -0.5 0.5 7 0 0 0 0 0 0 +1 2 3\r\n"
             "3 0 1 1\r\n");
  const Gaussians g = read_ply(path.string());
  EXPECT_EQ(g.sh_degree, 0);
  ASSERT_EQ(g.size(), 2u);
  EXPECT_EQ(g.raw_opacity, (std::vector<float>{0.5f, -0.25f}));
  EXPECT_EQ(g.quats, (std::vector<float>{1, 0, 0, 0, 0.5f, 0.5f, -0.5f, 0.5f}));
  EXPECT_EQ(g.means, (std::vector<float>{1.5f, -2, 300, 0, 0, 0}));
  EXPECT_EQ(g.log_scales, (std::vector<float>{-1, -2, -3, 0, 0, 0}));
  EXPECT_EQ(g.sh, (std::vector<float>{0.1f, 0.2f, 0.3f, 3, 2, 1}));
}

TEST(Ply, ReadsShuffledBinaryWithDoublesAndExtraProperties) {
  // Vertex i's standard column j holds 1000 i + j; the file stores the columns shuffled, half of
  // them as doubles, plus properties 3DGS does not use.
  auto names = standard_names(1);
  names.push_back("red");
  names.push_back("extra");
  std::shuffle(names.begin(), names.end(), std::mt19937(3));
  const auto standard = standard_names(1);
  std::string file = "ply\nformat binary_little_endian 1.0\nelement vertex 3\n";
  for (std::size_t p = 0; p < names.size(); ++p)
    file += std::string("property ") + (p % 2 ? "double " : "float ") + names[p] + "\n";
  file += "end_header\n";
  for (int i = 0; i < 3; ++i) {
    for (std::size_t p = 0; p < names.size(); ++p) {
      const auto it = std::find(standard.begin(), standard.end(), names[p]);
      const double v = it == standard.end() ? -1.0 : 1000.0 * i + (it - standard.begin());
      const float f = static_cast<float>(v);
      file.append(p % 2 ? reinterpret_cast<const char*>(&v) : reinterpret_cast<const char*>(&f),
                  p % 2 ? sizeof v : sizeof f);
    }
  }
  const fs::path dir = test::temp_dir("ply_shuffled");
  write_text(dir / "in.ply", file);
  const Gaussians g = read_ply((dir / "in.ply").string());
  EXPECT_EQ(g.sh_degree, 1);
  // Writing it back in the standard order (pinned above) puts every value in its column.
  write_ply((dir / "out.ply").string(), g);
  const std::vector<float> body = body_floats(dir / "out.ply");
  ASSERT_EQ(body.size(), 3 * standard.size());
  for (std::size_t i = 0; i < 3; ++i) {
    for (std::size_t j = 0; j < standard.size(); ++j) {
      if (standard[j].starts_with("n")) continue;  // normals are written as zeros
      EXPECT_EQ(body[i * standard.size() + j], 1000.0f * i + j) << standard[j];
    }
  }
}

TEST(Ply, NonFiniteValueNamesFileVertexAndProperty) {
  const fs::path path = test::temp_dir("ply_nan") / "nan.ply";
  write_ply(path.string(), random_model(3, 20, 2));
  std::string bytes = file_bytes(path);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::memcpy(bytes.data() + body_start(bytes) + (17 * 62 + column("scale_1")) * sizeof(float),
              &nan, sizeof nan);
  write_text(path, bytes);
  expect_contains(error_of([&] { read_ply(path.string()); }),
                  {path.string(), "vertex 17", "scale_1", "NaN"});

  write_text(path, ascii_header(2) +
                       "0 0 0 0 0 0 1 2 3 0 0 0 0 1 0 0 0\n"
                       "0 0 0 0 0 0 1 2 3 -inf 0 0 0 1 0 0 0\n");
  expect_contains(error_of([&] { read_ply(path.string()); }),
                  {path.string(), "vertex 1", "line", "opacity", "inf"});
}

TEST(Ply, TruncatedBodySaysHowManyVertices) {
  const fs::path path = test::temp_dir("ply_truncated") / "t.ply";
  write_ply(path.string(), random_model(3, 10, 4));
  fs::resize_file(path, fs::file_size(path) - 5);
  expect_contains(error_of([&] { read_ply(path.string()); }),
                  {path.string(), "truncated", "expected 10", "read 9"});

  write_text(path, ascii_header(3) + "0 0 0 0 0 0 1 2 3 0 0 0 0 1 0 0 0\n");
  expect_contains(error_of([&] { read_ply(path.string()); }),
                  {path.string(), "expected 3", "read 1"});

  // A vertex count far beyond the body must be reported, not allocated.
  write_text(path, ascii_header(std::size_t(1) << 60) + "0 0 0 0 0 0 1 2 3 0 0 0 0 1 0 0 0\n");
  expect_contains(error_of([&] { read_ply(path.string()); }), {path.string(), "truncated"});
}

TEST(Ply, MissingPropertyIsNamed) {
  const fs::path path = test::temp_dir("ply_missing") / "m.ply";
  write_text(path, ascii_header(1, "rot_3") + "0 0 0 0 0 0 1 2 3 0 0 0 0 1 0 0\n");
  expect_contains(error_of([&] { read_ply(path.string()); }), {path.string(), "rot_3", "missing"});
}

TEST(Ply, RejectsFilesThatAreNotStandardPly) {
  const fs::path dir = test::temp_dir("ply_bad");
  const auto expect_rejected = [&](const std::string& name, const std::string& contents,
                                   std::initializer_list<std::string> parts) {
    write_text(dir / name, contents);
    const std::string path = (dir / name).string();
    SCOPED_TRACE(name);
    expect_contains(error_of([&] { read_ply(path); }), {path});
    expect_contains(error_of([&] { read_ply(path); }), parts);
  };
  expect_rejected("text.ply", "hello world\n", {"not a PLY"});
  expect_rejected("empty.ply", "", {"not a PLY"});
  expect_rejected("big.ply", "ply\nformat binary_big_endian 1.0\nelement vertex 0\nend_header\n",
                  {"binary_big_endian"});
  expect_rejected("noend.ply", "ply\nformat ascii 1.0\nelement vertex 0\n", {"end_header"});
  std::string rest10 = ascii_header(0);
  rest10.insert(rest10.find("property float opacity"), "property float f_rest_0\n");
  expect_rejected("rest.ply", rest10, {"f_rest", "1 f_rest"});
  expect_rejected("count.ply", "ply\nformat ascii 1.0\nelement vertex -3\nend_header\n",
                  {"element vertex", "-3"});
  std::string bad_number = ascii_header(1) + "0 0 0 0 0 0 1 2 3 0 0 0 0 one 0 0 0\n";
  expect_rejected("number.ply", bad_number, {"vertex 0", "rot_0", "'one'"});
  expect_contains(error_of([&] { read_ply((dir / "missing.ply").string()); }), {"cannot open"});
}

TEST(Ply, FailedWriteLeavesNoFile) {
  const fs::path dir = test::temp_dir("ply_failed_write");
  Gaussians g = random_model(2, 30, 5);
  g.log_scales[3 * 4 + 2] = std::numeric_limits<float>::infinity();
  const std::string path = (dir / "m.ply").string();
  expect_contains(error_of([&] { write_ply(path, g); }), {path, "vertex 4", "scale_2", "+inf"});
  EXPECT_FALSE(fs::exists(path));
  EXPECT_FALSE(fs::exists(path + ".tmp"));

  g = random_model(2, 30, 5);
  g.sh.pop_back();
  expect_contains(error_of([&] { write_ply(path, g); }), {path, "sh"});
  EXPECT_FALSE(fs::exists(path));

  const std::string no_dir = (dir / "absent" / "m.ply").string();
  expect_contains(error_of([&] { write_ply(no_dir, random_model(0, 3, 6)); }), {no_dir});
}

TEST(Ply, OverwriteReplacesTheWholeFile) {
  const std::string path = (test::temp_dir("ply_overwrite") / "m.ply").string();
  write_ply(path, random_model(3, 100, 8));
  const Gaussians small = random_model(0, 2, 9);
  write_ply(path, small);
  test::expect_bit_identical(small, read_ply(path));
}

}  // namespace
}  // namespace splat
