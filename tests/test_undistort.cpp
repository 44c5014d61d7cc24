// Lens models and their resampling to a pinhole (io/undistort.h), checked against formulas
// written out here and against images whose pixels hold their own coordinates.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>

#include "engine/target.h"
#include "io/dataset.h"
#include "io/image_io.h"
#include "io/undistort.h"
#include "test_util.h"

namespace splat {
namespace {

namespace fs = std::filesystem;

Lens radial_tangential(double k1, double k2, double p1, double p2, double k3 = 0) {
  Lens l;
  l.k = {k1, k2, k3, 0};
  l.p1 = p1, l.p2 = p2;
  return l;
}

Lens fisheye(double k1, double k2, double k3 = 0, double k4 = 0) {
  Lens l;
  l.model = Lens::Model::Fisheye;
  l.k = {k1, k2, k3, k4};
  return l;
}

Lens full_opencv() {  // COLMAP FULL_OPENCV: k1 k2 p1 p2 k3 k4 k5 k6
  Lens l = radial_tangential(-0.2, 0.05, 0.001, -0.002, 0.01);
  l.d = {0.03, -0.01, 0.002};
  return l;
}

TEST(Undistort, ForwardModelsFollowTheirFormulas) {
  const double x = 0.3, y = -0.2, r2 = x * x + y * y;
  double xd, yd;
  full_opencv().distort(x, y, xd, yd);
  const double radial = (1 - 0.2 * r2 + 0.05 * r2 * r2 + 0.01 * r2 * r2 * r2) /
                        (1 + 0.03 * r2 - 0.01 * r2 * r2 + 0.002 * r2 * r2 * r2);
  EXPECT_NEAR(xd, x * radial + 2 * 0.001 * x * y - 0.002 * (r2 + 2 * x * x), 1e-15);
  EXPECT_NEAR(yd, y * radial + 0.001 * (r2 + 2 * y * y) + 2 * -0.002 * x * y, 1e-15);

  fisheye(0.1, -0.02, 0.003, -0.0004).distort(x, y, xd, yd);
  const double r = std::sqrt(r2), t = std::atan(r), t2 = t * t;
  const double td =
      t * (1 + 0.1 * t2 - 0.02 * t2 * t2 + 0.003 * t2 * t2 * t2 - 0.0004 * t2 * t2 * t2 * t2);
  EXPECT_NEAR(xd, td / r * x, 1e-15);
  EXPECT_NEAR(yd, td / r * y, 1e-15);
  // An equidistant fisheye (no k) still bends rays: it is not a pinhole.
  EXPECT_FALSE(fisheye(0, 0).is_pinhole());
  EXPECT_TRUE(Lens{}.is_pinhole());
}

TEST(Undistort, InverseRecoversThePointForEveryModel) {
  const Lens lenses[] = {radial_tangential(0.1, 0, 0, 0),
                         radial_tangential(-0.25, 0.07, 0.002, -0.003), full_opencv(),
                         fisheye(0.05, -0.01), fisheye(-0.03, 0.004, 0.001, -0.0002)};
  for (const Lens& lens : lenses) {
    for (double x = -0.8; x <= 0.8; x += 0.1) {
      for (double y = -0.6; y <= 0.6; y += 0.1) {
        double xd, yd, u, v;
        lens.distort(x, y, xd, yd);
        ASSERT_TRUE(lens.undistort_point(xd, yd, u, v)) << x << "," << y;
        EXPECT_NEAR(u, x, 1e-9);
        EXPECT_NEAR(v, y, 1e-9);
      }
    }
  }
}

// An image whose channels hold its own array coordinates: bilinear sampling of it is exact, so
// each output pixel says where in the input it was sampled.
Image coordinate_image(int W, int H) {
  Image img(W, H, 3);
  for (int y = 0; y < H; ++y)
    for (int x = 0; x < W; ++x) img.at(x, y, 0) = float(x), img.at(x, y, 1) = float(y);
  return img;
}

// Every output pixel of `out` holds the input coordinate that the lens sends its center to.
void expect_samples_where_the_lens_sends(const CameraIntrinsics& in,
                                         const Lens& lens,
                                         const CameraIntrinsics& out,
                                         bool all_inside) {
  const Image res = undistort(coordinate_image(in.width, in.height), in, lens, out);
  ASSERT_EQ(res.width, out.width);
  ASSERT_EQ(res.height, out.height);
  int checked = 0;
  for (int v = 0; v < out.height; ++v) {
    for (int u = 0; u < out.width; ++u) {
      double xd, yd;
      lens.distort((u + 0.5 - out.cx) / out.fx, (v + 0.5 - out.cy) / out.fy, xd, yd);
      const double sx = in.fx * xd + in.cx - 0.5, sy = in.fy * yd + in.cy - 0.5;
      const bool inside = sx >= -0.5 && sy >= -0.5 && sx <= in.width - 0.5 && sy <= in.height - 0.5;
      if (all_inside) {
        EXPECT_TRUE(inside) << "output pixel " << u << "," << v << " samples " << sx << "," << sy;
      }
      if (sx < 0 || sy < 0 || sx > in.width - 1 || sy > in.height - 1) continue;  // edge repeated
      EXPECT_NEAR(res.at(u, v, 0), sx, 2e-3) << u << "," << v;
      EXPECT_NEAR(res.at(u, v, 1), sy, 2e-3) << u << "," << v;
      ++checked;
    }
  }
  EXPECT_GT(checked, out.width * out.height / 2);
}

TEST(Undistort, UncroppedKeepsTheIntrinsicsAndSamplesThroughTheLens) {
  const CameraIntrinsics in{35, 33, 19.0, 16.0, 40, 30};
  Lens lens = radial_tangential(0.08, -0.03, 0.004, -0.003, 0.01);
  lens.k[3] = 0.002;  // nerfstudio's fourth radial term
  const CameraIntrinsics out = undistorted_camera(in, lens, false);
  EXPECT_EQ(out.width, in.width);
  EXPECT_EQ(out.cx, in.cx);
  expect_samples_where_the_lens_sends(in, lens, out, false);
  EXPECT_EQ(
      undistort(coordinate_image(7, 5), {6, 6, 3.5, 2.5, 7, 5}, Lens{}, {6, 6, 3.5, 2.5, 7, 5})
          .data,
      coordinate_image(7, 5).data);
}

// Cropped: every output pixel sees only what the input saw, and the rectangle is the largest
// that does: one more column or row on any side would sample outside the input.
void expect_tight_crop(const CameraIntrinsics& in, const Lens& lens) {
  const CameraIntrinsics out = undistorted_camera(in, lens, true);
  expect_samples_where_the_lens_sends(in, lens, out, true);
  EXPECT_DOUBLE_EQ(out.fx, in.fx);
  const auto outside = [&](double u, double v) {
    double xd, yd;
    lens.distort((u - out.cx) / out.fx, (v - out.cy) / out.fy, xd, yd);
    const double px = in.fx * xd + in.cx, py = in.fy * yd + in.cy;  // pixel-edge coordinates
    return px < 0 || py < 0 || px > in.width || py > in.height;
  };
  // Pixel centers two pixels beyond each side of the output, along that whole side.
  bool left = false, right = false, top = false, bottom = false;
  for (int v = 0; v < out.height; ++v) {
    left |= outside(-1.5, v + 0.5);
    right |= outside(out.width + 1.5, v + 0.5);
  }
  for (int u = 0; u < out.width; ++u) {
    top |= outside(u + 0.5, -1.5);
    bottom |= outside(u + 0.5, out.height + 1.5);
  }
  EXPECT_TRUE(left && right && top && bottom) << out.width << "x" << out.height;
}

TEST(Undistort, CropIsTheLargestValidRectangle) {
  expect_tight_crop({35, 33, 19.0, 16.0, 40, 30},
                    radial_tangential(-0.15, 0.02, 0.003, -0.002));  // barrel
  expect_tight_crop({35, 33, 21.0, 14.0, 40, 30},
                    radial_tangential(0.12, 0.01, 0, 0));  // pincushion
  expect_tight_crop({40, 40, 32, 24, 64, 48}, full_opencv());
  expect_tight_crop({40, 40, 32, 24, 64, 48}, fisheye(0.05, -0.01));
}

TEST(Undistort, WideFisheyeIsReducedToTwiceTheInputSize) {
  // f = 24 on a 64x48 sensor: the whole left and right sides lie beyond Lens::kMaxFisheyeAngle
  // (75 degrees), so the corners' directions cut there bound the rectangle: 143 px wide at f,
  // more than twice the input's 64.
  const CameraIntrinsics in{24, 24, 32, 24, 64, 48};
  const Lens lens = fisheye(0, 0);
  const CameraIntrinsics out = undistorted_camera(in, lens, true);
  EXPECT_LE(out.width, 2 * in.width);
  EXPECT_LE(out.height, 2 * in.height);
  EXPECT_LT(out.fx, in.fx);
  expect_samples_where_the_lens_sends(in, lens, out, true);
}

TEST(Undistort, FoldingLensIsAnError) {
  // k1 = -1.5 folds the image back on itself before its border: no inverse there.
  const std::string msg = test::error_of([] {
    undistorted_camera({10, 10, 32, 24, 64, 48}, radial_tangential(-1.5, 0, 0, 0), true);
  });
  EXPECT_MENTIONS(msg, "cannot be inverted");
  EXPECT_MENTIONS(msg, "crop_undistorted = false");
}

// A COLMAP scene whose images were taken through an OPENCV lens: the pinhole images the
// loader makes must show the scene where the pinhole model puts it. The scene is a smooth
// function of the viewing direction, so the check is exact up to bilinear sampling.
double scene_value(double x, double y, int c) {
  return 0.5 + 0.4 * std::sin(3 * x + c) * std::cos(2 * y - c);
}

TEST(Colmap, OpenCvCameraImagesAreResampledToThePinholeOfTheModel) {
  const int W = 64, H = 48;
  const double fx = 50, fy = 52, cx = 31, cy = 25;
  const Lens lens = radial_tangential(-0.12, 0.03, 0.002, -0.001);
  // The distorted photo: each pixel center's undistorted direction, looked up in the scene.
  Image photo(W, H, 3);
  for (int v = 0; v < H; ++v)
    for (int u = 0; u < W; ++u) {
      double x, y;
      ASSERT_TRUE(lens.undistort_point((u + 0.5 - cx) / fx, (v + 0.5 - cy) / fy, x, y));
      for (int c = 0; c < 3; ++c) photo.at(u, v, c) = float(scene_value(x, y, c));
    }
  const fs::path dir = test::temp_dir("colmap_opencv_resampled");
  fs::create_directories(dir / "images");
  fs::create_directories(dir / "sparse/0");
  std::string images;
  for (int k = 0; k < 3; ++k) {
    const std::string name = "v" + std::to_string(k) + ".png";
    write_png((dir / "images" / name).string(), photo);
    images += std::to_string(k + 1) + " 1 0 0 0 0 0 " + std::to_string(k) + " 1 " + name + "\n\n";
  }
  std::ofstream(dir / "sparse/0/cameras.txt")
      << "1 OPENCV 64 48 50 52 31 25 -0.12 0.03 0.002 -0.001\n";
  std::ofstream(dir / "sparse/0/images.txt") << images;
  std::ofstream(dir / "sparse/0/points3D.txt") << "";
  LoadOptions opts;
  opts.holdout_every = 3;
  testing::internal::CaptureStderr();
  const Dataset d = load_colmap(dir.string(), opts);
  testing::internal::GetCapturedStderr();
  const CameraIntrinsics out = undistorted_camera({fx, fy, cx, cy, W, H}, lens, true);
  const View& view = d.train[0];
  ASSERT_EQ(view.camera.width, out.width);
  ASSERT_EQ(view.camera.height, out.height);
  EXPECT_DOUBLE_EQ(view.camera.cx, out.cx);
  EXPECT_DOUBLE_EQ(view.camera.fy, out.fy);
  double worst = 0;  // the PNG's 8 bits and bilinear sampling of a smooth image
  const Image image = target_image(view.image);
  for (int v = 0; v < out.height; ++v)
    for (int u = 0; u < out.width; ++u)
      for (int c = 0; c < 3; ++c) {
        const double x = (u + 0.5 - out.cx) / out.fx, y = (v + 0.5 - out.cy) / out.fy;
        worst = std::max(worst, std::abs(image.at(u, v, c) - scene_value(x, y, c)));
      }
  EXPECT_LT(worst, 0.02);
}

}  // namespace
}  // namespace splat
