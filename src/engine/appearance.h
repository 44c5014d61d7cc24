#pragma once
// Per-training-image appearance compensation (train.appearance = affine): every training image i
// has an affine colour transform [A_i | b_i] that the step applies to the render before the loss,
//   r' = A_i r + b_i   per pixel (r: the render, background included),
// so that the splats model the scene and the transforms each photo's exposure and white balance.
// Held-out views have no transform: evaluation, renders and model files use r. The per-pixel
// forward and backward below are the cpu backend's (cpu/appearance_cpu.h) and the cuda kernels'
// (cuda/appearance_cuda.cu); the pixel sums of the transform's gradient run in double on both.
#include <cstddef>
#include <vector>

#include "engine/hd.h"

namespace splat {

// Floats per image: a 3x4 row-major matrix [A | b], row c giving output channel c.
inline constexpr std::size_t kAppearanceFloats = 12;

// The transforms of every training image and their Adam moments (Adam shares the model's step
// count). Empty: appearance compensation is off.
struct AppearanceState {
  std::vector<float> params;  // [images, 3, 4]
  std::vector<float> m;       // first moments, shape of params
  std::vector<float> v;       // second moments

  bool empty() const { return params.empty(); }
  std::size_t images() const { return params.size() / kAppearanceFloats; }
  // The identity transform (A = I, b = 0) for each image, with zero moments.
  static AppearanceState identity(std::size_t images) {
    AppearanceState s;
    s.params.assign(images * kAppearanceFloats, 0.0f);
    for (std::size_t i = 0; i < images; ++i)
      for (std::size_t c = 0; c < 3; ++c) s.params[i * kAppearanceFloats + c * 4 + c] = 1.0f;
    s.m.assign(s.params.size(), 0.0f);
    s.v.assign(s.params.size(), 0.0f);
    return s;
  }
};

// Entry k of the identity [I | 0]: what appearance_reg pulls each parameter toward.
inline constexpr float appearance_identity(std::size_t k) {
  return (k % kAppearanceFloats) / 4 == (k % kAppearanceFloats) % 4 ? 1.0f : 0.0f;
}

// The mean transform is held at the identity. The loss cannot tell a colour change of the splats
// from the same change in every transform, so nothing but appearance_reg's weak pull fixes their
// mean, and a mean that drifts leaves the splats (what held-out views see) off the captures' mean
// appearance: measured on the fox capture, 3.3 dB lower held-out PSNR than no compensation. After
// each update every transform moves by the same offset, its mean minus [I | 0] (a projection onto
// mean = identity). Entry k's offset: the mean over the images in image order, in double; both
// backends call this one function (the cuda kernel per entry k).
template <class P>
SPLAT_HD inline float appearance_mean_offset(const P* params, std::size_t images, std::size_t k) {
  double sum = 0;
  for (std::size_t i = 0; i < images; ++i) sum += double(params[i * kAppearanceFloats + k]);
  return float(sum / double(images) - double(appearance_identity(k)));
}

// The projection on the host: every transform minus the offsets of appearance_mean_offset.
inline void appearance_recenter(float* params, std::size_t images) {
  float offset[kAppearanceFloats];
  for (std::size_t k = 0; k < kAppearanceFloats; ++k)
    offset[k] = appearance_mean_offset(params, images, k);
  for (std::size_t i = 0; i < images; ++i)
    for (std::size_t k = 0; k < kAppearanceFloats; ++k)
      params[i * kAppearanceFloats + k] -= offset[k];
}

// One pixel: out = A r + b, with m the transform [A | b] (row c gives output channel c).
template <class T, class M>
SPLAT_HD inline void appearance_pixel(const M* m, const T* r, T* out) {
  for (int c = 0; c < 3; ++c)
    out[c] = T(m[c * 4]) * r[0] + T(m[c * 4 + 1]) * r[1] + T(m[c * 4 + 2]) * r[2] + T(m[c * 4 + 3]);
}

// Its backward at one pixel, with g = d loss / d out: d loss / d r = A^T g into v_r, and the
// pixel's terms of d loss / d [A | b] added to sum: g_c r_k at c * 4 + k, g_c at c * 4 + 3.
template <class T, class M>
SPLAT_HD inline void appearance_pixel_bwd(const M* m, const T* r, const T* g, T* v_r, double* sum) {
  for (int k = 0; k < 3; ++k) v_r[k] = T(m[k]) * g[0] + T(m[4 + k]) * g[1] + T(m[8 + k]) * g[2];
  for (int c = 0; c < 3; ++c) {
    for (int k = 0; k < 3; ++k) sum[c * 4 + k] += double(g[c]) * double(r[k]);
    sum[c * 4 + 3] += double(g[c]);
  }
}

}  // namespace splat
