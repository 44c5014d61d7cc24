#pragma once
// Photometric loss (engine/loss.h): the terms a loss's row names, a data term (mean |d| or mean
// d^2) and optionally lambda (1 - SSIM) with the data term weighted 1 - lambda (3DGS's l1_ssim).
// SSIM (Wang et al. 2004) with an 11x11 Gaussian window, sigma 1.5, zero padding ("same" size),
// averaged over pixels and channels. Forward and gradient in one call. With a mask, only the
// pixels it keeps count: the data term and the SSIM map are averaged over them, and masked pixels
// enter no SSIM window (image and target are zeroed there before the blurs), so the target under
// the mask changes nothing.
#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

#include "engine/loss.h"
#include "engine/ssim.h"

namespace splat::cpu {

// Separable Gaussian blur of one [H, W] plane with zero padding. The window is symmetric, so this
// is also its own adjoint (the SSIM backward uses it that way).
template <class T>
std::vector<T> gaussian_blur(const std::vector<T>& in, int width, int height) {
  const auto w = ssim_window<T>();
  std::vector<T> tmp(in.size(), T(0)), out(in.size(), T(0));
#pragma omp parallel for schedule(static)
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x) {
      T acc = 0;
      for (int k = -kSsimRadius; k <= kSsimRadius; ++k)
        if (x + k >= 0 && x + k < width)
          acc += w[k + kSsimRadius] * in[std::size_t(y) * width + x + k];
      tmp[std::size_t(y) * width + x] = acc;
    }
#pragma omp parallel for schedule(static)
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x) {
      T acc = 0;
      for (int k = -kSsimRadius; k <= kSsimRadius; ++k)
        if (y + k >= 0 && y + k < height)
          acc += w[k + kSsimRadius] * tmp[std::size_t(y + k) * width + x];
      out[std::size_t(y) * width + x] = acc;
    }
  return out;
}

// The loss and the means of its terms, as StepResult (engine/backend.h) reports them.
template <class T>
struct LossResult {
  T loss = 0, l1 = 0, ssim = 0;
  std::vector<T> v_image;  // d loss / d image, [H, W, 3]; empty unless requested
};

// image and target are [H, W, 3]; weight, when given, [H, W] in {0, 1} (0: masked). ssim_lambda
// is read by a loss with the SSIM term only.
template <class T>
LossResult<T> photometric_loss(const std::vector<T>& image,
                               const std::vector<T>& target,
                               int width,
                               int height,
                               T ssim_lambda,
                               bool with_grad,
                               LossKind kind = LossKind::L1Ssim,
                               const T* weight = nullptr) {
  const LossTerms& terms = loss_terms(kind);
  const std::size_t np = std::size_t(width) * height, ne = np * 3;
  // The means are over the counted entries: every pixel's three channels, or the mask's.
  const std::size_t counted = weight ? std::size_t(std::count(weight, weight + np, T(1))) * 3 : ne;
  const T inv_n = counted ? T(1) / T(counted) : T(0);
  const auto w = [&](std::size_t pixel) { return weight ? weight[pixel] : T(1); };
  const T C1 = T(0.01 * 0.01), C2 = T(0.03 * 0.03);
  LossResult<T> r;
  if (with_grad) r.v_image.assign(ne, T(0));
  // The data term: sum |d| or sum d^2, weighted 1 - lambda with SSIM, 1 without.
  // Sums in double: in float, a million terms near 1 round each addition to the sum's ulp and the
  // mean SSIM comes out percent-level wrong (the GPU reduces in double too).
  const T data_weight = terms.ssim ? T(1) - ssim_lambda : T(1);
  const T data_scale = data_weight * inv_n;  // d loss / d data(d) of one entry
  double data = 0;
  for (std::size_t i = 0; i < ne; ++i) {
    const T d = image[i] - target[i];
    const T wi = w(i / 3);
    if (terms.data == DataTerm::Squared) {
      data += wi * d * d;
      if (with_grad) r.v_image[i] = data_scale * T(2) * d * wi;
    } else {
      data += wi * std::abs(d);
      if (with_grad) r.v_image[i] = data_scale * T((d > 0) - (d < 0)) * wi;
    }
  }
  const T data_mean = counted ? T(data / double(counted)) : T(0);
  // The reported L1 is the data term's mean where that is mean |d|.
  r.l1 = terms.data == DataTerm::Abs ? data_mean : T(0);
  if (!terms.ssim) {
    r.loss = data_mean;
    return r;
  }
  double ssim_sum = 0;
  std::vector<T> x(np), y(np), xx(np), yy(np), xy(np);
  for (int ch = 0; ch < 3; ++ch) {
    for (std::size_t i = 0; i < np; ++i) {
      x[i] = w(i) * image[i * 3 + ch];
      y[i] = w(i) * target[i * 3 + ch];
      xx[i] = x[i] * x[i];
      yy[i] = y[i] * y[i];
      xy[i] = x[i] * y[i];
    }
    const auto mx = gaussian_blur(x, width, height), my = gaussian_blur(y, width, height);
    const auto sxx = gaussian_blur(xx, width, height), syy = gaussian_blur(yy, width, height);
    const auto sxy = gaussian_blur(xy, width, height);
    // Partial derivatives of the SSIM map w.r.t. the blurred moments mu_x, E[x^2], E[xy].
    std::vector<T> d_mx(with_grad ? np : 0), d_sxx(with_grad ? np : 0), d_sxy(with_grad ? np : 0);
    for (std::size_t i = 0; i < np; ++i) {
      const T a1 = 2 * mx[i] * my[i] + C1, a2 = 2 * (sxy[i] - mx[i] * my[i]) + C2;
      const T b1 = mx[i] * mx[i] + my[i] * my[i] + C1;
      const T b2 = (sxx[i] - mx[i] * mx[i]) + (syy[i] - my[i] * my[i]) + C2;
      const T s = a1 * a2 / (b1 * b2);
      ssim_sum += w(i) * s;
      if (!with_grad) continue;
      // Loss has -lambda * mean(s).
      const T g = -ssim_lambda * inv_n * w(i);
      d_mx[i] = g * (2 * my[i] * (a2 - a1) / (b1 * b2) - 2 * mx[i] * s * (T(1) / b1 - T(1) / b2));
      d_sxx[i] = g * (-s / b2);
      d_sxy[i] = g * (2 * a1 / (b1 * b2));
    }
    if (!with_grad) continue;
    const auto bmx = gaussian_blur(d_mx, width, height);
    const auto bsxx = gaussian_blur(d_sxx, width, height);
    const auto bsxy = gaussian_blur(d_sxy, width, height);
    for (std::size_t i = 0; i < np; ++i)
      r.v_image[i * 3 + ch] += w(i) * (bmx[i] + 2 * x[i] * bsxx[i] + y[i] * bsxy[i]);
  }
  r.ssim = counted ? T(ssim_sum / double(counted)) : T(0);
  r.loss = data_weight * data_mean + ssim_lambda * (T(1) - r.ssim);
  return r;
}

}  // namespace splat::cpu
