#pragma once
// SSIM's window (Wang et al. 2004): 11x11 Gaussian, sigma 1.5, normalized; separable, so one
// axis is kept. One definition for every backend's loss.
#include <array>
#include <cmath>

namespace splat {

inline constexpr int kSsimRadius = 5;  // 11x11 window

template <class T>
std::array<T, 2 * kSsimRadius + 1> ssim_window() {
  std::array<T, 2 * kSsimRadius + 1> w;
  T sum = 0;
  for (int i = -kSsimRadius; i <= kSsimRadius; ++i)
    sum += w[i + kSsimRadius] = std::exp(-T(i * i) / T(2 * 1.5 * 1.5));
  for (T& v : w) v /= sum;
  return w;
}

}  // namespace splat
