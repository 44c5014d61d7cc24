// Fly-through camera paths (io/camera_path.h) and `splat render --path`.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <numbers>
#include <random>

#include "io/camera_path.h"
#include "io/image_io.h"
#include "io/ply.h"
#include "test_util.h"

namespace splat {
namespace {

namespace fs = std::filesystem;
using V = Vec3<double>;

Camera intrinsics() {
  Camera c;
  c.width = 40;
  c.height = 30;
  c.fx = c.fy = 35;
  c.cx = 20;
  c.cy = 15;
  return c;
}

// Training cameras on a circle of radius 4 at height 1 above the origin (z up), looking at it;
// every other one at `odd_height` instead.
Dataset ring(int n, double odd_height = 1) {
  Dataset d;
  for (int i = 0; i < n; ++i) {
    const double a = 2 * std::numbers::pi * i / n;
    View v;
    v.name = "c";
    v.name += std::to_string(i);  // (not "c" + ...: a false -Wrestrict in GCC 12)
    v.camera = look_at(intrinsics(), {4 * std::cos(a), 4 * std::sin(a), i % 2 ? odd_height : 1},
                       {0, 0, 0}, {0, 0, 1});
    d.train.push_back(v);
  }
  d.bounds = SceneBounds{{0, 0, 0}, 1.0};
  return d;
}

V forward(const Camera& c) {
  return {c.R[2][0], c.R[2][1], c.R[2][2]};
}

TEST(CameraPath, LookAtHasOpenCvAxes) {
  const Camera c = look_at(intrinsics(), {0, -4, 0}, {0, 0, 0}, {0, 0, 1});
  EXPECT_NEAR(forward(c).y, 1, 1e-12);  // z towards the target
  EXPECT_NEAR(c.R[1][2], -1, 1e-12);    // y down: the world's -z
  EXPECT_NEAR(c.R[0][0], 1, 1e-12);     // x right
  EXPECT_NEAR(norm(c.center() - V{0, -4, 0}), 0, 1e-12);
}

TEST(CameraPath, OrbitCirclesTheCentreAtTheCamerasHeightLookingAtIt) {
  const auto path = camera_path(ring(8), CameraPath::Orbit, 36);
  ASSERT_EQ(path.size(), 36u);
  for (std::size_t k = 0; k < path.size(); ++k) {
    const V c = path[k].center();
    EXPECT_NEAR(std::hypot(c.x, c.y), 4, 1e-9) << k;
    EXPECT_NEAR(c.z, 1, 1e-9) << k;
    EXPECT_NEAR(dot(forward(path[k]), normalize(-1.0 * c)), 1, 1e-12) << k;
    EXPECT_EQ(path[k].width, 40);
    const V next = path[(k + 1) % path.size()].center();
    EXPECT_NEAR(norm(next - c), 2 * 4 * std::sin(std::numbers::pi / 36), 1e-9)
        << k;  // equal steps, closed
  }
  EXPECT_NEAR(norm(path[0].center() - ring(8).train[0].camera.center()), 0,
              1e-9);  // starts at camera 0
}

TEST(CameraPath, SpiralSweepsTheCamerasHeights) {
  const auto path = camera_path(ring(8, 3), CameraPath::Spiral, 40);
  double lo = 1e9, hi = -1e9;
  for (const Camera& c : path) {
    lo = std::min(lo, c.center().z);
    hi = std::max(hi, c.center().z);
  }
  EXPECT_NEAR(lo, 1, 1e-9);
  EXPECT_NEAR(hi, 3, 1e-9);
}

TEST(CameraPath, ViewsPassesThroughEveryTrainingCamera) {
  const Dataset d = ring(5);
  const auto path = camera_path(d, CameraPath::Views, 9);  // cameras at frames 0, 2, 4, 6, 8
  ASSERT_EQ(path.size(), 9u);
  for (int i = 0; i < 5; ++i) {
    const Camera& want = d.train[i].camera;
    const Camera& got = path[2 * i];
    for (int r = 0; r < 3; ++r) {
      EXPECT_NEAR(got.t[r], want.t[r], 1e-9) << i;
      for (int c = 0; c < 3; ++c) EXPECT_NEAR(got.R[r][c], want.R[r][c], 1e-9) << i;
    }
  }
  // Half-way frames: halfway positions, a rotation halfway between (slerp).
  const V mid = path[1].center(), a = d.train[0].camera.center(), b = d.train[1].camera.center();
  EXPECT_NEAR(norm(mid - 0.5 * (a + b)), 0, 1e-9);
  EXPECT_NEAR(dot(forward(path[1]), forward(d.train[0].camera)),
              dot(forward(path[1]), forward(d.train[1].camera)), 1e-9);
}

TEST(CameraPath, BadInputIsAnError) {
  test::expect_contains(test::error_of([] { parse_camera_path("circle"); }),
                        {"--path circle", "orbit"});
  test::expect_contains(test::error_of([] { camera_path(Dataset{}, CameraPath::Orbit, 4); }),
                        {"no training cameras"});
  test::expect_contains(test::error_of([] { camera_path(ring(3), CameraPath::Orbit, 0); }),
                        {"--frames 0"});
}

// Random splats around the origin, where the demo scene's cameras look.
Gaussians blob_model(int n) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-0.6f, 0.6f);
  Gaussians g;
  g.sh_degree = 0;
  g.resize(n);
  for (int i = 0; i < n; ++i) {
    for (int k = 0; k < 3; ++k) {
      g.means[i * 3 + k] = u(rng);
      g.log_scales[i * 3 + k] = std::log(0.08f + 0.1f * std::abs(u(rng)));
      g.sh[i * 3 + k] = 3 * u(rng);
    }
    g.quats[i * 4] = 1;
    g.quats[i * 4 + 1] = u(rng);
    g.raw_opacity[i] = 2;
  }
  return g;
}

double mean_abs_difference(const Image& a, const Image& b) {
  double s = 0;
  for (std::size_t i = 0; i < a.data.size(); ++i) s += std::abs(a.data[i] - b.data[i]);
  return s / double(a.data.size());
}

TEST(RenderCli, PathWritesSmoothlyChangingFrames) {
  const fs::path dir = test::temp_dir("render_path");
  write_ply((dir / "model.ply").string(), blob_model(300));
  const auto r =
      test::run_splat("render " + (dir / "model.ply").string() + " " + test::small_demo_scene() +
                          " --path orbit --frames 24 --out " + (dir / "frames").string(),
                      120);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_MENTIONS(r.output, "rendered 24 frames");
  EXPECT_MENTIONS(r.output, fs::exists("/usr/bin/ffmpeg") ? "path.mp4" : "no MP4");
  std::vector<Image> frames;
  for (const auto& e : fs::directory_iterator(dir / "frames"))
    if (e.path().extension() == ".png") frames.push_back(read_image(e.path().string()));
  ASSERT_EQ(frames.size(), 24u);
  for (const Image& f : frames) {
    EXPECT_EQ(f.width, 64);
    EXPECT_EQ(f.height, 64);
  }
  // Read in name order: every step turns the same 15 degrees, so consecutive frames differ, and
  // by similar amounts (no jump), including from the last frame back to the first.
  frames.clear();
  for (int k = 0; k < 24; ++k) {
    char name[32];
    std::snprintf(name, sizeof name, "frame_%05d.png", k);
    frames.push_back(read_image((dir / "frames" / name).string()));
  }
  std::vector<double> steps;
  for (int k = 0; k < 24; ++k)
    steps.push_back(mean_abs_difference(frames[k], frames[(k + 1) % 24]));
  const auto [lo, hi] = std::minmax_element(steps.begin(), steps.end());
  EXPECT_GT(*lo, 1e-3);
  EXPECT_LT(*hi, 4 * *lo) << "a jump between consecutive frames";
  // A larger turn changes the picture more.
  EXPECT_GT(mean_abs_difference(frames[0], frames[3]), mean_abs_difference(frames[0], frames[1]));
}

}  // namespace
}  // namespace splat
