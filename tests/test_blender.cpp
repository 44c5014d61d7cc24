// NeRF-synthetic loader: the real Lego scene, and small fake datasets for options and bad input.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "core/error.h"
#include "engine/target.h"
#include "io/dataset.h"
#include "io/image_io.h"
#include "test_util.h"
#include "train/densify.h"

namespace splat {
namespace {

namespace fs = std::filesystem;

constexpr double kLegoAngleX = 0.6911112070083618;

TEST(BlenderSlow, LegoDownscaledByEight) {
  SPLAT_REQUIRE_SHARED("data/lego");
  LoadOptions opts;
  opts.downscale = 8;
  opts.test_every = 8;
  const Dataset data = load_blender((test::shared_dir() / "data/lego").string(), opts);
  ASSERT_EQ(data.train.size(), 100u);
  ASSERT_EQ(data.test.size(), 25u);
  EXPECT_EQ(data.train[0].name, "r_0");
  EXPECT_EQ(data.test[1].name, "r_8");
  EXPECT_FALSE(data.points.has_value());

  const double fx = 0.5 * 800 / std::tan(0.5 * kLegoAngleX) / 8;
  for (const auto* split : {&data.train, &data.test}) {
    for (const View& v : *split) {
      SCOPED_TRACE(v.path);
      ASSERT_EQ(v.image.width, 100);
      ASSERT_EQ(v.image.height, 100);
      ASSERT_EQ(v.image.channels, 3);
      EXPECT_EQ(v.camera.width, 100);
      EXPECT_EQ(v.camera.height, 100);
      EXPECT_NEAR(v.camera.fx, fx, 1e-9);
      EXPECT_NEAR(v.camera.fy, fx, 1e-9);
      EXPECT_NEAR(v.camera.cx, 50.0, 1e-12);
      EXPECT_NEAR(v.camera.cy, 50.0, 1e-12);
      EXPECT_NEAR(norm(v.camera.center()), 4.0311, 1e-3);
      // Every Lego camera looks at the origin. With the wrong axis flip the origin would be
      // behind the camera (z < 0) or mirrored away from the center.
      const Vec3<double> p = v.camera.t;  // the origin in camera coordinates
      ASSERT_GT(p.z, 0.0);
      EXPECT_NEAR(v.camera.fx * p.x / p.z + v.camera.cx, 50.0, 2.0);
      EXPECT_NEAR(v.camera.fy * p.y / p.z + v.camera.cy, 50.0, 2.0);
    }
  }
  // The cameras sit on the upper hemisphere, so their mean is above the origin (value computed
  // independently from transforms_train.json with Python).
  EXPECT_NEAR(scene_extent(data), 5.2021475, 1e-5);

  // Pixels whose whole 8x8 source block was transparent must be exactly the white background.
  const Image full = read_image((test::shared_dir() / "data/lego/train/r_0.webp").string());
  const Image image = target_image(data.train[0].image);
  int checked = 0;
  for (int y = 0; y < 100; ++y) {
    for (int x = 0; x < 100; ++x) {
      bool transparent = true;
      for (int dy = 0; dy < 8 && transparent; ++dy) {
        for (int dx = 0; dx < 8 && transparent; ++dx) {
          transparent = full.at(8 * x + dx, 8 * y + dy, 3) == 0.0f;
        }
      }
      if (!transparent) continue;
      ++checked;
      for (int c = 0; c < 3; ++c) ASSERT_EQ(image.at(x, y, c), 1.0f);
    }
  }
  EXPECT_GT(checked, 1000);
}

// ---- fake datasets ---------------------------------------------------------------------------

void write_text(const fs::path& p, const std::string& s) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << s;
}

// An RGBA image, opaque gray except a transparent top-left pixel.
void write_rgba(const fs::path& p, int w, int h) {
  fs::create_directories(p.parent_path());
  Image img(w, h, 4, 0.5f);
  for (std::size_t i = 0; i < img.pixels(); ++i) img.data[4 * i + 3] = 1.0f;
  img.at(0, 0, 3) = 0.0f;
  write_png(p.string(), img);
}

// A camera at (0, 0, d) looking at the origin (identity rotation in OpenGL axes).
std::string frame(const std::string& file_path, double d) {
  return R"({"file_path": ")" + file_path +
         R"(", "transform_matrix": [[1,0,0,0],[0,1,0,0],[0,0,1,)" + std::to_string(d) +
         "],[0,0,0,1]]}";
}

std::string transforms(const std::vector<std::string>& frames, const std::string& extra = "") {
  std::string s = R"({"camera_angle_x": 0.8,)" + extra + R"( "frames": [)";
  for (std::size_t i = 0; i < frames.size(); ++i) s += (i ? "," : "") + frames[i];
  return s + "]}";
}

std::string load_error(const fs::path& dir, const LoadOptions& opts = {}) {
  try {
    load_blender(dir.string(), opts);
  } catch (const Error& e) {
    return e.what();
  }
  return "<no error>";
}

TEST(Blender, FakeDatasetOptionsAndFallbacks) {
  const auto dir = test::temp_dir("blender_ok");
  for (int i = 0; i < 4; ++i) write_rgba(dir / "train" / ("r_" + std::to_string(i) + ".png"), 8, 6);
  for (int i = 0; i < 5; ++i) write_rgba(dir / "val" / ("v_" + std::to_string(i) + ".png"), 8, 6);
  // An extension-less path resolves to .png before .jpg; a path given with an extension is used.
  write_text(dir / "train" / "r_0.jpg", "not really a jpeg");
  write_text(dir / "transforms_train.json",
             transforms({frame("./train/r_0", 3), frame("./train/r_1.png", 4),
                         frame("train/r_2", 5), frame("./train/r_3", 6)}));
  std::vector<std::string> val;
  for (int i = 0; i < 5; ++i) val.push_back(frame("./val/v_" + std::to_string(i), 2));
  // Intrinsics given for a 16x12 image apply, scaled, to the 8x6 files.
  write_text(dir / "transforms_val.json",
             transforms(val, R"( "fl_x": 20, "fl_y": 22, "cx": 7, "cy": 5, "w": 16, "h": 12,)"));

  LoadOptions opts;
  opts.background = {0.0f, 0.25f, 1.0f};
  opts.max_train = 3;
  opts.test_every = 2;
  opts.downscale = 2;
  const Dataset data = load_blender(dir.string(), opts);
  ASSERT_EQ(data.train.size(), 3u);
  ASSERT_EQ(data.test.size(), 3u);  // val frames 0, 2, 4
  EXPECT_EQ(data.train[1].name, "r_1");
  EXPECT_EQ(fs::path(data.train[0].path).filename(), "r_0.png");
  EXPECT_EQ(data.test[2].name, "v_4");

  const Camera& c = data.train[2].camera;
  EXPECT_EQ(c.width, 4);
  EXPECT_EQ(c.height, 3);
  EXPECT_NEAR(c.fx, 0.5 * 8 / std::tan(0.4) / 2, 1e-12);
  EXPECT_NEAR(c.fy, c.fx, 1e-12);
  EXPECT_NEAR(c.cx, 2.0, 1e-12);
  EXPECT_NEAR(c.cy, 1.5, 1e-12);
  EXPECT_NEAR(c.center().z, 5.0, 1e-12);
  EXPECT_NEAR(c.t.z, 5.0, 1e-12);  // OpenGL camera looks down -z: origin is 5 in front

  const Camera& v = data.test[0].camera;
  EXPECT_NEAR(v.fx, 20 * 0.5 / 2, 1e-12);
  EXPECT_NEAR(v.fy, 22 * 0.5 / 2, 1e-12);
  EXPECT_NEAR(v.cx, 7 * 0.5 / 2, 1e-12);
  EXPECT_NEAR(v.cy, 5 * 0.5 / 2, 1e-12);

  // Top-left 2x2 block: one transparent pixel of four. Gray 0.5 was stored as 128/255. The
  // composite is downscaled in float, then kept in 8 bits (half a step of rounding).
  ASSERT_EQ(data.train[0].image.channels, 3);
  const Image img = target_image(data.train[0].image);
  const float g = 128.0f / 255.0f, step = 0.5f / 255 + 1e-6f;
  EXPECT_NEAR(img.at(0, 0, 0), (3 * g + 0.0f) / 4, step);
  EXPECT_NEAR(img.at(0, 0, 1), (3 * g + 0.25f) / 4, step);
  EXPECT_NEAR(img.at(0, 0, 2), (3 * g + 1.0f) / 4, step);
  EXPECT_NEAR(img.at(1, 1, 2), g, 1e-6);
  // View::coverage is of the file as decoded (one transparent pixel of 48), though the
  // resampled image was composited.
  EXPECT_NEAR(data.train[0].coverage, 47.0 / 48.0, 1e-12);

  EXPECT_NEAR(scene_extent(data), 1.1 * 1.0, 1e-12);  // centers z = 3, 4, 5
}

// View::coverage, the subject's share of the image: the mean alpha of a file with transparency
// composited on the background; 1 for RGB, for opaque RGBA and for alpha used as a loss mask.
TEST(Blender, CoverageIsTheMeanAlphaOfCompositedImages) {
  const auto dir = test::temp_dir("blender_coverage");
  Image half(4, 4, 4, 0.5f);  // alpha 0.5 in every pixel, 1 in the top row
  for (int x = 0; x < 4; ++x) half.at(x, 0, 3) = 1.0f;
  write_png((dir / "a.png").string(), half);
  write_png((dir / "b.png").string(), Image(4, 4, 4, 1.0f));
  write_png((dir / "c.png").string(), Image(4, 4, 3, 0.5f));
  write_text(dir / "transforms_train.json",
             transforms({frame("a", 3), frame("b", 3), frame("c", 3)}));
  const Dataset data = load_blender(dir.string(), LoadOptions{});
  ASSERT_EQ(data.train.size(), 3u);
  const double a = (4 * 1.0 + 12 * 128 / 255.0) / 16;  // 0.5 is stored as 128
  EXPECT_NEAR(data.train[0].coverage, a, 1e-6);
  EXPECT_EQ(data.train[1].coverage, 1.0);
  EXPECT_EQ(data.train[2].coverage, 1.0);
  EXPECT_NEAR(training_coverage(data.train), (a + 2) / 3, 1e-6);
  LoadOptions mask;
  mask.alpha_mask = true;
  EXPECT_EQ(load_blender(dir.string(), mask).train[0].coverage, 1.0);
}

TEST(Blender, NoTestSplitGivesEmptyTest) {
  const auto dir = test::temp_dir("blender_notest");
  write_rgba(dir / "a.png", 4, 4);
  write_text(dir / "transforms_train.json", transforms({frame("a", 3)}));
  const Dataset data = load_blender(dir.string(), {});
  EXPECT_EQ(data.train.size(), 1u);
  EXPECT_TRUE(data.test.empty());
  EXPECT_EQ(scene_extent(data), 1.0);  // one camera has no spread
}

TEST(Blender, MissingTrainJson) {
  const auto dir = test::temp_dir("blender_nojson");
  const std::string msg = load_error(dir);
  EXPECT_MENTIONS(msg, (dir / "transforms_train.json").string());
}

TEST(Blender, MalformedJsonGivesBytePosition) {
  const auto dir = test::temp_dir("blender_badjson");
  write_text(dir / "transforms_train.json", R"({"camera_angle_x": 0.8, "frames": [ })");
  const std::string msg = load_error(dir);
  EXPECT_MENTIONS(msg, "transforms_train.json");
  EXPECT_MENTIONS(msg, "JSON");
  EXPECT_MENTIONS(msg, "byte 37");
}

TEST(Blender, MissingFrames) {
  const auto dir = test::temp_dir("blender_noframes");
  write_text(dir / "transforms_train.json", R"({"camera_angle_x": 0.8})");
  const std::string msg = load_error(dir);
  EXPECT_MENTIONS(msg, "transforms_train.json");
  EXPECT_MENTIONS(msg, "frames");
}

TEST(Blender, MissingCameraAngle) {
  const auto dir = test::temp_dir("blender_noangle");
  write_text(dir / "transforms_train.json", R"({"frames": []})");
  const std::string msg = load_error(dir);
  EXPECT_MENTIONS(msg, "transforms_train.json: camera_angle_x");
}

TEST(Blender, FrameWithoutTransformMatrix) {
  const auto dir = test::temp_dir("blender_nomatrix");
  write_rgba(dir / "a.png", 4, 4);
  write_text(dir / "transforms_train.json",
             transforms({frame("a", 3), frame("a", 3), R"({"file_path": "a"})"}));
  const std::string msg = load_error(dir);
  EXPECT_MENTIONS(msg, "transforms_train.json: frames[2].transform_matrix");
}

TEST(Blender, NonFourByFourMatrix) {
  const auto dir = test::temp_dir("blender_3x4");
  write_rgba(dir / "a.png", 4, 4);
  write_text(
      dir / "transforms_train.json",
      transforms({frame("a", 3),
                  R"({"file_path": "a", "transform_matrix": [[1,0,0,0],[0,1,0,0],[0,0,1,0]]})"}));
  const std::string msg = load_error(dir);
  EXPECT_MENTIONS(msg, "transforms_train.json: frames[1].transform_matrix");
  EXPECT_MENTIONS(msg, "4x4");
}

TEST(Blender, ScaledMatrixIsRejected) {
  const auto dir = test::temp_dir("blender_scaled");
  write_rgba(dir / "a.png", 4, 4);
  write_text(
      dir / "transforms_train.json",
      transforms(
          {R"({"file_path": "a", "transform_matrix": [[2,0,0,0],[0,2,0,0],[0,0,2,0],[0,0,0,1]]})"}));
  EXPECT_MENTIONS(load_error(dir), "frames[0].transform_matrix");
}

TEST(Blender, MissingImage) {
  const auto dir = test::temp_dir("blender_noimage");
  write_rgba(dir / "train" / "r_0.png", 4, 4);
  write_text(dir / "transforms_train.json",
             transforms({frame("./train/r_0", 3), frame("./train/r_1", 3)}));
  const std::string msg = load_error(dir);
  EXPECT_MENTIONS(msg, "transforms_train.json: frames[1].file_path");
  EXPECT_MENTIONS(msg, "r_1.png");
  EXPECT_MENTIONS(msg, "r_1.webp");
}

TEST(Blender, MismatchedImageSizes) {
  const auto dir = test::temp_dir("blender_sizes");
  write_rgba(dir / "r_0.png", 4, 4);
  write_rgba(dir / "r_1.png", 4, 4);
  write_rgba(dir / "r_2.png", 6, 4);
  write_text(dir / "transforms_test.json", transforms({frame("r_0", 3)}));
  write_text(dir / "transforms_train.json",
             transforms({frame("r_0", 3), frame("r_1", 3), frame("r_2", 3)}));
  const std::string msg = load_error(dir);
  EXPECT_MENTIONS(msg, "transforms_train.json: frames[2]");
  EXPECT_MENTIONS(msg, "r_2.png is 6x4");
  EXPECT_MENTIONS(msg, "r_0.png is 4x4");
}

TEST(Blender, FirstUndecodableImageIsReported) {
  const auto dir = test::temp_dir("blender_corrupt");
  std::vector<std::string> frames;
  for (int i = 0; i < 12; ++i) {
    const std::string name = "r_" + std::to_string(i) + ".png";
    if (i == 5 || i == 9) {
      write_text(dir / name, "garbage, not an image");
    } else {
      write_rgba(dir / name, 4, 4);
    }
    frames.push_back(frame(name, 3));
  }
  write_text(dir / "transforms_train.json", transforms(frames));
  for (int run = 0; run < 3; ++run) {
    const std::string msg = load_error(dir);
    EXPECT_MENTIONS(msg, "transforms_train.json: frames[5]");
    EXPECT_MENTIONS(msg, (dir / "r_5.png").string());
    EXPECT_MENTIONS(msg, "not a PNG, JPEG or WebP file");
  }
}

TEST(Blender, BadOptions) {
  const auto dir = test::temp_dir("blender_opts");
  LoadOptions opts;
  opts.downscale = 0;
  EXPECT_MENTIONS(load_error(dir, opts), "downscale");
  opts = {};
  opts.test_every = 0;
  EXPECT_MENTIONS(load_error(dir, opts), "test_every");
}

}  // namespace
}  // namespace splat
