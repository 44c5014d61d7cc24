#include "train/metrics.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "core/error.h"
#include "cpu/loss_cpu.h"

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

// Solves m x = b for a symmetric positive definite 4x4 m (Cholesky).
std::array<double, 4> solve_spd4(std::array<std::array<double, 4>, 4> m, std::array<double, 4> b) {
  for (int j = 0; j < 4; ++j) {
    for (int k = 0; k < j; ++k) m[j][j] -= m[j][k] * m[j][k];
    m[j][j] = std::sqrt(m[j][j]);
    for (int i = j + 1; i < 4; ++i) {
      for (int k = 0; k < j; ++k) m[i][j] -= m[i][k] * m[j][k];
      m[i][j] /= m[j][j];
    }
  }
  for (int i = 0; i < 4; ++i) {  // L y = b
    for (int k = 0; k < i; ++k) b[i] -= m[i][k] * b[k];
    b[i] /= m[i][i];
  }
  for (int i = 3; i >= 0; --i) {  // L^T x = y
    for (int k = i + 1; k < 4; ++k) b[i] -= m[k][i] * b[k];
    b[i] /= m[i][i];
  }
  return b;
}
}  // namespace

Image color_corrected(const Image& render, const Image& target) {
  check_shapes(render, target);
  const std::size_t pixels = render.data.size() / 3;
  auto features = [&](std::size_t p) {
    std::array<double, 4> x{1, 1, 1, 1};
    for (int c = 0; c < 3; ++c) x[c] = std::clamp(double(render.data[3 * p + c]), 0.0, 1.0);
    return x;
  };
  // Normal equations of target_c ~ w_c . [r g b 1], one system per channel c sharing x^T x, plus
  // ridge * |w_c - identity_c|^2 (identity_c: 1 at c).
  std::array<std::array<double, 4>, 4> xtx{};
  std::array<std::array<double, 4>, 3> xtt{};
  for (std::size_t p = 0; p < pixels; ++p) {
    const std::array<double, 4> x = features(p);
    for (int j = 0; j < 4; ++j) {
      for (int k = 0; k < 4; ++k) xtx[j][k] += x[j] * x[k];
      for (int c = 0; c < 3; ++c) xtt[c][j] += x[j] * double(target.data[3 * p + c]);
    }
  }
  const double ridge = 1e-6 * double(std::max<std::size_t>(pixels, 1));
  for (int j = 0; j < 4; ++j) xtx[j][j] += ridge;
  std::array<std::array<double, 4>, 3> w;
  for (int c = 0; c < 3; ++c) {
    xtt[c][c] += ridge;
    w[c] = solve_spd4(xtx, xtt[c]);
  }
  Image out = render;
  for (std::size_t p = 0; p < pixels; ++p) {
    const std::array<double, 4> x = features(p);
    for (int c = 0; c < 3; ++c) {
      double v = 0;
      for (int j = 0; j < 4; ++j) v += w[c][j] * x[j];
      out.data[3 * p + c] = float(std::clamp(v, 0.0, 1.0));
    }
  }
  return out;
}

double color_corrected_psnr(const Image& render, const Image& target) {
  return psnr(color_corrected(render, target), target);
}

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
