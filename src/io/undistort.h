#pragma once
// Lens models of the inputs (COLMAP cameras, transforms.json) and their resampling to the ideal
// pinhole camera the renderer models. Both loaders go through here: the images are undistorted
// once at load time, so training pays nothing per step.
#include <array>

#include "core/image.h"

namespace splat {

// How a lens maps normalized pinhole coordinates (x, y) = ((u - cx) / fx, (v - cy) / fy) to
// the distorted ones it recorded.
//   RadialTangential (OpenCV; COLMAP SIMPLE_RADIAL, RADIAL, OPENCV, FULL_OPENCV; nerfstudio's
//   fourth radial term), r^2 = x^2 + y^2:
//     radial = (1 + k1 r^2 + k2 r^4 + k3 r^6 + k4 r^8) / (1 + d1 r^2 + d2 r^4 + d3 r^6)
//     x_d = x radial + 2 p1 x y + p2 (r^2 + 2 x^2),  y_d = y radial + p1 (r^2 + 2 y^2) + 2 p2 x y
//   Fisheye (Kannala-Brandt as OpenCV's fisheye module; COLMAP OPENCV_FISHEYE,
//   SIMPLE_RADIAL_FISHEYE, RADIAL_FISHEYE), theta = atan(r):
//     theta_d = theta (1 + k1 theta^2 + k2 theta^4 + k3 theta^6 + k4 theta^8)
//     (x_d, y_d) = theta_d / r (x, y)
struct Lens {
  enum class Model { RadialTangential, Fisheye };
  Model model = Model::RadialTangential;
  std::array<double, 4> k{};  // k1..k4, of r^2..r^8 or theta^2..theta^8
  std::array<double, 3> d{};  // d1..d3: FULL_OPENCV's rational denominator (its k4, k5, k6)
  double p1 = 0, p2 = 0;

  // An ideal pinhole: nothing to resample.
  bool is_pinhole() const;
  void distort(double x, double y, double& xd, double& yd) const;
  // The inverse of distort (Newton's method); false where it does not converge. A fisheye sees
  // beyond the pinhole's 180 degrees: directions past kMaxFisheyeAngle come back on that cone.
  bool undistort_point(double xd, double yd, double& x, double& y) const;
  static constexpr double kMaxFisheyeAngle = 1.3089969389957472;  // 75 degrees, in radians
};

// A pinhole camera's intrinsics in pixels (pixel centers at +0.5) and its image size.
struct CameraIntrinsics {
  double fx = 0, fy = 0, cx = 0, cy = 0;
  int width = 0, height = 0;
};

// The pinhole camera that `in` (taken through `lens`) is resampled to. With crop: the same focal
// lengths and the largest axis-aligned image that sees only what the input saw (no border
// pixels invented), at most twice the input size per side (a wide fisheye is reduced to fit).
// Without crop: `in` itself; samples beyond the input repeat its edge pixels. Throws
// splat::Error naming cx or cy when a lens camera's principal point lies outside the image, and
// naming the distortion terms when the lens cannot be inverted at the border or the crop keeps
// less than kMinKeptSide of the input's width or height.
constexpr double kMinKeptSide = 0.5;
CameraIntrinsics undistorted_camera(const CameraIntrinsics& in, const Lens& lens, bool crop);

// The image of `out` from `img` of `in`: each output pixel center goes through the lens and
// the input is sampled there bilinearly (OpenCV's initUndistortRectifyMap + remap).
Image undistort(const Image& img,
                const CameraIntrinsics& in,
                const Lens& lens,
                const CameraIntrinsics& out);

}  // namespace splat
