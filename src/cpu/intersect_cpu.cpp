#include "cpu/intersect_cpu.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "engine/settings.h"
#include "engine/tiles.h"

namespace splat::cpu {

std::uint64_t isect_key(std::uint32_t tile, float depth) {
  return (std::uint64_t(tile) << 32) | tiles::depth_key(depth);
}

TileBox tile_box(float mean_x, float mean_y, int radius_x, int radius_y, const TileGrid& grid) {
  return tiles::box(mean_x, mean_y, radius_x, radius_y, grid);
}

template <class T>
Intersections intersect_tiles(const std::vector<T>& means2d,
                              const std::vector<int>& radii,
                              const std::vector<T>& depths,
                              const std::vector<T>& conics,
                              const std::vector<T>& opacities,
                              const TileGrid& grid) {
  const std::size_t n = depths.size();
  const bool cull = !opacities.empty();
  // Count, exclusive prefix sum, emit: the same three passes the GPU does.
  auto for_each_tile = [&](std::size_t i, auto&& f) {
    tiles::for_each_tile(
        float(means2d[i * 2]), float(means2d[i * 2 + 1]), radii[i * 2], radii[i * 2 + 1],
        cull ? float(conics[i * 3]) : 0.0f, cull ? float(conics[i * 3 + 1]) : 0.0f,
        cull ? float(conics[i * 3 + 2]) : 0.0f, cull ? float(opacities[i]) : 0.0f, cull, grid, f);
  };
  std::vector<std::size_t> offsets(n + 1, 0);
  for (std::size_t i = 0; i < n; ++i) for_each_tile(i, [&](int) { ++offsets[i + 1]; });
  std::partial_sum(offsets.begin(), offsets.end(), offsets.begin());
  std::vector<std::pair<std::uint64_t, std::uint32_t>> pairs(offsets[n]);
  for (std::size_t i = 0; i < n; ++i) {
    if (offsets[i + 1] == offsets[i]) continue;
    std::size_t k = offsets[i];
    for_each_tile(i, [&](int tile) {
      pairs[k++] = {isect_key(std::uint32_t(tile), float(depths[i])), std::uint32_t(i)};
    });
  }
  std::sort(pairs.begin(), pairs.end());  // by key, then gaussian index
  Intersections out;
  out.grid = grid;
  out.keys.resize(pairs.size());
  out.gaussian_from_isect.resize(pairs.size());
  for (std::size_t k = 0; k < pairs.size(); ++k) {
    out.keys[k] = pairs[k].first;
    out.gaussian_from_isect[k] = pairs[k].second;
  }
  out.tile_ranges = tile_ranges(out.keys, grid.count());
  return out;
}

std::vector<std::uint32_t> tile_ranges(const std::vector<std::uint64_t>& sorted_keys,
                                       int tile_count) {
  std::vector<std::uint32_t> ranges(std::size_t(tile_count) * 2, 0);
  const std::uint32_t m = std::uint32_t(sorted_keys.size());
  for (std::uint32_t k = 0; k < m; ++k) {
    const std::uint32_t tile = key_tile(sorted_keys[k]);
    if (k == 0 || key_tile(sorted_keys[k - 1]) != tile) ranges[tile * 2] = k;
    if (k + 1 == m || key_tile(sorted_keys[k + 1]) != tile) ranges[tile * 2 + 1] = k + 1;
  }
  return ranges;
}

template Intersections intersect_tiles<float>(const std::vector<float>&,
                                              const std::vector<int>&,
                                              const std::vector<float>&,
                                              const std::vector<float>&,
                                              const std::vector<float>&,
                                              const TileGrid&);
template Intersections intersect_tiles<double>(const std::vector<double>&,
                                               const std::vector<int>&,
                                               const std::vector<double>&,
                                               const std::vector<double>&,
                                               const std::vector<double>&,
                                               const TileGrid&);

}  // namespace splat::cpu
