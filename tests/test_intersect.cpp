// Bit layouts of tile intersection, pinned by hand-computed values: the GPU sort and the CUDA
// kernels must produce exactly these keys, end bits and ranges (DESIGN.md section 5).
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "cpu/intersect_cpu.h"

namespace splat::cpu {
namespace {

// {x0, y0, x1, y1}: comparable and printable by GoogleTest.
std::array<int, 4> corners(const TileBox& b) {
  return {b.x0, b.y0, b.x1, b.y1};
}

TEST(Intersect, KeyPacksTileHighAndDepthKeyLow) {
  // 1.5f = 0x3FC00000, 1000.0f = 0x447A0000, 2.0f = 0x40000000 (IEEE 754 single); the key counts
  // from 2^-7 = 0x3C000000 in steps of 2^(28 - kDepthKeyBits) patterns.
  constexpr int shift = 28 - tiles::kDepthKeyBits;
  EXPECT_EQ(isect_key(0x12345u, 1.5f), 0x0001234500000000ull | (0x03C00000u >> shift));
  EXPECT_EQ(isect_key(2499u, 1000.0f), 0x000009C300000000ull | (0x087A0000u >> shift));
  EXPECT_EQ(isect_key(0u, 2.0f), std::uint64_t(0x04000000u >> shift));
  EXPECT_EQ(key_tile(isect_key(0x12345u, 1.5f)), 0x12345u);
  EXPECT_EQ(key_tile(isect_key(0xFFFFFFFFu, 0.25f)), 0xFFFFFFFFu);
}

TEST(Intersect, DepthKeyOrdersDepthsToItsMantissaBits) {
  const unsigned top = (1u << tiles::kDepthKeyBits) - 1u;
  const float step = std::ldexp(1.0f, -(tiles::kDepthKeyBits - 5));  // 32 binades take 5 bits
  EXPECT_EQ(tiles::depth_key(0.0f), 0u);                             // culled splats
  EXPECT_EQ(tiles::depth_key(1e-3f), 0u);
  EXPECT_EQ(tiles::depth_key(0x1p-7f), 0u);
  EXPECT_EQ(tiles::depth_key(0x1p-7f * (1.0f + step)), 1u);  // the first step up
  EXPECT_EQ(tiles::depth_key(0x1p25f * (1.0f - step)), top - 1u);
  EXPECT_EQ(tiles::depth_key(0x1p25f * (1.0f - 0x1p-24f)), top);  // the last step below 2^25 ...
  EXPECT_EQ(tiles::depth_key(0x1p25f), top);                      // ... and everything above
  EXPECT_EQ(tiles::depth_key(1e30f), top);
  EXPECT_EQ(tiles::depth_key(std::numeric_limits<float>::infinity()), top);
  EXPECT_EQ(tiles::depth_key(std::numeric_limits<float>::quiet_NaN()), top);
  EXPECT_EQ(tiles::depth_key(-1.0f), top);
  EXPECT_EQ(tiles::depth_key(-0.0f), top);
  // Monotonic at every scale: a relative 2 steps apart never ties, half a step apart is at most
  // one key.
  for (float d = 0.01f; d < 1e6f; d *= 1.37f) {
    EXPECT_LE(tiles::depth_key(d), tiles::depth_key(std::nextafter(d, 2 * d))) << d;
    EXPECT_LT(tiles::depth_key(d), tiles::depth_key(d * (1.0f + 2 * step))) << d;
    EXPECT_GE(tiles::depth_key(d) + 1u, tiles::depth_key(d * (1.0f + step / 2))) << d;
  }
}

TEST(Intersect, KeysOrderByTileThenDepth) {
  const float step = std::ldexp(1.0f, -(tiles::kDepthKeyBits - 5));
  // Listed in the expected order; a nearer splat in a later tile still sorts after.
  const std::vector<std::uint64_t> want = {
      isect_key(0, 0.01f), isect_key(0, 7.0f),        isect_key(1, 0.5f),
      isect_key(1, 1.0f),  isect_key(1, 1.0f + step),  // one key step deeper sorts after
      isect_key(1, 1e30f), isect_key(2, 1e-3f),
  };
  std::vector<std::uint64_t> keys = want;
  std::reverse(keys.begin(), keys.end());
  std::sort(keys.begin(), keys.end());
  EXPECT_EQ(keys, want);
  EXPECT_NE(want[3], want[4]);
  EXPECT_EQ(isect_key(1, 1.0f), isect_key(1, std::nextafter(1.0f, 2.0f)));  // within a step: a tie
}

TEST(Intersect, SortEndBit) {
  EXPECT_EQ(sort_end_bit(1), 33);  // tile id 0 still gets one bit
  EXPECT_EQ(sort_end_bit(2), 34);
  EXPECT_EQ(sort_end_bit(3), 34);
  EXPECT_EQ(sort_end_bit(2500), 32 + 12);  // 50x50 tiles: 2048 <= 2500 < 4096
  EXPECT_EQ(sort_end_bit(4095), 44);
  EXPECT_EQ(sort_end_bit(4096), 45);
  // Every key of the largest tile lies below the end bit, so the sort may ignore the bits above.
  const std::uint64_t last = isect_key(2499, std::numeric_limits<float>::max());
  EXPECT_EQ(last >> sort_end_bit(2500), 0u);
}

TEST(Intersect, TileGridRoundsUp) {
  const TileGrid g = TileGrid::with_side(40, 28, 16);
  EXPECT_EQ(g.width, 3);
  EXPECT_EQ(g.height, 2);
  EXPECT_EQ(g.count(), 6);
  EXPECT_EQ(TileGrid::with_side(16, 16, 16).count(), 1);
  EXPECT_EQ(TileGrid::with_side(17, 1, 16).width, 2);
  EXPECT_EQ(TileGrid::with_side(40, 28, 8), (TileGrid{5, 4, 8}));
}

// 16 px tiles from 512 x 512 pixels on, 8 px below.
TEST(Intersect, TileSideFollowsImageSize) {
  EXPECT_EQ(TileGrid::for_image(800, 800), (TileGrid{50, 50, 16}));
  EXPECT_EQ(TileGrid::for_image(512, 512).side, 16);
  EXPECT_EQ(TileGrid::for_image(1024, 256).side, 16);
  EXPECT_EQ(TileGrid::for_image(511, 512).side, 8);
  EXPECT_EQ(TileGrid::for_image(200, 200), (TileGrid{25, 25, 8}));
  EXPECT_EQ(TileGrid::for_image(0, 0).count(), 0);
}

// Tile boxes on the 3x2 grid of a 40x28 image. In tile units a splat covers
// [floor((m - r) / 16), ceil((m + r) / 16)) per axis, clamped to the grid.
TEST(Intersect, TileBox) {
  const TileGrid g = TileGrid::with_side(40, 28, 16);
  // (20 +- 5) / 16 = [0.94, 1.56] -> [0, 2); (14 +- 5) / 16 = [0.56, 1.19] -> [0, 2).
  EXPECT_EQ(corners(tile_box(20, 14, 5, 5, g)), (std::array{0, 0, 2, 2}));
  // Inside one tile: (8 +- 3) / 16 = [0.31, 0.69], (8 +- 2) / 16 = [0.38, 0.63].
  EXPECT_EQ(corners(tile_box(8, 8, 3, 2, g)), (std::array{0, 0, 1, 1}));
  // Edges on tile boundaries, half open: [0, 16] x [0, 16] is tile 0 alone, [16, 32] x [0, 16]
  // tile 1 alone, and [16, 48] x [0, 32] tiles 1..2 x 0..1.
  EXPECT_EQ(corners(tile_box(8, 8, 8, 8, g)), (std::array{0, 0, 1, 1}));
  EXPECT_EQ(corners(tile_box(24, 8, 8, 8, g)), (std::array{1, 0, 2, 1}));
  EXPECT_EQ(corners(tile_box(32, 16, 16, 16, g)), (std::array{1, 0, 3, 2}));
  // Bottom-right corner: (39 +- 2) / 16 = [2.31, 2.56], (27 +- 2) / 16 = [1.56, 1.81].
  EXPECT_EQ(corners(tile_box(39, 27, 2, 2, g)), (std::array{2, 1, 3, 2}));
  // Larger than the image: clamped to the whole grid.
  EXPECT_EQ(corners(tile_box(20, 14, 100, 100, g)), (std::array{0, 0, 3, 2}));
  // Off the left and bottom edges: x in [-14, -6] clamps to [0, 0), y in [36, 44] to [2, 2).
  EXPECT_EQ(corners(tile_box(-10, 40, 4, 4, g)), (std::array{0, 2, 0, 2}));
  // Straddling the top-left corner: [-6, 6] x [-4, 4] keeps tile 0 only.
  EXPECT_EQ(corners(tile_box(0, 0, 6, 4, g)), (std::array{0, 0, 1, 1}));
}

namespace {
// Three splats and a culled one, binned on a 40x28 image with tiles of `side` px.
Intersections hand_made(int side) {
  const std::vector<float> means2d = {20, 14, 8, 8, 8, 8, 32, 14};
  const std::vector<int> radii = {5, 5, 0, 0, 3, 2, 3, 4};
  const std::vector<float> depths = {1.0f, 0.1f, 2.0f, 0.5f};
  return intersect_tiles(means2d, radii, depths, {}, {}, TileGrid::with_side(40, 28, side));
}
}  // namespace

// On the 3x2 grid of 16 px tiles (numbered y * 3 + x):
//   0: mean (20, 14), radii (5, 5), depth 1.0 -> tiles 0, 1, 3, 4
//   1: radii (0, 0): culled, emits nothing
//   2: mean (8, 8),   radii (3, 2), depth 2.0 -> tile 0
//   3: mean (32, 14), radii (3, 4), depth 0.5 -> x [1.81, 2.19], y [0.63, 1.13] in tile units:
//      tiles [1, 3) x [0, 2) = 1, 2, 4, 5
TEST(Intersect, IntersectTilesHandMade) {
  const Intersections is = hand_made(16);
  const std::vector<std::uint64_t> want_keys = {
      isect_key(0, 1.0f), isect_key(0, 2.0f),  // tile 0: splat 0 in front of splat 2
      isect_key(1, 0.5f), isect_key(1, 1.0f),  // tile 1: splat 3 in front of splat 0
      isect_key(2, 0.5f),                      // tile 2
      isect_key(3, 1.0f),                      // tile 3
      isect_key(4, 0.5f), isect_key(4, 1.0f),  // tile 4
      isect_key(5, 0.5f),                      // tile 5
  };
  EXPECT_EQ(is.keys, want_keys);
  EXPECT_EQ(is.gaussian_from_isect, (std::vector<std::uint32_t>{0, 2, 3, 0, 3, 0, 3, 0, 3}));
  EXPECT_EQ(is.tile_ranges, (std::vector<std::uint32_t>{0, 2, 2, 4, 4, 5, 5, 6, 6, 8, 8, 9}));
  EXPECT_EQ(is.grid, TileGrid::with_side(40, 28, 16));
}

// The same splats on 8 px tiles (a 5x4 grid): splat 0 spans x [15, 25] -> tiles [1, 4), y [9, 19]
// -> [1, 3); splat 2 x [5, 11] -> [0, 2), y [6, 10] -> [0, 2); splat 3 x [29, 35] -> [3, 5),
// y [10, 18] -> [1, 3).
TEST(Intersect, IntersectTilesOnSmallTiles) {
  const Intersections is = hand_made(8);
  EXPECT_EQ(is.grid, TileGrid::with_side(40, 28, 8));
  std::vector<std::vector<std::uint32_t>> per_tile(20);
  for (std::size_t k = 0; k < is.keys.size(); ++k)
    per_tile[key_tile(is.keys[k])].push_back(is.gaussian_from_isect[k]);
  const std::vector<std::vector<std::uint32_t>> want = {
      {2}, {2},    {},  {},     {},   // row 0
      {2}, {0, 2}, {0}, {3, 0}, {3},  // row 1: by depth (3: 0.5, 0: 1.0, 2: 2.0)
      {},  {0},    {0}, {3, 0}, {3},  // row 2
      {},  {},     {},  {},     {}};  // row 3
  EXPECT_EQ(per_tile, want);
}

TEST(Intersect, SameTileAndDepthKeepGaussianOrder) {
  const std::vector<float> means2d = {8, 8, 8, 8, 8, 8};
  const std::vector<int> radii = {2, 2, 2, 2, 2, 2};
  const std::vector<float> depths = {3.0f, 1.0f, 3.0f};
  const Intersections is =
      intersect_tiles(means2d, radii, depths, {}, {}, TileGrid::with_side(16, 16, 16));
  EXPECT_EQ(is.gaussian_from_isect, (std::vector<std::uint32_t>{1, 0, 2}));
}

TEST(Intersect, TileRangesWithEmptyTiles) {
  // Tiles 0, 2 and 5 are empty: start = end = 0.
  const std::vector<std::uint64_t> keys = {isect_key(1, 1.0f), isect_key(1, 2.0f),
                                           isect_key(3, 1.0f), isect_key(4, 0.5f),
                                           isect_key(4, 1.0f), isect_key(4, 4.0f)};
  EXPECT_EQ(tile_ranges(keys, 6), (std::vector<std::uint32_t>{0, 0, 0, 2, 0, 0, 2, 3, 3, 6, 0, 0}));
  // The last tile occupied, the first empty.
  EXPECT_EQ(tile_ranges({isect_key(2, 1.0f)}, 3), (std::vector<std::uint32_t>{0, 0, 0, 0, 0, 1}));
  // No intersections at all.
  EXPECT_EQ(tile_ranges({}, 4), (std::vector<std::uint32_t>(8, 0)));
}

}  // namespace
}  // namespace splat::cpu
