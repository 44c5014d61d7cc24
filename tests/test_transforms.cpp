// instant-ngp / nerfstudio transforms.json: the real fox capture, small fake datasets for
// per-frame intrinsics, missing images and distortion, and the scene bounds random init uses.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "io/dataset.h"
#include "io/image_io.h"
#include "io/undistort.h"
#include "test_util.h"
#include "train/config.h"
#include "train/init.h"

namespace splat {
namespace {

using test::error_of;

namespace fs = std::filesystem;

void write_text(const fs::path& p, const std::string& s) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << s;
}

// ---- the real fox capture ------------------------------------------------------------------

TEST(TransformsSlow, FoxLoadsWithHoldoutEveryEighth) {
  SPLAT_REQUIRE_SHARED("data/fox");
  LoadOptions opts;
  opts.downscale = 8;
  testing::internal::CaptureStderr();
  const Dataset data = load_transforms((test::shared_dir() / "data/fox").string(), opts);
  const std::string log = testing::internal::GetCapturedStderr();
  EXPECT_MENTIONS(log, "undistorting");
  EXPECT_EQ(log.find("skipped"), std::string::npos) << log;  // all 67 images are present
  ASSERT_EQ(data.train.size(), 58u);
  ASSERT_EQ(data.test.size(), 9u);  // sorted positions 0, 8, ..., 64
  EXPECT_EQ(data.test[0].name, "0001");
  EXPECT_EQ(data.test[1].name, "0009");
  EXPECT_EQ(data.train[0].name, "0002");
  EXPECT_FALSE(data.points.has_value());

  // The OPENCV lens of transforms.json, resampled to the pinhole cropped to what it saw, then
  // downscaled (Camera::downscaled).
  Lens lens;
  lens.k = {0.0578421, -0.0805099, 0, 0};
  lens.p1 = -0.000980296, lens.p2 = 0.00015575;
  const CameraIntrinsics full =
      undistorted_camera({1375.52, 1374.49, 554.558, 965.268, 1080, 1920}, lens, true);
  EXPECT_LT(full.width, 1080);
  const int W = full.width / 8, H = full.height / 8;
  const double sx = double(W) / full.width, sy = double(H) / full.height;
  for (const auto* split : {&data.train, &data.test}) {
    for (const View& v : *split) {
      SCOPED_TRACE(v.name);
      ASSERT_EQ(v.image.width, W);
      ASSERT_EQ(v.image.height, H);
      EXPECT_NEAR(v.camera.fx, 1375.52 * sx, 1e-9);
      EXPECT_NEAR(v.camera.fy, 1374.49 * sy, 1e-9);
      EXPECT_NEAR(v.camera.cx, full.cx * sx, 1e-9);
      EXPECT_NEAR(v.camera.cy, full.cy * sy, 1e-9);
      // instant-ngp centers the capture on what the cameras look at: the origin projects into
      // every image, in front of the camera (OpenGL -> OpenCV axes done right).
      const Vec3<double> p = v.camera.t;
      ASSERT_GT(p.z, 0.0);
      const double u = v.camera.fx * p.x / p.z + v.camera.cx;
      const double w = v.camera.fy * p.y / p.z + v.camera.cy;
      EXPECT_TRUE(u > 0 && u < 135 && w > 0 && w < 240) << u << " " << w;
    }
  }
  // aabb_scale 4 at instant-ngp's default scale 0.33 and offset 0.5.
  ASSERT_TRUE(data.bounds.has_value());
  EXPECT_NEAR(data.bounds->half_size, 2.0 / 0.33, 1e-12);
  EXPECT_EQ(norm(data.bounds->center), 0.0);
  // Without those bounds the cameras' look-at point is found near the origin too.
  Dataset no_bounds;
  no_bounds.train = data.train;
  EXPECT_LT(norm(scene_bounds(no_bounds).center), 0.2);
}

TEST(Transforms, MissingImagesAreSkippedWithOneCountedWarning) {
  SPLAT_REQUIRE_SHARED("data/fox");
  const auto dir = test::temp_dir("fox_missing");
  nlohmann::json j =
      nlohmann::json::parse(std::ifstream(test::shared_dir() / "data/fox/transforms.json"));
  // Two frames whose images upstream deleted: the first frame's pose under other names.
  for (const char* name : {"images/9998.jpg", "images/9999.jpg"}) {
    nlohmann::json f = j["frames"][0];
    f["file_path"] = name;
    j["frames"].push_back(f);
  }
  const std::string text = j.dump(2);
  write_text(dir / "transforms.json", text);
  fs::create_directory_symlink(test::shared_dir() / "data/fox/images", dir / "images");

  LoadOptions opts;
  opts.downscale = 16;
  opts.max_train = 2;
  opts.test_every = 9;  // decode 3 images, not 67
  testing::internal::CaptureStderr();
  const Dataset data = load_transforms(dir.string(), opts);
  const std::string log = testing::internal::GetCapturedStderr();
  EXPECT_MENTIONS(
      log, "skipped 2 of 69 frames whose image is missing (first: images/9998.jpg not found)");
  EXPECT_EQ(log.find("skipped", log.find("skipped") + 1), std::string::npos)
      << "one warning: " << log;
  EXPECT_EQ(data.train.size(), 2u);
  ASSERT_EQ(data.test.size(), 1u);
  EXPECT_EQ(data.test[0].name, "0001");
}

// ---- small fake datasets -------------------------------------------------------------------

void write_rgb(const fs::path& p, int w, int h, float value = 0.5f) {
  fs::create_directories(p.parent_path());
  write_png(p.string(), Image(w, h, 3, value));
}

// A camera at (0, 0, d) looking down -z (OpenGL), with extra frame fields.
std::string frame(const std::string& file_path, double d, const std::string& extra = "") {
  return R"({"file_path": ")" + file_path + R"(", )" + extra +
         R"("transform_matrix": [[1,0,0,0],[0,1,0,0],[0,0,1,)" + std::to_string(d) +
         "],[0,0,0,1]]}";
}

std::string transforms(const std::vector<std::string>& frames, const std::string& top) {
  std::string s = "{" + top + R"( "frames": [)";
  for (std::size_t i = 0; i < frames.size(); ++i) s += (i ? "," : "") + frames[i];
  return s + "]}";
}

TEST(Transforms, PerFrameAndSharedIntrinsics) {
  const auto dir = test::temp_dir("transforms_intrinsics");
  write_rgb(dir / "images/a.png", 16, 12);
  write_rgb(dir / "images/b.png", 8, 6);
  write_rgb(dir / "images/c.png", 16, 12);
  // Sorted by file path: a (test), b, c (train). b has its own intrinsics, for a 16x12 original.
  write_text(dir / "transforms.json",
             transforms({frame("images/c.png", 4), frame("images/a.png", 3),
                         frame("images/b.png", 5, R"("fl_x": 30, "cx": 7, "w": 16, "h": 12,)")},
                        R"("fl_x": 20, "fl_y": 22, "cx": 8, "cy": 6,)"));
  const Dataset d = load_transforms(dir.string(), {});
  ASSERT_EQ(d.test.size(), 1u);
  ASSERT_EQ(d.train.size(), 2u);
  EXPECT_EQ(d.test[0].name, "a");
  EXPECT_EQ(d.train[0].name, "b");
  const Camera& b = d.train[0].camera;
  EXPECT_EQ(b.width, 8);
  EXPECT_DOUBLE_EQ(b.fx, 15.0);  // the frame's fl_x, scaled from w = 16 to the 8-pixel file
  EXPECT_DOUBLE_EQ(b.fy, 11.0);  // the shared fl_y, scaled likewise
  EXPECT_DOUBLE_EQ(b.cx, 3.5);
  EXPECT_DOUBLE_EQ(b.cy, 3.0);
  const Camera& c = d.train[1].camera;
  EXPECT_EQ(c.width, 16);
  EXPECT_DOUBLE_EQ(c.fx, 20.0);
  EXPECT_DOUBLE_EQ(c.cx, 8.0);
  EXPECT_NEAR(c.t.z, 4.0, 1e-12);
  EXPECT_FALSE(d.bounds.has_value());  // no aabb_scale
}

// nerfstudio's layout: images/ and its 1/n copies images_n/. downscale n reads the copies, with
// the intrinsics (given for w x h) scaled to each copy's size; without w, h they cannot be.
TEST(Transforms, DownscaleReadsTheImagesNCopies) {
  const auto dir = test::temp_dir("transforms_images_n");
  for (const char* name : {"a.png", "b.png", "c.png"}) {
    write_rgb(dir / "images" / name, 33, 24, 0.25f);
    write_rgb(dir / "images_2" / name, 17, 12, 0.75f);  // 33 / 2 rounded up
  }
  const std::string top = R"("fl_x": 20, "fl_y": 22, "cx": 16.5, "cy": 12,)";
  write_text(
      dir / "transforms.json",
      transforms({frame("images/a.png", 3), frame("./images/b.png", 4), frame("images/c.png", 5)},
                 top + R"( "w": 33, "h": 24,)"));
  LoadOptions opts;
  opts.downscale = 2;
  const Dataset d = load_transforms(dir.string(), opts);
  ASSERT_EQ(d.train.size(), 2u);
  for (const View& v : d.train) {
    SCOPED_TRACE(v.name);
    EXPECT_EQ(fs::path(v.path).parent_path().filename(), "images_2");
    EXPECT_EQ(v.image.width, 17);
    EXPECT_EQ(v.image.data[0], 191);  // 0.75, the copy's value
    EXPECT_DOUBLE_EQ(v.camera.fx, 20.0 * 17 / 33);
    EXPECT_DOUBLE_EQ(v.camera.fy, 22.0 * 12 / 24);
    EXPECT_DOUBLE_EQ(v.camera.cx, 16.5 * 17 / 33);
  }
  // Intrinsics in pixels without w, h: images/ downscaled here (33 / 2 rounded down).
  write_text(
      dir / "transforms.json",
      transforms({frame("images/a.png", 3), frame("images/b.png", 4), frame("images/c.png", 5)},
                 top));
  testing::internal::CaptureStderr();
  const Dataset full = load_transforms(dir.string(), opts);
  EXPECT_MENTIONS(testing::internal::GetCapturedStderr(), "not used (fl_x fl_y cx cy without w, h");
  EXPECT_EQ(fs::path(full.train[0].path).parent_path().filename(), "images");
  EXPECT_EQ(full.train[0].image.width, 16);
  EXPECT_EQ(full.train[0].image.data[0], 64);  // 0.25
}

TEST(Transforms, BadInputNamesFileAndField) {
  const auto dir = test::temp_dir("transforms_bad");
  write_rgb(dir / "a.png", 4, 4);
  auto load_msg = [&](const std::string& json) {
    write_text(dir / "transforms.json", json);
    return error_of([&] { load_transforms(dir.string(), {}); });
  };
  EXPECT_MENTIONS(load_msg(transforms({frame("a.png", 3), frame("a.png", 3, R"("fl_x": 5,)")}, "")),
                  "transforms.json: frames[0].camera_angle_x: missing (and no fl_x)");
  EXPECT_MENTIONS(load_msg(transforms({frame("a.png", 3)}, R"("fl_x": 5, "k1": "x",)")),
                  "transforms.json: k1: expected a number");
  EXPECT_MENTIONS(
      load_msg(transforms({frame("a.png", 3)}, R"("fl_x": 5, "camera_model": "EQUIRECTANGULAR",)")),
      "transforms.json: camera_model: 'EQUIRECTANGULAR' is not supported");
  EXPECT_MENTIONS(load_msg(transforms({frame("b.png", 3), frame("c.png", 3)}, R"("fl_x": 5,)")),
                  "transforms.json: frames: no frame has its image (first: b.png not found)");
  write_rgb(dir / "b.png", 4, 4);
  EXPECT_MENTIONS(load_msg(transforms({frame("a.png", 3), frame("b.png", 4)},
                                      R"("fl_x": 5, "aabb_scale": 0,)")),
                  "transforms.json: aabb_scale: must be > 0");
  EXPECT_MENTIONS(error_of([&] { load_transforms((dir / "nothing").string(), {}); }),
                  "transforms.json: file: not found");
  LoadOptions opts;
  opts.holdout_every = 1;
  EXPECT_MENTIONS(error_of([&] { load_transforms(dir.string(), opts); }), "holdout_every");
  Config cfg;
  EXPECT_MENTIONS(error_of([&] { apply_override(cfg, "data.holdout_every=1"); }),
                  "data.holdout_every");
}

TEST(Transforms, DistortedFramesAreUndistortedBeforeDownscaling) {
  const auto dir = test::temp_dir("transforms_distorted");
  Image img(16, 12, 3);
  for (std::size_t i = 0; i < img.data.size(); ++i) img.data[i] = float((i * 7) % 256) / 255.0f;
  fs::create_directories(dir / "images");
  for (const char* n : {"a.png", "b.png"}) write_png((dir / "images" / n).string(), img);
  write_text(dir / "transforms.json",
             transforms({frame("images/a.png", 3), frame("images/b.png", 4)},
                        R"("fl_x": 14, "fl_y": 15, "cx": 8.5, "cy": 6, "k1": 0.2, "p2": 0.01,)"));
  LoadOptions opts;
  opts.downscale = 2;
  testing::internal::CaptureStderr();
  const Dataset d = load_transforms(dir.string(), opts);
  EXPECT_MENTIONS(testing::internal::GetCapturedStderr(), "undistorting");
  ASSERT_EQ(d.train.size(), 1u);
  const Image decoded = read_image((dir / "images/b.png").string());
  Lens lens;
  lens.k[0] = 0.2, lens.p2 = 0.01;
  const CameraIntrinsics in{14, 15, 8.5, 6, 16, 12};
  const CameraIntrinsics out = undistorted_camera(in, lens, true);
  const Image expected = downscale(undistort(decoded, in, lens, out), 2);
  EXPECT_EQ(d.train[0].image.data, to_image8(expected).data);  // resampled, then 8 bits
  EXPECT_LT(out.width, 16);                                    // cropped to what the lens saw
  EXPECT_EQ(d.train[0].camera.width, out.width / 2);
  EXPECT_DOUBLE_EQ(d.train[0].camera.fx, 7.0);  // the focal length is kept
}

// A lens capture's 1/n copies are undistorted at their own size (nerfstudio's images_2 with
// camera_model OPENCV), with the intrinsics scaled to it first.
TEST(Transforms, LensCopiesAreUndistortedAtTheirSize) {
  const auto dir = test::temp_dir("transforms_distorted_copies");
  Image copy(8, 6, 3);
  for (std::size_t i = 0; i < copy.data.size(); ++i) copy.data[i] = float((i * 7) % 256) / 255.0f;
  for (const char* n : {"a.png", "b.png"}) {
    write_rgb(dir / "images" / n, 16, 12);
    fs::create_directories(dir / "images_2");
    write_png((dir / "images_2" / n).string(), copy);
  }
  write_text(dir / "transforms.json",
             transforms({frame("images/a.png", 3), frame("images/b.png", 4)},
                        R"("fl_x": 14, "fl_y": 15, "cx": 8.5, "cy": 6, "w": 16, "h": 12, )"
                        R"("k1": 0.2, "p2": 0.01,)"));
  LoadOptions opts;
  opts.downscale = 2;
  const Dataset d = load_transforms(dir.string(), opts);
  ASSERT_EQ(d.train.size(), 1u);
  Lens lens;
  lens.k[0] = 0.2, lens.p2 = 0.01;
  const CameraIntrinsics in{7, 7.5, 4.25, 3, 8, 6};  // the w x h intrinsics at 8 x 6
  const CameraIntrinsics out = undistorted_camera(in, lens, true);
  const Image decoded = read_image((dir / "images_2/b.png").string());
  EXPECT_EQ(d.train[0].image.data, to_image8(undistort(decoded, in, lens, out)).data);
  EXPECT_EQ(d.train[0].camera.width, out.width);
  EXPECT_DOUBLE_EQ(d.train[0].camera.fx, 7.0);
}

TEST(Transforms, UncroppedUndistortionKeepsTheIntrinsics) {
  const auto dir = test::temp_dir("transforms_uncropped");
  write_rgb(dir / "images/a.png", 16, 12);
  write_rgb(dir / "images/b.png", 16, 12);
  write_text(dir / "transforms.json",
             transforms({frame("images/a.png", 3), frame("images/b.png", 4)},
                        R"("fl_x": 14, "fl_y": 15, "cx": 8.5, "cy": 6, "k1": 0.2,)"));
  LoadOptions opts;
  opts.crop_undistorted = false;
  const Dataset d = load_transforms(dir.string(), opts);
  EXPECT_EQ(d.train[0].camera.width, 16);
  EXPECT_DOUBLE_EQ(d.train[0].camera.cx, 8.5);
}

TEST(Transforms, FisheyeCaptureIsResampledToAPinhole) {
  const auto dir = test::temp_dir("transforms_fisheye");
  write_rgb(dir / "images/a.png", 32, 24);
  write_rgb(dir / "images/b.png", 32, 24);
  write_text(
      dir / "transforms.json",
      transforms({frame("images/a.png", 3), frame("images/b.png", 4)},
                 R"("camera_model": "OPENCV_FISHEYE", "fl_x": 12, "fl_y": 12, "cx": 16, "cy": 12,
                           "k1": 0.05, "k2": -0.01,)"));
  testing::internal::CaptureStderr();
  const Dataset d = load_transforms(dir.string(), LoadOptions{});
  EXPECT_MENTIONS(testing::internal::GetCapturedStderr(), "fisheye");
  Lens lens;
  lens.model = Lens::Model::Fisheye;
  lens.k = {0.05, -0.01, 0, 0};
  const CameraIntrinsics out = undistorted_camera({12, 12, 16, 12, 32, 24}, lens, true);
  EXPECT_EQ(d.train[0].camera.width, out.width);
  EXPECT_EQ(d.train[0].camera.height, out.height);
  EXPECT_DOUBLE_EQ(d.train[0].camera.cx, out.cx);
}

// ---- scene bounds and initialization -------------------------------------------------------

TEST(SceneBounds, RandomInitCoversTheBoundsAndAutoPrefersPoints) {
  Dataset d;
  d.bounds = SceneBounds{{10, -4, 2}, 3.0};
  ModelConfig cfg;
  cfg.init_points = 2000;
  cfg.init_extent = 1.5;
  const Gaussians g = initialize_model(cfg, d, 7);
  ASSERT_EQ(g.size(), 2000u);
  std::array<float, 3> lo{1e9f, 1e9f, 1e9f}, hi{-1e9f, -1e9f, -1e9f};
  for (std::size_t i = 0; i < g.size(); ++i) {
    for (int k = 0; k < 3; ++k) {
      lo[k] = std::min(lo[k], g.means[i * 3 + k]);
      hi[k] = std::max(hi[k], g.means[i * 3 + k]);
    }
  }
  for (int k = 0; k < 3; ++k) {
    const double c = d.bounds->center[k];
    EXPECT_GE(lo[k], c - 4.5);
    EXPECT_LE(hi[k], c + 4.5);
    EXPECT_LT(lo[k], c - 4.0);  // and fills it
    EXPECT_GT(hi[k], c + 4.0);
  }

  // model.init = auto takes the points when there are some.
  d.points = PointCloud{{1, 2, 3, 4, 5, 6}, {0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0.6f}};
  EXPECT_EQ(cfg.init, InitKind::Auto);
  EXPECT_EQ(initialize_model(cfg, d, 7).means, d.points->positions);
  cfg.init = InitKind::Random;
  EXPECT_EQ(initialize_model(cfg, d, 7).size(), 2000u);
}

TEST(SceneBounds, PointsBoxIgnoresOutliers) {
  Dataset d;
  PointCloud pc;
  for (int i = 0; i < 1000; ++i) {
    for (int k = 0; k < 3; ++k) pc.positions.push_back(float((i * (k + 3)) % 101) / 100.0f - 0.5f);
  }
  for (int k = 0; k < 3; ++k) pc.positions.push_back(1000.0f);  // one far outlier
  pc.colors.assign(pc.positions.size(), 0.5f);
  d.points = pc;
  const SceneBounds b = scene_bounds(d);
  EXPECT_NEAR(b.half_size, 0.5, 0.02);
  for (int k = 0; k < 3; ++k) EXPECT_NEAR(b.center[k], 0.0, 0.02);
}

}  // namespace
}  // namespace splat
