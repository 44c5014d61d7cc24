#include "cpu/adc_cpu.h"

#include <string>

#include "core/error.h"

namespace splat::cpu {

void adc_accumulate(adc::Stats& stats,
                    const std::vector<int>& radii,
                    const std::vector<float>& v_means2d,
                    int width,
                    int height,
                    const std::vector<float>& v_means2d_abs) {
  const std::size_t n = stats.size();
  const bool abs = !v_means2d_abs.empty();
  if (radii.size() != 2 * n || v_means2d.size() != 2 * n || stats.grad2d.size() != n ||
      (abs && v_means2d_abs.size() != 2 * n))
    throw Error("adc_accumulate: statistics for " + std::to_string(n) + " splats, radii for " +
                std::to_string(radii.size() / 2) + ", gradients for " +
                std::to_string(v_means2d.size() / 2) +
                (abs ? ", absolute gradients for " + std::to_string(v_means2d_abs.size() / 2)
                     : std::string()));
  if (abs && stats.grad2d_abs.size() != n) stats.grad2d_abs.assign(n, 0.0f);
  const float half_w = 0.5f * float(width), half_h = 0.5f * float(height);
  for (std::size_t i = 0; i < n; ++i) {
    if (!adc::visible(&radii[2 * i])) continue;
    stats.grad2d[i] += adc::grad2d_norm(v_means2d[2 * i], v_means2d[2 * i + 1], half_w, half_h);
    if (abs)
      stats.grad2d_abs[i] +=
          adc::grad2d_norm(v_means2d_abs[2 * i], v_means2d_abs[2 * i + 1], half_w, half_h);
    stats.count[i] += 1;
  }
}

}  // namespace splat::cpu
