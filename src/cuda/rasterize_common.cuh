#pragma once
// Device code the rasterizer's forward and backward must share exactly: the backward recomputes
// every alpha and has to take the forward's skip decisions bit for bit.
#include <string>

#include "core/error.h"
#include "cuda/rasterize.h"
#include "render/settings.h"
#include "render/tiles.h"

namespace splat::cuda {

// The pixel rows a splat can blend into, as [lo, hi] in pixel-center coordinates: where
// opacity * exp(-q / 2) >= alpha_min, |dy| <= sqrt(q_max * Sigma_yy) with Sigma = conic^-1, so
// Sigma_yy = a / (a c - b^2), the determinant in double (exact products of the float conic, no
// cancellation for thin splats). q_max carries tiles::max_quad's margin, the half-height another
// 0.1% and 0.05 px, so a row outside is one where the rasterizer skips the splat at every pixel:
// leaving it out changes nothing but the work. Empty (lo > hi) for a splat that never blends;
// every row for a conic that is not positive definite.
__device__ __forceinline__ float2 blend_rows(float a, float b, float c, float opacity, float mean_y) {
  const float q_max = tiles::max_quad(opacity);
  if (q_max < 0.0f) return make_float2(1.0f, -1.0f);
  const double det = double(a) * double(c) - double(b) * double(b);
  if (!(a > 0.0f && det > 0.0)) return make_float2(-INFINITY, INFINITY);
  const float half = float(sqrt(double(q_max) * double(a) / det) * 1.001) + 0.05f;
  return make_float2(mean_y - half, mean_y + half);
}

// The launch grid of both passes: one block per tile. Throws if p's tile grid does not fit its
// image; returns false for an empty image (nothing to launch).
inline bool tile_launch_grid(const char* who, const RasterParams& p, dim3& grid) {
  const int tiles_x = (p.width + config::tile_size - 1) / config::tile_size;
  const int tiles_y = (p.height + config::tile_size - 1) / config::tile_size;
  if (p.width < 0 || p.height < 0 || p.tiles_x != tiles_x || p.tiles_y != tiles_y)
    throw Error(std::string(who) + ": tile grid " + std::to_string(p.tiles_x) + "x" + std::to_string(p.tiles_y) +
                " does not fit a " + std::to_string(p.width) + "x" + std::to_string(p.height) + " image");
  grid = dim3(unsigned(tiles_x), unsigned(tiles_y));
  return tiles_x > 0 && tiles_y > 0;
}

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
