// The `splat demo` scene generator: layout, cameras, coverage and determinism of what it writes.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "core/camera.h"
#include "core/error.h"
#include "core/image.h"
#include "io/demo_scene.h"
#include "io/image_io.h"
#include "test_util.h"

namespace fs = std::filesystem;

namespace splat {
namespace {

nlohmann::json read_json(const fs::path& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << path;
  return nlohmann::json::parse(in);
}

std::string read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::array<double, 16> pose_of(const nlohmann::json& frame) {
  std::array<double, 16> m{};
  const auto& rows = frame.at("transform_matrix");
  EXPECT_EQ(rows.size(), 4u);
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(rows[r].size(), 4u);
    for (int c = 0; c < 4; ++c) m[r * 4 + c] = rows[r][c].get<double>();
  }
  return m;
}

// The camera a NeRF-synthetic loader builds from a frame.
Camera camera_of(const nlohmann::json& doc, const nlohmann::json& frame, int w, int h) {
  const double fx = 0.5 * w / std::tan(0.5 * doc.at("camera_angle_x").get<double>());
  return Camera::from_c2w_opengl(pose_of(frame), w, h, fx, fx, 0.5 * w, 0.5 * h);
}

Vec3<double> center_of(const nlohmann::json& frame) {
  const auto m = pose_of(frame);
  return {m[3], m[7], m[11]};
}

// The default scene (128x128, 60 + 12 views) is rendered once and shared by the tests below.
class DemoSceneDefault : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = test::temp_dir("demo_scene_default");
    write_demo_scene(dir_.string(), opts_);
  }
  static inline fs::path dir_;
  static inline DemoSceneOptions opts_{};
};

TEST_F(DemoSceneDefault, WritesNerfSyntheticLayout) {
  const std::array<std::pair<const char*, int>, 2> splits{
      {{"train", opts_.train_views}, {"test", opts_.test_views}}};
  for (const auto& [split, count] : splits) {
    const auto doc = read_json(dir_ / (std::string("transforms_") + split + ".json"));
    EXPECT_DOUBLE_EQ(doc.at("camera_angle_x").get<double>(), opts_.camera_angle_x);
    const auto& frames = doc.at("frames");
    ASSERT_EQ(static_cast<int>(frames.size()), count) << split;
    for (int i = 0; i < count; ++i) {
      const std::string rel = std::string("./") + split + "/r_" + std::to_string(i);
      EXPECT_EQ(frames[i].at("file_path").get<std::string>(), rel);  // no extension, as Lego
      EXPECT_TRUE(fs::is_regular_file(dir_ / split / ("r_" + std::to_string(i) + ".png"))) << rel;
    }
    // Nothing beyond the listed frames.
    int files = 0;
    for (const auto& entry : fs::directory_iterator(dir_ / split)) files += entry.is_regular_file();
    EXPECT_EQ(files, count) << split;
  }
}

TEST_F(DemoSceneDefault, PosesAreRigidAndLookAtTheOrigin) {
  for (const char* split : {"train", "test"}) {
    const auto doc = read_json(dir_ / (std::string("transforms_") + split + ".json"));
    for (const auto& frame : doc.at("frames")) {
      const auto m = pose_of(frame);
      EXPECT_DOUBLE_EQ(m[12], 0.0);
      EXPECT_DOUBLE_EQ(m[13], 0.0);
      EXPECT_DOUBLE_EQ(m[14], 0.0);
      EXPECT_DOUBLE_EQ(m[15], 1.0);
      // Orthonormal rotation columns, right-handed.
      for (int a = 0; a < 3; ++a)
        for (int b = 0; b < 3; ++b) {
          double d = 0;
          for (int r = 0; r < 3; ++r) d += m[r * 4 + a] * m[r * 4 + b];
          EXPECT_NEAR(d, a == b ? 1.0 : 0.0, 1e-12);
        }
      const Vec3<double> x{m[0], m[4], m[8]}, y{m[1], m[5], m[9]}, z{m[2], m[6], m[10]};
      EXPECT_NEAR(dot(cross(x, y), z), 1.0, 1e-12);

      const Camera cam = camera_of(doc, frame, opts_.width, opts_.height);
      EXPECT_NEAR(norm(cam.center()), 4.0, 1e-9);
      // The world origin is in front of the camera and projects to the image center.
      const Vec3<double> p = cam.t;  // R * 0 + t
      ASSERT_GT(p.z, 0.0);
      EXPECT_NEAR(cam.fx * p.x / p.z + cam.cx, 0.5 * opts_.width, 1e-9);
      EXPECT_NEAR(cam.fy * p.y / p.z + cam.cy, 0.5 * opts_.height, 1e-9);
      // Upper hemisphere plus a little below the equator.
      EXPECT_GT(cam.center().z, -0.3 * 4.0);
    }
  }
}

TEST_F(DemoSceneDefault, TestViewsAreNovel) {
  const auto train = read_json(dir_ / "transforms_train.json").at("frames");
  const auto test = read_json(dir_ / "transforms_test.json").at("frames");
  double closest = 1e9;
  for (const auto& a : test)
    for (const auto& b : train) closest = std::min(closest, norm(center_of(a) - center_of(b)));
  // Neighboring training cameras are ~1.3 apart on the radius-4 sphere; each test camera sits in
  // a gap between them (about 0.8 from the nearest), not on top of one.
  EXPECT_GT(closest, 0.5);
}

TEST_F(DemoSceneDefault, EveryViewShowsTheObjectOnATransparentBackground) {
  const int w = opts_.width, h = opts_.height;
  int partial_views = 0;
  for (const auto& [split, count] : std::array<std::pair<const char*, int>, 2>{
           {{"train", opts_.train_views}, {"test", opts_.test_views}}}) {
    for (int i = 0; i < count; ++i) {
      const fs::path path = dir_ / split / ("r_" + std::to_string(i) + ".png");
      const Image img = read_image(path.string());
      ASSERT_EQ(img.width, w) << path;
      ASSERT_EQ(img.height, h) << path;
      ASSERT_EQ(img.channels, 4) << path;
      // Corners: background, fully transparent (so it composites on white).
      for (int y : {0, h - 1})
        for (int x : {0, w - 1})
          EXPECT_EQ(img.at(x, y, 3), 0.0f) << path << " corner " << x << "," << y;
      // The 2x2 pixels around the image center: fully covered.
      for (int y : {h / 2 - 1, h / 2})
        for (int x : {w / 2 - 1, w / 2}) EXPECT_EQ(img.at(x, y, 3), 1.0f) << path << " center";
      // The whole border is background: no shape is cut off by the frame.
      float border = 0.0f;
      for (int x = 0; x < w; ++x) border = std::max({border, img.at(x, 0, 3), img.at(x, h - 1, 3)});
      for (int y = 0; y < h; ++y) border = std::max({border, img.at(0, y, 3), img.at(w - 1, y, 3)});
      EXPECT_EQ(border, 0.0f) << path;
      // Anti-aliased silhouettes: some pixels are partly covered.
      bool partial = false;
      for (std::size_t p = 0; p < img.pixels(); ++p) {
        const float a = img.data[p * 4 + 3];
        partial |= a > 0.0f && a < 1.0f;
      }
      partial_views += partial;
    }
  }
  EXPECT_EQ(partial_views, opts_.train_views + opts_.test_views);
}

TEST_F(DemoSceneDefault, ObjectsAreLitAndTextured) {
  // Covered pixels span a real range of colors (not one flat albedo), and the coverage is a
  // sizeable part of the frame.
  const Image img = read_image((dir_ / "train" / "r_0.png").string());
  double sum[3] = {0, 0, 0}, sum2[3] = {0, 0, 0};
  int covered = 0;
  for (int y = 0; y < img.height; ++y)
    for (int x = 0; x < img.width; ++x) {
      if (img.at(x, y, 3) < 1.0f) continue;
      ++covered;
      for (int c = 0; c < 3; ++c) {
        sum[c] += img.at(x, y, c);
        sum2[c] += img.at(x, y, c) * img.at(x, y, c);
      }
    }
  ASSERT_GT(covered, static_cast<int>(img.pixels() / 10));
  for (int c = 0; c < 3; ++c) {
    const double mean = sum[c] / covered, var = sum2[c] / covered - mean * mean;
    EXPECT_GT(std::sqrt(var), 0.08) << "channel " << c;
  }
}

TEST(DemoScene, NonSquareSmallScene) {
  DemoSceneOptions o;
  o.width = 80;
  o.height = 60;
  o.train_views = 5;
  o.test_views = 2;
  o.supersample = 2;
  const fs::path dir = test::temp_dir("demo_scene_small") / "nested" / "scene";  // made by the call
  write_demo_scene(dir.string(), o);
  const auto doc = read_json(dir / "transforms_test.json");
  ASSERT_EQ(doc.at("frames").size(), 2u);
  const Image img = read_image((dir / "test" / "r_1.png").string());
  EXPECT_EQ(img.width, 80);
  EXPECT_EQ(img.height, 60);
  EXPECT_EQ(img.at(40, 30, 3), 1.0f);
  EXPECT_EQ(img.at(0, 0, 3), 0.0f);
  const Camera cam = camera_of(doc, doc.at("frames")[1], 80, 60);
  EXPECT_NEAR(cam.fx * cam.t.x / cam.t.z + cam.cx, 40.0, 1e-9);
  EXPECT_NEAR(cam.fy * cam.t.y / cam.t.z + cam.cy, 30.0, 1e-9);
}

TEST(DemoScene, DeterministicForASeed) {
  DemoSceneOptions o;
  o.width = 48;
  o.height = 48;
  o.train_views = 4;
  o.test_views = 2;
  const fs::path a = test::temp_dir("demo_scene_det_a"), b = test::temp_dir("demo_scene_det_b");
  write_demo_scene(a.string(), o);
  write_demo_scene(b.string(), o);
  int compared = 0;
  for (const auto& entry : fs::recursive_directory_iterator(a)) {
    if (!entry.is_regular_file()) continue;
    const fs::path rel = fs::relative(entry.path(), a);
    ASSERT_TRUE(fs::exists(b / rel)) << rel;
    EXPECT_EQ(read_bytes(entry.path()), read_bytes(b / rel)) << rel;
    ++compared;
  }
  EXPECT_EQ(compared, 2 + 4 + 2);

  // Another seed moves the cameras.
  o.seed = 8;
  const fs::path c = test::temp_dir("demo_scene_det_c");
  write_demo_scene(c.string(), o);
  EXPECT_NE(read_bytes(a / "transforms_train.json"), read_bytes(c / "transforms_train.json"));
}

TEST(DemoScene, UncreatableDirectoryIsAnErrorNamingIt) {
  const fs::path base = test::temp_dir("demo_scene_error");
  const fs::path blocker = base / "not_a_dir";
  std::ofstream(blocker) << "x";
  const std::string target = (blocker / "scene").string();
  DemoSceneOptions o;
  o.width = o.height = 8;
  o.train_views = o.test_views = 1;
  try {
    write_demo_scene(target, o);
    FAIL() << "expected splat::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(target), std::string::npos) << e.what();
  }
}

TEST(DemoScene, RejectsBadOptions) {
  const fs::path dir = test::temp_dir("demo_scene_bad");
  DemoSceneOptions o;
  o.supersample = 0;
  EXPECT_THROW(write_demo_scene(dir.string(), o), Error);
  o = {};
  o.width = 0;
  EXPECT_THROW(write_demo_scene(dir.string(), o), Error);
  o = {};
  o.camera_angle_x = 0.0;
  EXPECT_THROW(write_demo_scene(dir.string(), o), Error);
}

}  // namespace
}  // namespace splat
