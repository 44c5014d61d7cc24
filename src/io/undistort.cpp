#include "io/undistort.h"

#include <algorithm>
#include <cmath>

namespace splat {

void LensDistortion::apply(double x, double y, double& xd, double& yd) const {
  const double r2 = x * x + y * y;
  const double radial = 1 + r2 * (k1 + r2 * (k2 + r2 * (k3 + r2 * k4)));
  xd = x * radial + 2 * p1 * x * y + p2 * (r2 + 2 * x * x);
  yd = y * radial + p1 * (r2 + 2 * y * y) + 2 * p2 * x * y;
}

Image undistort(
    const Image& img, double fx, double fy, double cx, double cy, const LensDistortion& lens) {
  Image out(img.width, img.height, img.channels);
  const int W = img.width, H = img.height, C = img.channels;
  const float* src = img.data.data();
#pragma omp parallel for schedule(static)
  for (int v = 0; v < H; ++v) {
    float* dst = out.data.data() + std::size_t(v) * W * C;
    const double y = (v + 0.5 - cy) / fy;
    for (int u = 0; u < W; ++u, dst += C) {
      double xd, yd;
      lens.apply((u + 0.5 - cx) / fx, y, xd, yd);
      // Back to array coordinates (pixel (i, j) has its center at (i + 0.5, j + 0.5)).
      const double sx = std::clamp(fx * xd + cx - 0.5, 0.0, double(W - 1));
      const double sy = std::clamp(fy * yd + cy - 0.5, 0.0, double(H - 1));
      const int x0 = int(sx), y0 = int(sy);
      const int dx = x0 + 1 < W ? C : 0;
      const std::size_t dy = y0 + 1 < H ? std::size_t(W) * C : 0;
      const float ax = float(sx - x0), ay = float(sy - y0);
      const float* p = src + (std::size_t(y0) * W + x0) * C;
      for (int c = 0; c < C; ++c) {
        const float top = p[c] + ax * (p[c + dx] - p[c]);
        const float bot = p[c + dy] + ax * (p[c + dy + dx] - p[c + dy]);
        dst[c] = top + ay * (bot - top);
      }
    }
  }
  return out;
}

}  // namespace splat
