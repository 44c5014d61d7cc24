#include "engine/filter3d_host.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/error.h"
#include "engine/filter3d.h"
#include "engine/settings.h"

namespace splat::filter3d {

std::vector<float> variances(std::span<const float> means, std::span<const Camera> cameras) {
  const std::size_t n = means.size() / 3;
  std::vector<float> rate(n, 0.0f);
  for (const Camera& cam : cameras) {
    float R[9], t[3];
    for (int r = 0; r < 3; ++r) {
      for (int c = 0; c < 3; ++c) R[r * 3 + c] = float(cam.R[r][c]);
      t[r] = float(cam.t[r]);
    }
#pragma omp parallel for schedule(static)
    for (std::size_t i = 0; i < n; ++i) {
      const float* m = &means[i * 3];
      float p[3];
      for (int r = 0; r < 3; ++r)
        p[r] = R[r * 3] * m[0] + R[r * 3 + 1] * m[1] + R[r * 3 + 2] * m[2] + t[r];
      rate[i] = std::max(
          rate[i], sampling_rate(p, float(cam.fx), float(cam.fy), float(cam.cx), float(cam.cy),
                                 cam.width, cam.height, ::splat::config::near_plane));
    }
  }
  float fallback = 0.0f;  // the lowest rate of a seen splat
  for (const float r : rate)
    if (r > 0.0f && (fallback == 0.0f || r < fallback)) fallback = r;
  std::vector<float> var(n);
  for (std::size_t i = 0; i < n; ++i) var[i] = variance(rate[i], fallback);
  return var;
}

Gaussians bake(const Gaussians& g, std::span<const float> var) {
  if (var.empty()) return g;
  if (var.size() != g.size())
    throw Error("3D filter: " + std::to_string(var.size()) + " filter variances for " +
                std::to_string(g.size()) + " splats");
  Gaussians out = g;
  for (std::size_t i = 0; i < g.size(); ++i) {
    double log_factor = 0;  // log prod(scale / scale')
    for (int k = 0; k < 3; ++k) {
      const double ls = g.log_scales[i * 3 + k];
      const double s2 = std::exp(2 * ls), filtered = 0.5 * std::log(s2 + double(var[i]));
      out.log_scales[i * 3 + k] = float(filtered);
      log_factor += ls - filtered;
    }
    // sigmoid(raw') = sigmoid(raw) * f  =>  raw' = log(o f / (1 - o f)).
    const double o = 1 / (1 + std::exp(-double(g.raw_opacity[i])));
    const double of = o * std::exp(log_factor);
    out.raw_opacity[i] = float(std::log(of) - std::log1p(-of));
  }
  return out;
}

}  // namespace splat::filter3d
