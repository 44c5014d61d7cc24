#pragma once
// The .splat web format (antimatter15/splat): no header, 32 bytes per splat, little-endian:
//   float32 x y z | float32 scale x y z (linear) | uint8 r g b a | uint8 quaternion w x y z
// color = 0.5 + C0 * f_dc (SH degree 0 only), a = sigmoid(opacity), each times 255, clamped and
// rounded; quaternion = normalized q * 128 + 128. Splats are sorted by exp(sum log scales) *
// opacity, largest first, as the reference converter does. Positions are in the 3DGS .ply frame.
#include <string>

#include "core/gaussians.h"

namespace splat {

inline constexpr std::size_t kSplatRecordBytes = 32;

void write_splat(const std::string& path, const Gaussians& g);
// SH degree 0. A size that is not a whole number of records, a non-positive scale or a
// non-finite value is an error naming the file and the splat.
Gaussians read_splat(const std::string& path);

}  // namespace splat
