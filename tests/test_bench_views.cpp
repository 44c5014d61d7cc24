// splat bench views: the .npy header against NumPy's format (version 1.0), and the export of a
// dataset: every view's camera and bytes as splat loads them (straight alpha composited and
// rounded to bytes), COLMAP's sparse points, and a clear error for loss masks.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "engine/target.h"
#include "io/dataset.h"
#include "io/npy.h"
#include "io/quantize.h"
#include "test_util.h"
#include "train/config.h"
#include "train/init.h"

namespace splat {
namespace {

namespace fs = std::filesystem;

// The dict of a .npy file's header and the bytes after it; fails the test on a malformed header.
std::pair<std::string, std::vector<std::uint8_t>> read_npy(const fs::path& p) {
  const std::vector<std::uint8_t> bytes = test::file_bytes(p);
  EXPECT_GE(bytes.size(), 10u);
  if (bytes.size() < 10) return {};
  EXPECT_EQ(std::string(bytes.begin(), bytes.begin() + 8), std::string("\x93NUMPY\x01\x00", 8));
  const std::size_t len = bytes[8] | std::size_t(bytes[9]) << 8, end = 10 + len;
  EXPECT_EQ(end % 64, 0u) << "the data starts 64-byte aligned";
  EXPECT_LE(end, bytes.size());
  EXPECT_EQ(bytes[end - 1], '\n');
  return {std::string(bytes.begin() + 10, bytes.begin() + end),
          std::vector<std::uint8_t>(bytes.begin() + end, bytes.end())};
}

// An [n, 6] float32 .npy of point rows (x y z r g b); empty (and the test failed) otherwise.
std::vector<float> read_point_rows(const fs::path& p, std::size_t n) {
  const auto [dict, bytes] = read_npy(p);
  EXPECT_NE(dict.find("'descr': '<f4'"), std::string::npos) << dict;
  EXPECT_NE(dict.find("'shape': (" + std::to_string(n) + ", 6)"), std::string::npos) << dict;
  EXPECT_EQ(bytes.size(), n * 6 * sizeof(float));
  if (bytes.size() != n * 6 * sizeof(float)) return {};
  std::vector<float> rows(n * 6);
  std::memcpy(rows.data(), bytes.data(), bytes.size());
  return rows;
}

TEST(Npy, HeaderIsAPythonDictPaddedTo64Bytes) {
  for (const auto& [shape, text] : {std::pair{std::vector<std::size_t>{5}, std::string("(5,)")},
                                    {{1443, 6}, "(1443, 6)"},
                                    {{64, 48, 3}, "(64, 48, 3)"}}) {
    const std::string h = npy_header("<f4", shape);
    EXPECT_EQ(h.size() % 64, 0u);
    EXPECT_EQ(std::size_t(std::uint8_t(h[8])) | std::size_t(std::uint8_t(h[9])) << 8,
              h.size() - 10);
    EXPECT_EQ(h.substr(10, h.find('}') - 9),
              "{'descr': '<f4', 'fortran_order': False, 'shape': " + text + ", }");
    EXPECT_EQ(h.back(), '\n');
  }
}

TEST(BenchViews, WritesEveryViewAsSplatLoadsIt) {
  const auto out = test::temp_dir("bench_views");
  const auto r = test::run_splat("bench views " + test::small_demo_scene() + " --out " +
                                 (out / "v").string() + " --set data.background=[0,0.5,1]");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  LoadOptions o;
  o.background = {0.0f, 0.5f, 1.0f};
  const Dataset data = load_blender(test::small_demo_scene(), o);
  nlohmann::json j;
  std::ifstream(out / "v/views.json") >> j;
  EXPECT_EQ(j["format"], "splat-views-1");
  EXPECT_EQ(j["background"], nlohmann::json({0.0, 0.5, 1.0}));
  EXPECT_NEAR(j["scene_extent"].get<double>(), scene_extent(data), 1e-12);
  EXPECT_TRUE(j["points"].is_null());
  {
    // No sparse points: splat's own initial splats instead, positions and DC colours.
    const Config cfg;
    const Gaussians init = initialize_model(cfg.model, data, cfg.train.seed);
    const std::size_t n = init.size();
    ASSERT_EQ(j["init_points"], "init_points.npy");
    const std::vector<float> rows = read_point_rows(out / "v/init_points.npy", n);
    ASSERT_FALSE(rows.empty());
    for (std::size_t i : {std::size_t(0), n - 1})
      for (int c = 0; c < 3; ++c) {
        EXPECT_EQ(rows[6 * i + c], init.means[3 * i + c]);
        EXPECT_NEAR(rows[6 * i + 3 + c], 0.5 + kShC0 * init.sh[i * init.K() * 3 + c], 1e-6);
      }
  }
  ASSERT_EQ(j["train"].size(), data.train.size());
  ASSERT_EQ(j["test"].size(), data.test.size());
  for (const auto& [split, views] : {std::pair{"train", &data.train}, {"test", &data.test}}) {
    for (std::size_t k : {std::size_t(0), views->size() - 1}) {
      const View& v = (*views)[k];
      const nlohmann::json& jv = j[split][k];
      SCOPED_TRACE(std::string(split) + " " + std::to_string(k));
      EXPECT_EQ(jv["name"], v.name);
      EXPECT_EQ(jv["width"], v.camera.width);
      EXPECT_EQ(jv["fx"].get<double>(), v.camera.fx);
      EXPECT_EQ(jv["cy"].get<double>(), v.camera.cy);
      for (int row = 0; row < 3; ++row) {
        for (int c = 0; c < 3; ++c) EXPECT_EQ(jv["world_to_camera"][row][c], v.camera.R[row][c]);
        EXPECT_EQ(jv["world_to_camera"][row][3], v.camera.t[row]);
      }
      EXPECT_EQ(jv["world_to_camera"][3], nlohmann::json({0.0, 0.0, 0.0, 1.0}));
      const auto [dict, bytes] = read_npy(out / "v" / jv["image"].get<std::string>());
      EXPECT_NE(dict.find("'descr': '|u1'"), std::string::npos) << dict;
      EXPECT_NE(dict.find("'shape': (64, 64, 3)"), std::string::npos) << dict;
      // The demo scene's images are RGBA: the target composited on the background, in bytes.
      ASSERT_EQ(v.image.channels, 4);
      const Image target = target_image(v.image);
      ASSERT_EQ(bytes.size(), target.data.size());
      for (std::size_t i = 0; i < bytes.size(); ++i)
        ASSERT_EQ(bytes[i], std::lround(target.data[i] * 255.0f)) << "byte " << i;
    }
  }
}

TEST(BenchViews, ColmapPointsAreXyzRgbRows) {
  SPLAT_REQUIRE_SHARED("data/figurine");
  const auto out = test::temp_dir("bench_views_colmap");
  const fs::path figurine = test::shared_dir() / "data/figurine";
  const auto r = test::run_splat("bench views " + figurine.string() + " --out " + out.string() +
                                 " --downscale 8");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  LoadOptions o;
  o.downscale = 8;
  const Dataset data = load_colmap(figurine.string(), o);
  ASSERT_TRUE(data.points);
  nlohmann::json j;
  std::ifstream(out / "views.json") >> j;
  EXPECT_TRUE(j["init_points"].is_null());  // the run starts from these points
  const std::size_t n = data.points->positions.size() / 3;
  const std::vector<float> rows = read_point_rows(out / "points.npy", n);
  ASSERT_FALSE(rows.empty());
  for (std::size_t i : {std::size_t(0), n - 1})
    for (int c = 0; c < 3; ++c) {
      EXPECT_EQ(rows[6 * i + c], data.points->positions[3 * i + c]);
      EXPECT_EQ(rows[6 * i + 3 + c], data.points->colors[3 * i + c]);
    }
}

// The export has no mask channel: a masked dataset is an error naming the image and the key, and
// leaves no views.json.
TEST(BadInputBenchViews, MaskedViewsAreRefusedNamingTheImage) {
  const auto out = test::temp_dir("bench_views_masked");
  const auto r = test::run_splat("bench views " + test::small_demo_scene() + " --out " +
                                 out.string() + " --set data.alpha_mask=true");
  EXPECT_NE(r.exit_code, 0);
  test::expect_contains(r.output, {"loss mask", "data.alpha_mask", ".png"});
  EXPECT_FALSE(fs::exists(out / "views.json"));
}

}  // namespace
}  // namespace splat
