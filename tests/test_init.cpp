// Random initialization of captures without sparse points or scene bounds: a forward-facing rig
// (cameras on a plane, all looking one way, as LLFF captures) starts in front of its cameras,
// inside their views; an inward-facing rig and explicit bounds start where they always did; a
// rig that places nothing gets a warning; and a generated forward-facing transforms.json capture
// trains to a sensible held-out PSNR.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/crc32c.h"
#include "core/rng.h"
#include "engine/backend.h"
#include "io/dataset.h"
#include "io/image_io.h"
#include "test_util.h"
#include "train/backend_factory.h"
#include "train/init.h"
#include "train/metrics.h"
#include "train/trainer.h"

namespace splat {
namespace {

namespace fs = std::filesystem;
using V = Vec3<double>;

constexpr int kW = 64, kH = 48;
constexpr double kFocal = 55.4;  // about 60 degrees of horizontal field of view

// A camera-to-world matrix in OpenGL axes (as transforms.json holds it) at `center`, turned by
// `yaw` radians about world y, then `pitch` about its x; 0 and 0 look down world -z with y up.
std::array<double, 16> c2w(V center, double yaw = 0, double pitch = 0) {
  const double c = std::cos(yaw), s = std::sin(yaw), cp = std::cos(pitch), sp = std::sin(pitch);
  return {c,  s * sp, s * cp, center.x, 0, cp, -sp, center.y,
          -s, c * sp, c * cp, center.z, 0, 0,  0,   1};
}

// A rig's camera: 64 x 48 pixels, centered principal point.
Camera camera_at(const std::array<double, 16>& c2w) {
  return Camera::from_c2w_opengl(c2w, kW, kH, kFocal, kFocal, kW / 2.0, kH / 2.0);
}

// An LLFF-style rig, 1 unit wide: 4 x 5 cameras on the plane z = 0, 0.25 apart, looking down -z
// within 2 degrees (the pose noise of a handheld capture: their axes meet nowhere, but do have
// a least-squares point, 0.4 units in front, that no camera looks at).
std::vector<std::array<double, 16>> forward_rig_poses() {
  std::vector<std::array<double, 16>> out;
  Rng rng(0);
  const double jitter = 2 * M_PI / 180;
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 5; ++c) {
      const double yaw = jitter * (2 * rng.uniform() - 1), pitch = jitter * (2 * rng.uniform() - 1);
      out.push_back(c2w({(c - 2) * 0.25, (r - 1.5) * 0.25, 0}, yaw, pitch));
    }
  return out;
}

Dataset rig(const std::vector<Camera>& cameras) {
  Dataset d;
  for (const Camera& c : cameras) d.train.push_back(View{"", "", c, {}});
  return d;
}

std::vector<Camera> forward_rig() {
  std::vector<Camera> out;
  for (const auto& pose : forward_rig_poses()) out.push_back(camera_at(pose));
  return out;
}

// Cameras on two rings of radius 4 around `target`, all looking at it.
std::vector<Camera> inward_rig(V target) {
  std::vector<Camera> out;
  for (int i = 0; i < 16; ++i) {
    const double yaw = 2 * M_PI * i / 16, height = (i % 2 ? 1.5 : -0.5);
    const V eye = target + V{4 * std::sin(yaw), height, 4 * std::cos(yaw)};
    // OpenGL axes: z points back, away from the target.
    const V z = normalize(eye - target), x = normalize(cross(V{0, 1, 0}, z)), y = cross(z, x);
    out.push_back(Camera::from_c2w_opengl(
        {x.x, y.x, z.x, eye.x, x.y, y.y, z.y, eye.y, x.z, y.z, z.z, eye.z, 0, 0, 0, 1}, kW, kH,
        kFocal, kFocal, kW / 2.0, kH / 2.0));
  }
  return out;
}

V camera_space(const Camera& c, const float* p) {
  return c.R * V{p[0], p[1], p[2]} + c.t;
}

bool in_view(const Camera& c, const float* p) {
  const V q = camera_space(c, p);
  const double u = c.fx * q.x / q.z + c.cx, v = c.fy * q.y / q.z + c.cy;
  return q.z > 0 && u >= 0 && u <= c.width && v >= 0 && v <= c.height;
}

std::uint32_t means_crc(const Gaussians& g) {
  return crc32c(0, g.means.data(), g.means.size() * sizeof(float));
}

ModelConfig random_init(std::int64_t n) {
  ModelConfig cfg;
  cfg.init_points = n;
  return cfg;
}

TEST(Init, ForwardFacingRigStartsInFrontOfTheCamerasInsideTheirViews) {
  const std::vector<Camera> cams = forward_rig();
  const Dataset d = rig(cams);
  testing::internal::CaptureStderr();
  const Gaussians g = initialize_model(random_init(3000), d, 7);
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");  // placed with confidence
  ASSERT_EQ(g.size(), 3000u);
  std::vector<double> depths;
  for (std::size_t i = 0; i < g.size(); ++i) {
    const float* p = &g.means[i * 3];
    bool seen = false;
    for (const Camera& c : cams) {
      ASSERT_GT(camera_space(c, p).z, 0.0) << "splat " << i << " behind a camera";
      seen = seen || in_view(c, p);
    }
    EXPECT_TRUE(seen) << "splat " << i << " outside every view";
    depths.push_back(-p[2]);
  }
  // At depths of several rig widths (1 unit), not among the cameras: the 5th percentile beyond
  // the rig's width, the median a few widths out, a tail far behind.
  std::sort(depths.begin(), depths.end());
  EXPECT_GT(depths[depths.size() / 20], 1.0);
  EXPECT_GT(depths[depths.size() / 2], 2.0);
  EXPECT_LT(depths[depths.size() / 2], 10.0);
  EXPECT_GT(depths.back(), 50.0);

  // Same seed, same init; another seed, another.
  const Gaussians again = initialize_model(random_init(3000), d, 7);
  test::expect_bit_identical(g, again);
  EXPECT_NE(initialize_model(random_init(3000), d, 8).means, g.means);
}

// The inward-facing rig's cube around the point the cameras look at, and an explicit bounds
// cube (NeRF-synthetic's, which configs/lego.toml uses), bit for bit as before the forward-facing
// init (the CRCs were taken on the code before it).
TEST(Init, InwardFacingRigAndExplicitBoundsStartAsBefore) {
  const Dataset inward = rig(inward_rig({1, -2, 0.5}));
  const SceneBounds b = scene_bounds(inward);
  EXPECT_LT(norm(b.center - V{1, -2, 0.5}), 1e-6);
  testing::internal::CaptureStderr();
  const Gaussians g = initialize_model(random_init(500), inward, 3);
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
  EXPECT_EQ(means_crc(g), 0x53946d24u) << std::hex << means_crc(g);

  Dataset lego = inward;
  lego.bounds = SceneBounds{};
  ModelConfig cfg = random_init(500);
  cfg.init_extent = 1.3;
  EXPECT_EQ(means_crc(initialize_model(cfg, lego, 42)), 0xa57a88abu)
      << std::hex << means_crc(initialize_model(cfg, lego, 42));
}

TEST(Init, RigThatPlacesNothingWarnsWhatWouldPlaceIt) {
  // Cameras on a ring looking outward (a panorama): they neither meet nor face one way.
  std::vector<Camera> out;
  for (int i = 0; i < 12; ++i) out.push_back(camera_at(c2w({0, 0, 0}, 2 * M_PI * i / 12)));
  for (Camera& c : out) c.t = c.t - V{0, 0, 0.5};  // each 0.5 forward: a circle of radius 0.5
  testing::internal::CaptureStderr();
  const Gaussians g = initialize_model(random_init(200), rig(out), 1);
  std::string log = testing::internal::GetCapturedStderr();
  EXPECT_EQ(log.rfind("warning: the 12 training cameras neither look at one point", 0), 0u) << log;
  test::expect_contains(log, {"aabb_scale", "sparse points", "model.init_extent"});
  EXPECT_EQ(g.size(), 200u);

  // One camera: it faces one way, but no baseline gives a depth.
  testing::internal::CaptureStderr();
  initialize_model(random_init(200), rig({camera_at(c2w({0, 0, 0}))}), 1);
  log = testing::internal::GetCapturedStderr();
  EXPECT_MENTIONS(log, "sit at one spot");
}

// The generated capture of the training test: a textured wall 8 units in front of a 4 x 5 rig
// 1 unit wide and three coloured cards at depths 3, 4.5 and 6 (content 3 to 8 rig widths away,
// as in LLFF captures), drawn by the CPU backend and written as transforms.json without points
// or aabb.
Gaussians forward_scene() {
  Gaussians g;
  g.sh_degree = 0;
  auto add = [&](V p, V scale, V color) {
    for (int k = 0; k < 3; ++k) {
      g.means.push_back(float(p[k]));
      g.log_scales.push_back(float(std::log(scale[k])));
      g.sh.push_back(float((color[k] - 0.5) / 0.28209479177387814));
    }
    g.quats.insert(g.quats.end(), {1, 0, 0, 0});
    g.raw_opacity.push_back(5.0f);
  };
  for (double x = -6; x <= 6; x += 0.2)
    for (double y = -4.6; y <= 4.6; y += 0.2) {
      const bool dark = (int(std::floor(x)) + int(std::floor(y))) % 2 != 0;
      const double shade = 0.5 + 0.4 * std::sin(2.3 * x + 1.7 * y);
      add({x, y, -8}, {0.12, 0.12, 0.01},
          dark ? V{0.2, 0.3 * shade, 0.6} : V{0.9, 0.5 + 0.4 * shade, 0.3});
    }
  const V cards[3][2] = {{{-0.8, 0.4, -3}, {0.9, 0.1, 0.1}},
                         {{0.9, -0.3, -4.5}, {0.1, 0.8, 0.2}},
                         {{0.0, 0.9, -6}, {0.95, 0.95, 0.2}}};
  for (const auto& [center, color] : cards)
    for (double x = -0.5; x <= 0.5; x += 0.08)
      for (double y = -0.4; y <= 0.4; y += 0.08)
        add(center + V{x, y, 0}, {0.05, 0.05, 0.01}, color * (0.75 + 0.25 * std::cos(9 * x * y)));
  return g;
}

// The capture's directory: images/00.png ... 19.png (the rig row by row) and transforms.json.
fs::path write_forward_capture() {
  const fs::path dir = test::temp_dir("forward_capture");
  BackendConfig bc;
  bc.type = BackendKind::Cpu;
  auto backend = make_backend(bc);
  TrainState scene;
  scene.params = scene.adam_m = scene.adam_v = forward_scene();
  backend->set_state(scene);
  RasterSettings rs;
  rs.sh_degree = 0;
  nlohmann::json frames = nlohmann::json::array();
  const std::vector<std::array<double, 16>> poses = forward_rig_poses();
  fs::create_directories(dir / "images");
  for (std::size_t i = 0; i < poses.size(); ++i) {
    char name[32];
    std::snprintf(name, sizeof name, "images/%02zu.png", i);
    write_png((dir / name).string(), backend->render(camera_at(poses[i]), rs));
    const std::array<double, 16>& m = poses[i];
    nlohmann::json rows = nlohmann::json::array();
    for (int r = 0; r < 4; ++r)
      rows.push_back({m[r * 4], m[r * 4 + 1], m[r * 4 + 2], m[r * 4 + 3]});
    frames.push_back({{"file_path", name}, {"transform_matrix", rows}});
  }
  const nlohmann::json doc = {{"fl_x", kFocal},  {"fl_y", kFocal}, {"cx", kW / 2.0},
                              {"cy", kH / 2.0},  {"w", kW},        {"h", kH},
                              {"frames", frames}};
  std::ofstream(dir / "transforms.json") << doc.dump(1);
  return dir;
}

double held_out_psnr(const Dataset& data) {
  Config cfg = test::short_cpu_training(300);
  cfg.model.init_points = 3000;
  return test::held_out_psnr(cfg, data);
}

// 300 steps from the init in the cameras' views, and from the cube around the cameras that was
// the init before (the same cube given as scene bounds). Measured here: 17.60 dB against
// 12.00 dB (without the pose noise, 18.56 against 12.01; from a cube around the scene itself,
// which nothing in a capture without points gives, 20.37); 18 s on 2 idle cores.
TEST(InitSlow, ForwardFacingCaptureTrainsToASensiblePsnr) {
  const Dataset data = load_transforms(write_forward_capture().string(), LoadOptions{});
  ASSERT_EQ(data.train.size(), 17u);
  ASSERT_EQ(data.test.size(), 3u);
  ASSERT_FALSE(data.points || data.bounds);
  const double psnr = held_out_psnr(data);
  Dataset around_the_cameras = data;
  around_the_cameras.bounds = scene_bounds(data);
  const double psnr_before = held_out_psnr(around_the_cameras);
  std::printf("held-out PSNR: %.2f dB (the cube around the cameras: %.2f dB)\n", psnr, psnr_before);
  EXPECT_GT(psnr, 16.0);
  EXPECT_GT(psnr, psnr_before + 4.0);
}

}  // namespace
}  // namespace splat
