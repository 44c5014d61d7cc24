#pragma once
// Tile intersection: which tiles (engine/tiles.h) each projected splat touches, as sort keys
// (tile id << 32 | depth key), sorted, and the [start, end) range of every tile.
#include <bit>
#include <cstdint>
#include <vector>

#include "engine/tiles.h"

namespace splat::cpu {

using TileGrid = tiles::Grid;

// Tile id high, tiles::depth_key low: sorted, the keys order by tile, then by depth.
std::uint64_t isect_key(std::uint32_t tile, float depth);
inline std::uint32_t key_tile(std::uint64_t key) {
  return std::uint32_t(key >> 32);
}
// The highest key bit the sort must look at (exclusive): the 32 bits of the depth
// key field plus enough for the tile id.
inline int sort_end_bit(int tile_count) {
  return 32 + std::bit_width(static_cast<std::uint32_t>(tile_count));
}

using TileBox = tiles::Box;
// The tiles a splat with the given screen mean and radii overlaps, clamped to the grid.
TileBox tile_box(float mean_x, float mean_y, int radius_x, int radius_y, const TileGrid& grid);

struct Intersections {
  TileGrid grid;                                   // the tiles the keys name
  std::vector<std::uint64_t> keys;                 // [M] sorted
  std::vector<std::uint32_t> gaussian_from_isect;  // [M]
  std::vector<std::uint32_t> tile_ranges;          // [tiles, 2] start, end into the sorted arrays
};

// means2d [N, 2], radii [N, 2], depths [N], conics [N, 3], opacities [N]: each splat gets the
// tiles of its box that it reaches (engine/tiles.h); with opacities empty, its whole box (for
// smooth_cutoff, where nothing is skipped). Ties (same tile and depth key) keep gaussian order.
template <class T>
Intersections intersect_tiles(const std::vector<T>& means2d,
                              const std::vector<int>& radii,
                              const std::vector<T>& depths,
                              const std::vector<T>& conics,
                              const std::vector<T>& opacities,
                              const TileGrid& grid);

// [start, end) of each tile in sorted keys.
std::vector<std::uint32_t> tile_ranges(const std::vector<std::uint64_t>& sorted_keys,
                                       int tile_count);

}  // namespace splat::cpu
