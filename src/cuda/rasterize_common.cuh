#pragma once
// Device code the rasterizer's forward and backward must share exactly: the backward recomputes
// every alpha and has to take the forward's skip decisions bit for bit.
#include "render/settings.h"

namespace splat::cuda {

// One thread per pixel of a tile; a batch holds one splat per thread so all threads load.
inline constexpr int kRasterBlock = config::tile_size * config::tile_size;

// cpu::kMinPower = log(alpha_min) as the float the CPU compares with in float.
inline constexpr float kMinPower = float(-5.5412635451584258);

// Exponent of the 2D Gaussian at d = mean2d - pixel: -(a dx^2 / 2 + b dx dy + c dy^2 / 2), the
// operations of cpu::blend_pixel in the same order. Written with _rn so that no FMA contraction
// changes the rounding.
__device__ __forceinline__ float gaussian_power(float a, float b, float c, float dx, float dy) {
  const float quad = __fadd_rn(__fmul_rn(__fmul_rn(a, dx), dx), __fmul_rn(__fmul_rn(c, dy), dy));
  return -__fadd_rn(__fmul_rn(0.5f, quad), __fmul_rn(__fmul_rn(b, dx), dy));
}

}  // namespace splat::cuda
