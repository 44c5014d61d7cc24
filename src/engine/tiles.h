#pragma once
// Which tiles a projected splat touches, the same on every backend: the tiles of the box its
// screen radii span, less those where the rasterizer could not blend it into any pixel.
//
// The rasterizer skips a splat at a pixel when opacity * exp(-q / 2) < alpha_min, with
// q = d^T conic d and d the pixel center minus the mean. So a tile can only receive the splat if
// the minimum of q over the tile's pixel centers is at most 2 ln(opacity / alpha_min); a splat
// with opacity below alpha_min reaches no tile at all. Dropping the other tiles removes only
// intersections the rasterizer would skip, so images and gradients do not change, but the sort
// and both rasterizer passes get shorter lists.
#include <cmath>

#include "engine/hd.h"
#include "engine/settings.h"

namespace splat::tiles {

// Tiles are squares of kLargeTile pixels, or of kSmallTile on images of fewer than kSmallImage
// pixels. The GPU rasterizer runs one warp per 32 pixels, each walking its tile's whole list, so
// on a small image (a coarse-to-fine step) few warps walk long lists: on an H200, Lego's 1/4-size
// steps took 15-17% less time with 8 px tiles and its 1/2-size steps 8-10% less, while the full
// 800 x 800 step took 2.7% more (its lists grow by the splats that cross more tile edges). The
// side only moves work between the stages: every side gives the same images, and gradients that
// differ by float rounding (the backward's segments start at other entries).
inline constexpr int kLargeTile = 16, kSmallTile = 8;
inline constexpr long kSmallImage = 1L << 18;  // 512 x 512

// The tiles that cover an image, the last row and column partly outside it.
struct Grid {
  int width = 0, height = 0;  // in tiles
  int side = kLargeTile;      // pixels per tile edge: kLargeTile or kSmallTile
  SPLAT_HD int count() const { return width * height; }
  static Grid with_side(int image_width, int image_height, int side) {
    return {(image_width + side - 1) / side, (image_height + side - 1) / side, side};
  }
  static Grid for_image(int image_width, int image_height) {
    const bool small = long(image_width) * long(image_height) < kSmallImage;
    return with_side(image_width, image_height, small ? kSmallTile : kLargeTile);
  }
  bool operator==(const Grid&) const = default;
};

struct Box {
  int x0, y0, x1, y1;  // tiles [x0, x1) x [y0, y1)
};

// The clamp happens in float before the conversion: defined for NaN (-> 0) and huge values.
SPLAT_HD inline int clamp_tile(float v, int hi) {
  return int(fminf(fmaxf(v, 0.0f), float(hi)));
}

// [floor((m - r) / side), ceil((m + r) / side)) per axis, clamped to the grid (side is a power of
// two, so the divisions are exact).
SPLAT_HD inline Box box(float mean_x, float mean_y, int radius_x, int radius_y, Grid grid) {
  const float ts = float(grid.side);
  const float tx = div_rn(mean_x, ts), ty = div_rn(mean_y, ts);
  const float rx = div_rn(float(radius_x), ts), ry = div_rn(float(radius_y), ts);
  return {clamp_tile(floorf(add_rn(tx, -rx)), grid.width),
          clamp_tile(floorf(add_rn(ty, -ry)), grid.height),
          clamp_tile(ceilf(add_rn(tx, rx)), grid.width),
          clamp_tile(ceilf(add_rn(ty, ry)), grid.height)};
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

// reaches_pixels for the pixels of tile (tx, ty) of `side` pixels.
SPLAT_HD inline bool reaches(
    float a, float b, float c, float mean_x, float mean_y, float q_max, int tx, int ty, int side) {
  return reaches_pixels(a, b, c, mean_x, mean_y, q_max, tx * side, ty * side, side - 1, side - 1);
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
                            Grid grid,
                            F&& f) {
  if (radius_x <= 0 && radius_y <= 0) return;
  const Box box_ = box(mean_x, mean_y, radius_x, radius_y, grid);
  const float q_max = cull ? max_quad(opacity) : 0.0f;
  for (int ty = box_.y0; ty < box_.y1; ++ty)
    for (int tx = box_.x0; tx < box_.x1; ++tx)
      if (!cull || reaches(a, b, c, mean_x, mean_y, q_max, tx, ty, grid.side))
        f(ty * grid.width + tx);
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
