#pragma once
// The loss target from a training image's bytes (core/image.h Image8), formed where the loss
// reads it: by the cpu backend and inside the cuda loss kernels, with the same rounding.
#include <cstdint>
#include <vector>

#include "core/image.h"
#include "engine/hd.h"

namespace splat {

// How a pixel's bytes become the loss target: channels 3 or 4, and for 4 whether the fourth byte
// is straight alpha over `background` or a loss mask.
struct TargetFormat {
  int channels = 3;
  bool mask = false;
  float background[3] = {1.0f, 1.0f, 1.0f};
};

// Channel ch (0..2) of the pixel whose bytes start at px. A byte k is k / 255 (division, so the
// value is the correctly rounded quotient); straight alpha composites as c a + b (1 - a), each
// operation rounded once. This is bit for bit what the loaders computed on the host before the
// images were kept in 8 bits (float decode, then composite). `unit(k)` gives k / 255: the
// division, or a table of its 256 results (the CUDA loss kernels).
template <class Unit>
SPLAT_HD inline float target_sample(const TargetFormat& f,
                                    const std::uint8_t* px,
                                    int ch,
                                    const Unit& unit) {
  const float c = unit(px[ch]);
  if (f.channels == 3 || f.mask) return c;
  const float a = unit(px[3]);
  return add_rn(mul_rn(c, a), mul_rn(f.background[ch], 1.0f - a));
}

SPLAT_HD inline float target_sample(const TargetFormat& f, const std::uint8_t* px, int ch) {
  return target_sample(f, px, ch, [](std::uint8_t k) { return div_rn(float(k), 255.0f); });
}

// The pixel's weight in the loss: 1, or 0 where a mask excludes it (masks are binary).
SPLAT_HD inline float target_weight(const TargetFormat& f, const std::uint8_t* px) {
  return f.mask && px[3] == 0 ? 0.0f : 1.0f;
}

// The format of a training image's bytes.
inline TargetFormat target_format(const Image8& img) {
  TargetFormat f;
  f.channels = img.channels;
  f.mask = img.masked();
  for (int c = 0; c < 3; ++c) f.background[c] = img.background[c];
  return f;
}

// The whole target as float RGB [H, W, 3], for the cpu backend's loss and for evaluation (which
// compares every pixel: masks exclude pixels from training only).
Image target_image(const Image8& img);

// The per-pixel loss weights [H, W] (1, or 0 under a mask).
std::vector<float> target_weights(const Image8& img);

}  // namespace splat
