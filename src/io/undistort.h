#pragma once
// Lens undistortion for inputs that carry distortion coefficients (instant-ngp / nerfstudio
// transforms.json). The renderer models an ideal pinhole camera only.
#include "core/image.h"

namespace splat {

// The OpenCV radial-tangential model (Brown-Conrady), with nerfstudio's fourth radial term. For
// normalized pinhole coordinates (x, y), r^2 = x^2 + y^2:
//   x_d = x (1 + k1 r^2 + k2 r^4 + k3 r^6 + k4 r^8) + 2 p1 x y + p2 (r^2 + 2 x^2)
//   y_d = y (1 + k1 r^2 + k2 r^4 + k3 r^6 + k4 r^8) + p1 (r^2 + 2 y^2) + 2 p2 x y
struct LensDistortion {
  double k1 = 0, k2 = 0, k3 = 0, k4 = 0, p1 = 0, p2 = 0;
  bool is_zero() const { return k1 == 0 && k2 == 0 && k3 == 0 && k4 == 0 && p1 == 0 && p2 == 0; }
  // (x, y) -> (x_d, y_d) above.
  void apply(double x, double y, double& xd, double& yd) const;
};

// The pinhole image with the same intrinsics (fx, fy, cx, cy in pixels, pixel centers at +0.5)
// as `img`, which was taken through `lens`: each output pixel center goes through the forward
// model and the input is sampled there bilinearly (what OpenCV's initUndistortRectifyMap + remap
// do when the camera matrix is kept). Samples beyond the input repeat its edge pixels.
Image undistort(
    const Image& img, double fx, double fy, double cx, double cy, const LensDistortion& lens);

}  // namespace splat
