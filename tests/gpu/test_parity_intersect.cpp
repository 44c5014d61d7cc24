// GPU tile intersection (count, depth order, scan, emit, radix sort by tile, tile ranges, tile
// order) against cpu::intersect_tiles.
// Everything here is integer or bit-pattern data, so every comparison is exact: the GPU must emit
// the same keys in the same order as the CPU's three passes and sort them into the same order.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <ios>
#include <string>
#include <utility>
#include <vector>

#include "cpu/intersect_cpu.h"
#include "cpu/project_cpu.h"
#include "cuda/buffer.h"
#include "cuda/intersect_cuda.h"
#include "engine/settings.h"
#include "engine/tiles.h"
#include "parity_util.h"

namespace splat {
namespace {

// Screen-space inputs of the intersection stage, [N, 2], [N, 2], [N].
struct SplatInputs {
  std::vector<float> means2d;
  std::vector<int> radii;
  std::vector<float> depths;
  std::vector<float> conics, opacities;
  int n() const { return int(depths.size()); }
};

SplatInputs projected(int n, int width, int height, std::uint32_t seed) {
  const test::Scene s = test::random_scene(n, width, height, seed);
  cpu::Projected<float> p = cpu::project_fwd<float>(s.gaussians, s.camera, RasterSettings{});
  return {std::move(p.means2d), std::move(p.radii), std::move(p.depths), std::move(p.conics),
          std::move(p.opacities)};
}

// What the GPU's passes before the tile sort must produce, computed here on the CPU: tiles per
// splat; the splats by depth key, then index; the inclusive prefix sum of the counts in that
// order; and (tile, gaussian) in that order with each splat's box in row-major order.
struct Emitted {
  std::vector<std::int32_t> counts, offsets;
  std::vector<std::uint32_t> order, keys, ids;
};

Emitted cpu_emit(const SplatInputs& s, const cpu::TileGrid& grid) {
  Emitted e;
  for (int i = 0; i < s.n(); ++i) e.order.push_back(std::uint32_t(i));
  std::stable_sort(e.order.begin(), e.order.end(), [&](std::uint32_t a, std::uint32_t b) {
    return tiles::depth_key(s.depths[a]) < tiles::depth_key(s.depths[b]);
  });
  e.counts.assign(std::size_t(s.n()), 0);
  std::int32_t total = 0;
  for (const std::uint32_t i : e.order) {
    tiles::for_each_tile(s.means2d[i * 2], s.means2d[i * 2 + 1], s.radii[i * 2], s.radii[i * 2 + 1],
                         s.conics[i * 3], s.conics[i * 3 + 1], s.conics[i * 3 + 2], s.opacities[i],
                         true, grid, [&](int tile) {
                           e.keys.push_back(std::uint32_t(tile));
                           e.ids.push_back(i);
                           ++e.counts[i];
                         });
    total += e.counts[i];
    e.offsets.push_back(total);
  }
  return e;
}

struct GpuResult {
  int m = 0;
  std::vector<std::int32_t> counts, offsets;
  std::vector<float> colors;  // what the records' colors must be
  std::vector<cuda::SplatRecord> records;
  std::vector<std::uint32_t> depth_order, keys, sorted_keys, ids, sorted_ids, ranges, order;
};

// Downloads the first `size` elements of a buffer allocated with at least one element.
template <class T>
std::vector<T> download(const cuda::DeviceBuffer<T>& b, std::size_t size) {
  std::vector<T> v = b.download();
  v.resize(size);
  return v;
}

// The whole stage as a training step runs it, with every output poisoned first. end_bit = 0
// means cuda::tile_key_bits(tile count), the value the pipeline passes.
GpuResult run_gpu(const SplatInputs& s, const cpu::TileGrid& grid, int end_bit = 0) {
  const int n = s.n();
  const std::size_t n1 = std::size_t(n > 0 ? n : 1);  // never allocate zero elements
  const auto means2d = test::to_device(s.means2d);
  const auto radii = test::to_device(s.radii);
  const auto depths = test::to_device(s.depths);
  const auto conics = test::to_device(s.conics);
  const auto opacities = test::to_device(s.opacities);
  cuda::ProjectedPtrs proj{};
  proj.means2d = const_cast<float*>(means2d.data());
  proj.radii = const_cast<int*>(radii.data());
  proj.depths = const_cast<float*>(depths.data());
  proj.conics = const_cast<float*>(conics.data());
  proj.opacities = const_cast<float*>(opacities.data());
  GpuResult r;
  for (int i = 0; i < 3 * n; ++i) r.colors.push_back(float(i % 11) / 10.0f);
  const auto colors = test::to_device(r.colors.empty() ? std::vector<float>(1) : r.colors);
  proj.colors = const_cast<float*>(colors.data());
  auto counts = test::poisoned<std::int32_t>(n1);
  auto offsets = test::poisoned<std::int32_t>(n1);

  auto records = test::poisoned<cuda::SplatRecord>(n1);
  auto tests = test::poisoned<cuda::TileTest>(n1);
  auto iota = test::poisoned<std::uint32_t>(n1);
  auto depth_keys = test::poisoned<std::uint32_t>(n1);
  auto depth_keys_sorted = test::poisoned<std::uint32_t>(n1);
  auto depth_order = test::poisoned<std::uint32_t>(n1);
  cuda::DeviceBuffer<std::byte> depth_temp(std::max<std::size_t>(cuda::sort_temp_bytes(n), 1));
  cuda::DeviceBuffer<std::byte> scan_temp(std::max<std::size_t>(cuda::scan_temp_bytes(n), 1));
  auto large = test::poisoned<std::uint32_t>(n1);
  auto large_count = test::poisoned<std::int32_t>(1);
  const cuda::SplatTiles st{counts.data(),
                            records.data(),
                            tests.data(),
                            {depth_keys.data(),
                             depth_keys_sorted.data(),
                             iota.data(),
                             depth_order.data(),
                             {depth_temp.data(), depth_temp.size()}},
                            offsets.data(),
                            {scan_temp.data(), scan_temp.size()},
                            large.data(),
                            large_count.data()};
  cuda::intersect_count(n, proj, grid, st, nullptr);
  cuda::depth_order(n, st.depth, nullptr);
  cuda::intersect_scan(n, st, nullptr);
  r.counts = download(counts, std::size_t(n));
  r.offsets = download(offsets, std::size_t(n));
  r.records = download(records, std::size_t(n));
  r.depth_order = download(depth_order, std::size_t(n));
  r.m = n > 0 ? r.offsets.back() : 0;

  const std::size_t m1 = std::size_t(r.m > 0 ? r.m : 1);
  auto keys = test::poisoned<std::uint32_t>(m1);
  auto ids = test::poisoned<std::uint32_t>(m1);
  auto sorted_keys = test::poisoned<std::uint32_t>(m1);
  auto sorted_ids = test::poisoned<std::uint32_t>(m1);
  auto ranges = test::poisoned<std::uint32_t>(std::size_t(grid.count()) * 2);
  cuda::DeviceBuffer<std::byte> sort_temp(std::max<std::size_t>(cuda::sort_temp_bytes(r.m), 1));
  const cuda::IsectBuffers is{{keys.data(),
                               sorted_keys.data(),
                               ids.data(),
                               sorted_ids.data(),
                               {sort_temp.data(), sort_temp.size()}},
                              r.m};
  cuda::intersect_emit(n, grid, st, is, nullptr);
  cuda::sort_intersections(r.m, end_bit > 0 ? end_bit : cuda::tile_key_bits(grid.count()), is.sort,
                           nullptr);
  cuda::tile_ranges(r.m, sorted_keys.data(), grid.count(), ranges.data(), nullptr);
  const std::size_t tiles1 = std::size_t(std::max(grid.count(), 1));
  auto order = test::poisoned<std::uint32_t>(tiles1);
  auto order_scratch = test::poisoned<std::uint32_t>(tiles1 * 3);
  cuda::DeviceBuffer<std::byte> order_temp(
      std::max<std::size_t>(cuda::tile_order_temp_bytes(grid.count()), 1));
  cuda::tile_order(grid.count(), ranges.data(), order_scratch.data(),
                   {order_temp.data(), order_temp.size()}, order.data(), nullptr);
  SPLAT_CUDA_CHECK(cudaDeviceSynchronize());

  r.keys = download(keys, std::size_t(r.m));
  r.ids = download(ids, std::size_t(r.m));
  r.sorted_keys = download(sorted_keys, std::size_t(r.m));
  r.sorted_ids = download(sorted_ids, std::size_t(r.m));
  r.ranges = ranges.download();
  r.order = download(order, std::size_t(grid.count()));
  return r;
}

// Exact equality, reporting the number of differences and the first one (not the whole array).
template <class T>
void expect_same(const std::string& what, const std::vector<T>& got, const std::vector<T>& want) {
  ASSERT_EQ(got.size(), want.size()) << what;
  std::size_t bad = 0, first = 0;
  for (std::size_t i = 0; i < got.size(); ++i)
    if (got[i] != want[i] && bad++ == 0) first = i;
  if (bad == 0) return;
  ADD_FAILURE() << what << ": " << bad << " of " << got.size() << " differ, first at " << first
                << ": got " << got[first] << ", want " << want[first];
}

// Every key (tile id) must lie below the end bit handed to the sort, else the truncated sort
// would ignore tile bits; and inside the grid.
void expect_keys_fit(const std::vector<std::uint32_t>& keys, int tile_count) {
  const int end_bit = cuda::tile_key_bits(tile_count);
  std::size_t above = 0, outside = 0;
  for (const std::uint32_t k : keys) {
    above += (k >> end_bit) != 0;
    outside += k >= std::uint32_t(tile_count);
  }
  EXPECT_EQ(above, 0u) << "keys with bits at or above end bit " << end_bit;
  EXPECT_EQ(outside, 0u) << "keys whose tile id is outside the " << tile_count << "-tile grid";
}

// The tiles by descending list length (clamped at 2^16 - 1), equal lengths in tile order.
std::vector<std::uint32_t> longest_first(const std::vector<std::uint32_t>& ranges) {
  std::vector<std::uint32_t> order(ranges.size() / 2);
  for (std::size_t t = 0; t < order.size(); ++t) order[t] = std::uint32_t(t);
  const auto length = [&](std::uint32_t t) {
    return std::min(ranges[t * 2 + 1] - ranges[t * 2], 0xFFFFu);
  };
  std::stable_sort(order.begin(), order.end(),
                   [&](std::uint32_t a, std::uint32_t b) { return length(a) > length(b); });
  return order;
}

// All outputs against the CPU: the pre-sort passes against cpu_emit, the sorted arrays and
// ranges against cpu::intersect_tiles itself.
void expect_matches_cpu(const SplatInputs& s, const cpu::TileGrid& grid, const GpuResult& r) {
  const Emitted e = cpu_emit(s, grid);
  const cpu::Intersections want =
      cpu::intersect_tiles(s.means2d, s.radii, s.depths, s.conics, s.opacities, grid);
  ASSERT_EQ(e.keys.size(), want.keys.size()) << "test's emit disagrees with cpu::intersect_tiles";
  ASSERT_EQ(std::size_t(r.m), want.keys.size()) << "intersection count offsets[n-1]";
  expect_same("tiles_per_splat", r.counts, e.counts);
  expect_same("depth order", r.depth_order, e.order);
  expect_same("offsets", r.offsets, e.offsets);
  // The rasterizer's records: copies and exact scalings of the inputs, and q_max from the same
  // double-precision formula on both sides, rounded to float: equal up to the last bit of the
  // device's log.
  ASSERT_EQ(r.records.size(), std::size_t(s.n()));
  for (int i = 0; i < s.n(); ++i) {
    const cuda::SplatRecord& got = r.records[std::size_t(i)];
    const float q_max = got.mean.z;
    ASSERT_NEAR(q_max, tiles::max_quad(s.opacities[i]), 1e-6f * (1.0f + std::fabs(q_max)))
        << "q_max of splat " << i;
    const cuda::SplatRecord want =
        cuda::splat_record(&s.conics[std::size_t(i) * 3], s.opacities[i],
                           &s.means2d[std::size_t(i) * 2], q_max, &r.colors[std::size_t(i) * 3]);
    const float g[12] = {got.q.x,     got.q.y,     got.q.z,     got.q.w,
                         got.mean.x,  got.mean.y,  got.mean.z,  got.mean.w,
                         got.color.x, got.color.y, got.color.z, got.color.w};
    const float w[12] = {want.q.x,     want.q.y,     want.q.z,     want.q.w,
                         want.mean.x,  want.mean.y,  want.mean.z,  want.mean.w,
                         want.color.x, want.color.y, want.color.z, want.color.w};
    for (int k = 0; k < 12; ++k)
      ASSERT_EQ(g[k], w[k]) << "record of splat " << i << ", float " << k;
  }
  expect_same("emitted keys", r.keys, e.keys);
  expect_same("emitted gaussian ids", r.ids, e.ids);
  std::vector<std::uint32_t> want_tiles;
  for (const std::uint64_t k : want.keys) want_tiles.push_back(cpu::key_tile(k));
  expect_same("sorted keys (tile ids)", r.sorted_keys, want_tiles);
  expect_same("gaussian_from_isect", r.sorted_ids, want.gaussian_from_isect);
  expect_same("tile_ranges", r.ranges, want.tile_ranges);
  expect_same("tile order", r.order, longest_first(want.tile_ranges));
  expect_keys_fit(r.sorted_keys, grid.count());
}

struct Case {
  int n, width, height;
  std::uint32_t seed;
};

TEST(IntersectParity, MatchesCpuOnProjectedScenes) {
  for (const Case c : {Case{400, 64, 48, 1}, Case{2000, 97, 61, 2}, Case{3000, 160, 120, 3},
                       Case{3000, 250, 170, 4}, Case{1500, 800, 600, 5}}) {
    SCOPED_TRACE(std::to_string(c.n) + " splats, " + std::to_string(c.width) + "x" +
                 std::to_string(c.height));
    const SplatInputs s = projected(c.n, c.width, c.height, c.seed);
    for (const int side : {tiles::kLargeTile, tiles::kSmallTile}) {
      SCOPED_TRACE("tiles of " + std::to_string(side) + " px");
      const cpu::TileGrid grid = cpu::TileGrid::with_side(c.width, c.height, side);
      const GpuResult r = run_gpu(s, grid);
      // Coverage: culled splats, multi-tile boxes, and several intersections per tile all occur,
      // so the test exercises every path it claims to.
      const Emitted e = cpu_emit(s, grid);
      EXPECT_GT(std::count(e.counts.begin(), e.counts.end(), 0), 0) << "no culled splat";
      EXPECT_GT(*std::max_element(e.counts.begin(), e.counts.end()), 1) << "no multi-tile splat";
      EXPECT_GT(r.m, c.n / 2) << "too few intersections to mean anything";
      const cpu::Intersections boxes =
          cpu::intersect_tiles(s.means2d, s.radii, s.depths, {}, {}, grid);
      EXPECT_LT(std::size_t(r.m), boxes.keys.size()) << "no tile of any box was culled";
      EXPECT_FALSE(std::is_sorted(r.order.begin(), r.order.end()))
          << "tile order is the identity: nothing reordered";
      expect_matches_cpu(s, grid, r);
    }
  }
}

// Duplicated splats give runs of identical keys (same tile, same depth bits): the stable radix
// sort of keys emitted in gaussian order must order them by gaussian index like the CPU does.
TEST(IntersectParity, EqualKeysKeepGaussianOrder) {
  SplatInputs s = projected(1200, 97, 61, 11);
  for (int i = 0; i < s.n(); ++i) {
    const int src = i - i % 3;  // splats 3k+1 and 3k+2 copy splat 3k
    s.means2d[i * 2] = s.means2d[src * 2];
    s.means2d[i * 2 + 1] = s.means2d[src * 2 + 1];
    s.radii[i * 2] = s.radii[src * 2];
    s.radii[i * 2 + 1] = s.radii[src * 2 + 1];
    s.depths[i] = s.depths[src];
    for (int k = 0; k < 3; ++k) s.conics[i * 3 + k] = s.conics[src * 3 + k];
    s.opacities[i] = s.opacities[src];
  }
  const cpu::TileGrid grid = cpu::TileGrid::for_image(97, 61);
  const GpuResult r = run_gpu(s, grid);
  std::size_t ties = 0;
  for (std::size_t k = 1; k < r.sorted_keys.size(); ++k)
    ties += r.sorted_keys[k] == r.sorted_keys[k - 1] &&
            s.depths[r.sorted_ids[k]] == s.depths[r.sorted_ids[k - 1]];
  EXPECT_GT(ties, 100u) << "the scene should produce many equal (tile, depth) pairs";
  expect_matches_cpu(s, grid, r);
}

// Splats with more than 256 candidate tiles are emitted by a kernel of their own, one warp each,
// into the same lists as the others: every 7th splat grown tenfold, so both kernels write.
TEST(IntersectParity, LargeSplatsMatchCpu) {
  const int width = 800, height = 600;
  SplatInputs s = projected(3000, width, height, 41);
  for (int i = 0; i < s.n(); i += 7) {
    for (int k = 0; k < 2; ++k) s.radii[i * 2 + k] *= 10;
    for (int k = 0; k < 3; ++k) s.conics[i * 3 + k] /= 100.0f;
  }
  const cpu::TileGrid grid = cpu::TileGrid::for_image(width, height);
  int large = 0;
  for (int i = 0; i < s.n(); ++i) {
    const tiles::Box b = tiles::box(s.means2d[i * 2], s.means2d[i * 2 + 1], s.radii[i * 2],
                                    s.radii[i * 2 + 1], grid);
    large += std::max(b.x1 - b.x0, 0) * std::max(b.y1 - b.y0, 0) > 256;
  }
  EXPECT_GT(large, 100) << "too few splats with over 256 candidate tiles";
  EXPECT_LT(large, s.n() / 2) << "too few small splats";
  expect_matches_cpu(s, grid, run_gpu(s, grid));
}

// Boxes at the grid's edges and corners, on tile boundaries, larger than the image, off screen,
// with one radius zero (still binned) and both zero or negative (culled); 40x28 is a 3x2 grid
// whose last column and row are partial.
TEST(IntersectParity, HandMadeBoxes) {
  SplatInputs s = {
      {20,  14, 8, 8, 8,  8,  24, 8,  32, 16, 39, 27, 20, 14,
       -10, 40, 0, 0, 20, 14, 32, 14, 17, 3,  17, 3,  8,  8},
      {5, 5, 0, 0, 8, 8, 8, 8, 16, 16, 2, 2, 100, 100, 4, 4, 6, 4, 5, 0, 0, 5, 0, 7, 0, 0, -3, -1},
      {1.0f, 0.1f, 2.0f, 0.5f, 3.0f, 0.25f, 7.0f, 1.5f, 0.75f, 1.0f, 1.0f, 2.5f, 2.5f, 0.5f},
      {},
      std::vector<float>(14, 1.0f)};  // opaque ...
  for (int i = 0; i < 14; ++i)
    s.conics.insert(s.conics.end(), {1e-6f, 0.0f, 1e-6f});  // ... and wide: whole boxes
  const cpu::TileGrid grid = cpu::TileGrid::with_side(40, 28, tiles::kLargeTile);
  const GpuResult r = run_gpu(s, grid);
  // Pinned by hand (tests/test_intersect.cpp has the box arithmetic): radius-8 boxes on tile
  // boundaries touch one tile, radius 100 all six, off screen none. One zero radius still bins:
  // radii (5, 0) at (20, 14) give x [0.94, 1.56] -> 2 tiles, y [0.875, 0.875] -> floor 0, ceil 1
  // -> 1 tile; radii (0, 5) at (32, 14) give x [2, 2] on a tile edge -> empty box, 0 tiles;
  // (0, 7) at (17, 3) give x [1.06, 1.06] -> 1 tile, y [-0.25, 0.63] -> 1 tile.
  EXPECT_EQ(r.counts, (std::vector<std::int32_t>{4, 0, 1, 1, 4, 1, 6, 0, 1, 2, 0, 1, 0, 0}));
  expect_matches_cpu(s, grid, r);
}

// The tile sort looks only at bits [0, tile_key_bits(tiles)); that must give exactly the order of
// a full 32-bit sort, and one bit fewer must not (else this comparison could never fail).
TEST(IntersectParity, EndBitTruncationKeepsOrder) {
  const int width = 250, height = 170;  // 16 x 11 = 176 tiles: 8 key bits, tile ids up to 175
  const SplatInputs s = projected(3000, width, height, 21);
  const cpu::TileGrid grid = cpu::TileGrid::with_side(width, height, tiles::kLargeTile);
  const int end_bit = cuda::tile_key_bits(grid.count());
  ASSERT_EQ(end_bit, 8);
  const GpuResult tight = run_gpu(s, grid, end_bit);
  const GpuResult full = run_gpu(s, grid, 32);
  expect_keys_fit(tight.keys, grid.count());
  expect_same("keys, end bit 8 vs 32", tight.sorted_keys, full.sorted_keys);
  expect_same("gaussian ids, end bit 8 vs 32", tight.sorted_ids, full.sorted_ids);
  expect_same("tile ranges, end bit 8 vs 32", tight.ranges, full.ranges);
  expect_matches_cpu(s, grid, full);

  // Tiles 128..175 need bit 7; without it they sort among tiles 0..47.
  std::size_t high_tiles = 0;
  for (const std::uint32_t k : tight.keys) high_tiles += k >= 128;
  ASSERT_GT(high_tiles, 0u) << "no intersection uses the top tile bit";
  const GpuResult short_by_one = run_gpu(s, grid, end_bit - 1);
  EXPECT_NE(short_by_one.sorted_keys, full.sorted_keys) << "a sort missing the top tile bit agreed";
}

// Everything culled: no intersections, and every range {0, 0} although the ranges buffer started
// poisoned (tile_ranges zeroes it itself). Then no splats at all.
TEST(IntersectParity, EmptyWhenAllCulled) {
  SplatInputs s = projected(500, 64, 48, 31);
  std::fill(s.radii.begin(), s.radii.end(), 0);
  const cpu::TileGrid grid = cpu::TileGrid::for_image(64, 48);
  const GpuResult r = run_gpu(s, grid);
  EXPECT_EQ(r.m, 0);
  expect_same("tiles_per_splat", r.counts, std::vector<std::int32_t>(std::size_t(s.n()), 0));
  expect_same("offsets", r.offsets, std::vector<std::int32_t>(std::size_t(s.n()), 0));
  expect_same("tile_ranges", r.ranges,
              std::vector<std::uint32_t>(std::size_t(grid.count()) * 2, 0));
  expect_matches_cpu(s, grid, r);

  const GpuResult none = run_gpu(SplatInputs{}, grid);
  EXPECT_EQ(none.m, 0);
  EXPECT_TRUE(none.counts.empty());
  expect_same("tile_ranges, no splats", none.ranges,
              std::vector<std::uint32_t>(std::size_t(grid.count()) * 2, 0));
}

}  // namespace
}  // namespace splat
