#pragma once
// Which 16x16 tiles a projected splat touches, the same on every backend: the tiles of the box
// its screen radii span, less those where the rasterizer could not blend it into any pixel.
//
// The rasterizer skips a splat at a pixel when opacity * exp(-q / 2) < alpha_min, with
// q = d^T conic d and d the pixel center minus the mean. So a tile can only receive the splat if
// the minimum of q over the tile's pixel centers is at most 2 ln(opacity / alpha_min); a splat
// with opacity below alpha_min reaches no tile at all. Dropping the other tiles removes only
// intersections the rasterizer would skip, so images and gradients do not change, but the sort
// and both rasterizer passes get shorter lists.
#include <cmath>

#include "render/hd.h"
#include "render/settings.h"

namespace splat::tiles {

// The tiles that cover an image, the last row and column partly outside it.
struct Grid {
  int width, height;  // in tiles
  int count() const { return width * height; }
  static Grid for_image(int image_width, int image_height) {
    return {(image_width + config::tile_size - 1) / config::tile_size,
            (image_height + config::tile_size - 1) / config::tile_size};
  }
};

struct Box {
  int x0, y0, x1, y1;  // tiles [x0, x1) x [y0, y1)
};

// The clamp happens in float before the conversion: defined for NaN (-> 0) and huge values.
SPLAT_HD inline int clamp_tile(float v, int hi) {
  return int(fminf(fmaxf(v, 0.0f), float(hi)));
}

// [floor((m - r) / 16), ceil((m + r) / 16)) per axis, clamped to the grid of tiles_x x tiles_y.
SPLAT_HD inline Box box(
    float mean_x, float mean_y, int radius_x, int radius_y, int tiles_x, int tiles_y) {
  const float ts = float(config::tile_size);
  const float tx = div_rn(mean_x, ts), ty = div_rn(mean_y, ts);
  const float rx = div_rn(float(radius_x), ts), ry = div_rn(float(radius_y), ts);
  return {clamp_tile(floorf(add_rn(tx, -rx)), tiles_x),
          clamp_tile(floorf(add_rn(ty, -ry)), tiles_y), clamp_tile(ceilf(add_rn(tx, rx)), tiles_x),
          clamp_tile(ceilf(add_rn(ty, ry)), tiles_y)};
}

// The largest q at which the splat can still blend, widened by 0.1% + 1e-3 to cover the float
// rounding of the rasterizer's power and exp and of reaches() below; negative if it never blends.
// Computed in double so that host and device agree to the last bit of the float result.
SPLAT_HD inline float max_quad(float opacity) {
  if (!(opacity >= config::alpha_min)) return -1.0f;
  const double t = 2.0 * log(double(opacity) / double(config::alpha_min));
  return float(t * 1.001 + 1e-3);
}

// min over dy in [lo, hi] of q(dx, dy) = a dx^2 + 2 b dx dy + c dy^2 (c > 0): at dy = -b dx / c,
// clamped to the interval.
SPLAT_HD inline float edge_min(float a, float b, float c, float dx, float lo, float hi) {
  const float dy = fminf(fmaxf(-div_rn(mul_rn(b, dx), c), lo), hi);
  const float bdx = mul_rn(b, dx);
  return add_rn(add_rn(mul_rn(mul_rn(a, dx), dx), mul_rn(add_rn(bdx, bdx), dy)),
                mul_rn(mul_rn(c, dy), dy));
}

// Whether the splat (conic a, b, c; mean; max_quad) can blend into a pixel center of the pixels
// [x0, x0 + w] x [y0, y0 + h]. The minimum of a positive definite quadratic over a rectangle is 0
// inside it, else on an edge.
SPLAT_HD inline bool reaches_pixels(float a,
                                    float b,
                                    float c,
                                    float mean_x,
                                    float mean_y,
                                    float q_max,
                                    int x0,
                                    int y0,
                                    int w,
                                    int h) {
  if (q_max < 0.0f) return false;
  if (!(a > 0.0f && c > 0.0f)) return true;  // not positive definite: keep the whole box
  const float lx = add_rn(add_rn(float(x0), 0.5f), -mean_x);
  const float ly = add_rn(add_rn(float(y0), 0.5f), -mean_y);
  const float hx = add_rn(lx, float(w)), hy = add_rn(ly, float(h));
  if (lx <= 0.0f && hx >= 0.0f && ly <= 0.0f && hy >= 0.0f) return true;
  const float q = fminf(fminf(edge_min(a, b, c, lx, ly, hy), edge_min(a, b, c, hx, ly, hy)),
                        fminf(edge_min(c, b, a, ly, lx, hx), edge_min(c, b, a, hy, lx, hx)));
  return q <= q_max;
}

// reaches_pixels for the pixels of tile (tx, ty).
SPLAT_HD inline bool reaches(
    float a, float b, float c, float mean_x, float mean_y, float q_max, int tx, int ty) {
  const int ts = config::tile_size;
  return reaches_pixels(a, b, c, mean_x, mean_y, q_max, tx * ts, ty * ts, ts - 1, ts - 1);
}

// Calls f(tile id) for every tile a projected splat reaches, in row-major order of its box: the
// order of every backend's intersection lists. A splat with both radii 0 was culled and reaches
// none; with `cull` false (smooth_cutoff, where nothing is skipped) it reaches its whole box.
template <class F>
SPLAT_HD void for_each_tile(float mean_x,
                            float mean_y,
                            int radius_x,
                            int radius_y,
                            float a,
                            float b,
                            float c,
                            float opacity,
                            bool cull,
                            int tiles_x,
                            int tiles_y,
                            F&& f) {
  if (radius_x <= 0 && radius_y <= 0) return;
  const Box box_ = box(mean_x, mean_y, radius_x, radius_y, tiles_x, tiles_y);
  const float q_max = cull ? max_quad(opacity) : 0.0f;
  for (int ty = box_.y0; ty < box_.y1; ++ty)
    for (int tx = box_.x0; tx < box_.x1; ++tx)
      if (!cull || reaches(a, b, c, mean_x, mean_y, q_max, tx, ty)) f(ty * tiles_x + tx);
}

// The depth part of the intersection order: kDepthKeyBits of the depth's float pattern, counted
// from 2^-7 (below the near plane) up to 2^25: 32 binades, so 24 bits keep 19 mantissa bits and
// depths a relative 2^-19 or less apart may share a key (and then blend in splat index order).
// Positive floats order like their bits, so the keys order like the depths. Below 2^-7 (culled
// splats carry 0) is key 0; 2^25 and beyond, infinity, NaN and negative depths (sign bit set)
// take the last key. Integer operations only, so host and device agree. 24 bits are three radix
// passes on the GPU where the whole float pattern took four. (16 bits, two passes, moved the
// golden scenes' images by up to 0.04: overlapping splats a relative 2^-11 apart do occur.)
inline constexpr int kDepthKeyBits = 24;
SPLAT_HD inline unsigned depth_key(float depth) {
  constexpr unsigned lo = 0x3C000000u;  // 2^-7: biased exponent 120, mantissa 0
  constexpr int span = 28;              // [2^-7, 2^25): 32 binades of 2^23 patterns each
  constexpr unsigned top = (1u << kDepthKeyBits) - 1u;
  const unsigned bits = float_bits(depth);
  if (bits < lo) return 0u;
  const unsigned k = (bits - lo) >> (span - kDepthKeyBits);
  return k < top ? k : top;
}

}  // namespace splat::tiles
