#pragma once
// Mip-Splatting's 3D smoothing filter (Yu et al., CVPR 2024, "Mip-Splatting: Alias-free 3D
// Gaussian Splatting", section 5.1). A splat cannot hold detail finer than the highest rate at
// which any training camera sampled it, nu = max over the cameras that see its centre of
// focal / depth (pixels per world unit), so its 3D covariance is convolved with an isotropic
// Gaussian low-pass of variance s / nu^2 (s = 0.2, the paper's value):
//   Sigma' = Sigma + (s / nu^2) I,   opacity' = opacity * sqrt(det Sigma / det Sigma').
// With Sigma = R diag(scale^2) R^T the filtered covariance keeps the rotation, so the filter is
// exactly scale' = sqrt(scale^2 + var) per axis and an opacity factor prod(scale / scale'): that
// is how both backends apply it and how model.ply bakes it for viewers that do not know it.
// The variances are a per-splat buffer recomputed from the training cameras (not trained).
// Plain inline functions, callable from host code and CUDA kernels, so both backends agree.
#include <cmath>

#include "engine/hd.h"

namespace splat::filter3d {

namespace config {
inline constexpr float scale = 0.2f;  // s: the filter variance is s / nu^2 (the paper's value)
// A centre up to this fraction of the image size outside the image still counts as seen
// (the splat's footprint reaches into the image); the paper's code uses the same margin.
inline constexpr float margin = 0.15f;
}  // namespace config

// The sampling rate (pixels per world unit) of one pinhole camera at a point p_cam in its camera
// space, or 0 when the camera does not see it: behind the near plane (`near`) or with its
// projection more than `margin` of the image size outside the image.
SPLAT_HD inline float sampling_rate(const float p_cam[3],
                                    float fx,
                                    float fy,
                                    float cx,
                                    float cy,
                                    int width,
                                    int height,
                                    float near) {
  const float z = p_cam[2];
  if (!(z > near)) return 0.0f;
  const float u = fx * p_cam[0] / z + cx, v = fy * p_cam[1] / z + cy;
  const float W = float(width), H = float(height);
  if (!(u >= -config::margin * W && u <= (1.0f + config::margin) * W && v >= -config::margin * H &&
        v <= (1.0f + config::margin) * H))
    return 0.0f;
  return fmaxf(fx, fy) / z;
}

// The filter variance of a splat whose highest sampling rate is `rate`; a splat no camera sees
// takes `fallback_rate`, the lowest rate among the splats that are seen (the widest filter
// training ever applied, as in the paper's code). 0 when no splat is seen at all.
SPLAT_HD inline float variance(float rate, float fallback_rate) {
  const float nu = rate > 0.0f ? rate : fallback_rate;
  return nu > 0.0f ? config::scale / (nu * nu) : 0.0f;
}

}  // namespace splat::filter3d
