#pragma once
// Pinhole camera, world-to-camera [R|t] with OpenCV axes (x right, y down, z forward).
// Pixel centers are at (x + 0.5, y + 0.5).
#include <array>

#include "core/math.h"

namespace splat {

struct Camera {
  int width = 0;
  int height = 0;
  double fx = 0, fy = 0, cx = 0, cy = 0;
  Mat3<double> R = Mat3<double>::identity();  // world -> camera rotation
  Vec3<double> t{};                           // world -> camera translation

  // Camera center in world coordinates: -R^T t.
  Vec3<double> center() const;

  // From a Blender/NeRF camera-to-world 4x4 (row-major; OpenGL axes: x right, y up, z back):
  // negate the camera y and z axes, then invert.
  static Camera from_c2w_opengl(const std::array<double, 16>& c2w,
                                int width,
                                int height,
                                double fx,
                                double fy,
                                double cx,
                                double cy);
  // From a world-to-camera 4x4 (row-major, OpenCV axes).
  static Camera from_w2c(const std::array<double, 16>& w2c,
                         int width,
                         int height,
                         double fx,
                         double fy,
                         double cx,
                         double cy);

  // The same camera for an image scaled by 1/factor (intrinsics scaled, sizes rounded down).
  Camera downscaled(int factor) const;
  // The same camera for the image resampled to w x h (intrinsics scaled by the size ratios).
  Camera resized(int w, int h) const;
};

}  // namespace splat
