#include "train/metrics.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "cpu/loss.h"

namespace splat {

namespace {
std::vector<double> clamped(const Image& img) {
  std::vector<double> out(img.data.size());
  std::transform(img.data.begin(), img.data.end(), out.begin(),
                 [](float v) { return std::clamp(double(v), 0.0, 1.0); });
  return out;
}
void check_shapes(const Image& a, const Image& b) {
  if (a.width != b.width || a.height != b.height || a.channels != 3 || b.channels != 3)
    throw Error("metrics: render and target must be RGB images of the same size");
}
}  // namespace

double psnr(const Image& render, const Image& target) {
  check_shapes(render, target);
  double se = 0;
  for (std::size_t i = 0; i < render.data.size(); ++i) {
    const double d = std::clamp(double(render.data[i]), 0.0, 1.0) - double(target.data[i]);
    se += d * d;
  }
  const double mse = se / double(render.data.size());
  return 10.0 * std::log10(1.0 / std::max(mse, 1e-20));
}

double ssim(const Image& render, const Image& target) {
  check_shapes(render, target);
  const std::vector<double> t(target.data.begin(), target.data.end());
  return cpu::photometric_loss(clamped(render), t, render.width, render.height, 1.0, false).ssim;
}

}  // namespace splat
