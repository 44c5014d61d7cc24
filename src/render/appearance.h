#pragma once
// Per-training-image appearance compensation (train.appearance = affine): every training image i
// has an affine colour transform [A_i | b_i] that the step applies to the render before the loss,
//   r' = A_i r + b_i   per pixel (r: the render, background included),
// so that the splats model the scene and the transforms each photo's exposure and white balance.
// Held-out views have no transform: evaluation, renders and model files use r. cpu/appearance.h
// is the specification of the forward and backward.
#include <cstddef>
#include <vector>

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

}  // namespace splat
