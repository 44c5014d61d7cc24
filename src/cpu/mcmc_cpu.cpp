#include "cpu/mcmc_cpu.h"

#include <algorithm>
#include <cmath>

#include "core/math.h"
#include "cpu/project_cpu.h"
#include "engine/mcmc.h"

namespace splat::cpu {

void add_regularizer_grads(const Gaussians& params,
                           Gaussians& grads,
                           double opacity_reg,
                           double scale_reg) {
  const std::size_t n = params.size();
  if (n == 0) return;
  if (opacity_reg > 0)
    for (std::size_t i = 0; i < n; ++i) {
      const double s = sigmoid(double(params.raw_opacity[i]));
      grads.raw_opacity[i] += float(opacity_reg / double(n) * s * (1 - s));
    }
  if (scale_reg > 0)
    for (std::size_t i = 0; i < 3 * n; ++i)
      grads.log_scales[i] +=
          float(scale_reg / double(3 * n) * std::exp(double(params.log_scales[i])));
}

void inject_noise(Gaussians& params, double noise_scale, std::uint64_t seed) {
  const std::size_t n = params.size();
#pragma omp parallel for schedule(static)
  for (std::size_t i = 0; i < n; ++i) {
    const float* q = &params.quats[i * 4];
    const float qn = std::sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
    if (!(qn > 0)) continue;
    const Mat3<float> R = quat_to_rotmat(q[0] / qn, q[1] / qn, q[2] / qn, q[3] / qn);
    float z[3], s2[3];
    for (int k = 0; k < 3; ++k) {
      z[k] = mcmc::normal(seed, mcmc::kNoise, 3 * i + k);
      s2[k] = std::exp(2.0f * params.log_scales[i * 3 + k]);
    }
    // Sigma z = R diag(s^2) R^T z.
    float t[3];
    for (int k = 0; k < 3; ++k) t[k] = s2[k] * (R[0][k] * z[0] + R[1][k] * z[1] + R[2][k] * z[2]);
    const float gate = mcmc::noise_gate(sigmoid(params.raw_opacity[i]));
    for (int r = 0; r < 3; ++r)
      params.means[i * 3 + r] +=
          float(noise_scale) * gate * (R[r][0] * t[0] + R[r][1] * t[1] + R[r][2] * t[2]);
  }
}

}  // namespace splat::cpu
