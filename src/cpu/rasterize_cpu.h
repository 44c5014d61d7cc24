#pragma once
// Rasterization: front-to-back alpha blending of depth-sorted splats per tile
// (3DGS, Kerbl et al. 2023, eq. 3), with the conventions of ../shared/golden/README.md.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/error.h"
#include "cpu/intersect_cpu.h"
#include "cpu/project_cpu.h"
#include "engine/settings.h"

namespace splat::cpu {

template <class T>
struct RasterOut {
  int width = 0, height = 0;
  std::vector<T> image;  // [H, W, 3], background included
  std::vector<T> alpha;  // [H, W], 1 - final transmittance
};

// One contribution to a pixel, as the forward blended it.
template <class T>
struct Contribution {
  std::uint32_t gaussian;
  T alpha, transmittance;  // alpha of this splat, T before it
  bool clamped;            // alpha hit alpha_max: no gradient through opacity * exp(power)
  T dx, dy, gauss;         // mean2d - pixel center, exp(power)
};

inline constexpr double kMinPower = -5.5412635451584258;  // log(1/255)

// Walks the splats of one pixel front to back and calls `emit` for each one it blends.
// Returns the final transmittance. This single loop is the blending rule for forward and backward.
template <class T, class Emit>
T blend_pixel(const Projected<T>& p,
              const Intersections& isect,
              std::uint32_t tile,
              T px,
              T py,
              const RasterSettings& rs,
              Emit&& emit) {
  T trans = 1;
  for (std::uint32_t k = isect.tile_ranges[tile * 2]; k < isect.tile_ranges[tile * 2 + 1]; ++k) {
    const std::uint32_t g = isect.gaussian_from_isect[k];
    const T* cn = &p.conics[g * 3];
    const T dx = p.means2d[g * 2] - px, dy = p.means2d[g * 2 + 1] - py;
    const T power = -(T(0.5) * (cn[0] * dx * dx + cn[2] * dy * dy) + cn[1] * dx * dy);
    if (power > T(0)) continue;
    // Opacity is at most 1, so below this power alpha < 1/255 for sure: skip the exp.
    if (!rs.smooth_cutoff && power < T(kMinPower)) continue;
    const T gauss = std::exp(power);
    const T raw_alpha = p.opacities[g] * gauss;
    const T alpha = std::min(T(rs.alpha_max), raw_alpha);
    if (!rs.smooth_cutoff && alpha < T(config::alpha_min)) continue;
    const T next = trans * (T(1) - alpha);
    if (!rs.smooth_cutoff && next <= T(config::transmittance_min)) break;
    emit(Contribution<T>{g, alpha, trans, raw_alpha > T(rs.alpha_max), dx, dy, gauss}, k);
    trans = next;
  }
  return trans;
}

// Calls f(tile, x, y) for every pixel of the image, tile by tile of isect's grid, which must be
// the image's grid of its side.
template <class T, class F>
void for_each_pixel(int width, int height, const Intersections& isect, F&& f) {
  const TileGrid grid = isect.grid;
  if (!(grid == TileGrid::with_side(width, height, grid.side)) ||
      isect.tile_ranges.size() != std::size_t(grid.count()) * 2)
    throw Error("rasterize: the intersections' tile grid (" + std::to_string(grid.width) + "x" +
                std::to_string(grid.height) + " of " + std::to_string(grid.side) +
                " px) does not cover a " + std::to_string(width) + "x" + std::to_string(height) +
                " image");
  const int s = grid.side;
#pragma omp parallel for schedule(dynamic, 1)
  for (int tile = 0; tile < grid.count(); ++tile) {
    const int tx = tile % grid.width, ty = tile / grid.width;
    for (int y = ty * s; y < std::min(height, (ty + 1) * s); ++y)
      for (int x = tx * s; x < std::min(width, (tx + 1) * s); ++x) f(std::uint32_t(tile), x, y);
  }
}

template <class T>
RasterOut<T> rasterize_fwd(const Projected<T>& p,
                           const Intersections& isect,
                           int width,
                           int height,
                           const RasterSettings& rs) {
  RasterOut<T> out;
  out.width = width;
  out.height = height;
  out.image.assign(std::size_t(width) * height * 3, T(0));
  out.alpha.assign(std::size_t(width) * height, T(0));
  for_each_pixel<T>(width, height, isect, [&](std::uint32_t tile, int x, int y) {
    T c[3] = {0, 0, 0};
    const T trans =
        blend_pixel(p, isect, tile, T(x) + T(0.5), T(y) + T(0.5), rs,
                    [&](const Contribution<T>& ct, std::uint32_t) {
                      for (int ch = 0; ch < 3; ++ch)
                        c[ch] += p.colors[ct.gaussian * 3 + ch] * ct.alpha * ct.transmittance;
                    });
    const std::size_t pix = std::size_t(y) * width + x;
    for (int ch = 0; ch < 3; ++ch) out.image[pix * 3 + ch] = c[ch] + trans * T(rs.background[ch]);
    out.alpha[pix] = T(1) - trans;
  });
  return out;
}

// Gradients of the loss w.r.t. the projected quantities, from d loss / d image and d loss / d alpha
// (either may be empty). Each intersection gets its own gradient slot; the per-splat sums are then
// taken in sorted order, so the result does not depend on the number of threads. abs_means2d:
// also means2d_abs, the per-pixel mean gradients' absolute values summed (AbsGS's statistic).
template <class T>
ProjectedGrad<T> rasterize_bwd(const Projected<T>& p,
                               const Intersections& isect,
                               int width,
                               int height,
                               const RasterSettings& rs,
                               const std::vector<T>& v_image,
                               const std::vector<T>& v_alpha,
                               bool abs_means2d = false) {
  // means2d 2, conic 3, color 3, opacity 1, then with abs_means2d |means2d| 2
  const std::size_t kSlots = abs_means2d ? 11 : 9;
  std::vector<T> per_isect(isect.keys.size() * kSlots, T(0));
  for_each_pixel<T>(width, height, isect, [&](std::uint32_t tile, int x, int y) {
    const std::size_t pix = std::size_t(y) * width + x;
    const T px = T(x) + T(0.5), py = T(y) + T(0.5);
    thread_local std::vector<std::pair<Contribution<T>, std::uint32_t>> list;
    list.clear();
    const T t_final =
        blend_pixel(p, isect, tile, px, py, rs, [&](const Contribution<T>& ct, std::uint32_t k) {
          list.push_back({ct, k});
        });
    T v_out[3] = {0, 0, 0};
    if (!v_image.empty())
      for (int ch = 0; ch < 3; ++ch) v_out[ch] = v_image[pix * 3 + ch];
    const T v_a = v_alpha.empty() ? T(0) : v_alpha[pix];
    // Back to front. behind = color of everything behind splat i, background included:
    // out = sum_j c_j a_j T_j + T_final bg, so d out / d a_i = c_i T_i - behind_i / (1 - a_i),
    // and alpha_out = 1 - T_final gives d alpha_out / d a_i = T_final / (1 - a_i).
    T behind[3];
    for (int ch = 0; ch < 3; ++ch) behind[ch] = t_final * T(rs.background[ch]);
    for (auto it = list.rbegin(); it != list.rend(); ++it) {
      const Contribution<T>& ct = it->first;
      T* slot = &per_isect[std::size_t(it->second) * kSlots];
      const T* col = &p.colors[ct.gaussian * 3];
      const T one_minus = T(1) - ct.alpha;
      T v_alpha_i = v_a * t_final / one_minus;
      for (int ch = 0; ch < 3; ++ch) {
        slot[5 + ch] += ct.alpha * ct.transmittance * v_out[ch];
        v_alpha_i += (col[ch] * ct.transmittance - behind[ch] / one_minus) * v_out[ch];
        behind[ch] += col[ch] * ct.alpha * ct.transmittance;
      }
      if (ct.clamped) continue;
      // alpha = opacity * exp(power), power = -(a dx^2 / 2 + b dx dy + c dy^2 / 2).
      const T* cn = &p.conics[ct.gaussian * 3];
      const T v_power = v_alpha_i * ct.alpha;
      const T v_mean[2] = {-v_power * (cn[0] * ct.dx + cn[1] * ct.dy),
                           -v_power * (cn[2] * ct.dy + cn[1] * ct.dx)};
      for (int j = 0; j < 2; ++j) {
        slot[j] += v_mean[j];
        if (abs_means2d) slot[9 + j] += std::abs(v_mean[j]);
      }
      slot[2] += -v_power * T(0.5) * ct.dx * ct.dx;
      slot[3] += -v_power * ct.dx * ct.dy;
      slot[4] += -v_power * T(0.5) * ct.dy * ct.dy;
      slot[8] += v_alpha_i * ct.gauss;
    }
  });

  const std::size_t n = p.size();
  ProjectedGrad<T> v;
  v.means2d.assign(n * 2, T(0));
  v.conics.assign(n * 3, T(0));
  v.colors.assign(n * 3, T(0));
  v.opacities.assign(n, T(0));
  if (abs_means2d) v.means2d_abs.assign(n * 2, T(0));
  for (std::size_t k = 0; k < isect.keys.size(); ++k) {
    const std::uint32_t g = isect.gaussian_from_isect[k];
    const T* s = &per_isect[k * kSlots];
    for (int j = 0; j < 2; ++j) v.means2d[g * 2 + j] += s[j];
    for (int j = 0; j < 3; ++j) v.conics[g * 3 + j] += s[2 + j];
    for (int j = 0; j < 3; ++j) v.colors[g * 3 + j] += s[5 + j];
    v.opacities[g] += s[8];
    if (abs_means2d)
      for (int j = 0; j < 2; ++j) v.means2d_abs[g * 2 + j] += s[9 + j];
  }
  return v;
}

}  // namespace splat::cpu
