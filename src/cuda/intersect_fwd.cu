// Tile intersection on the GPU: the order of cpu::intersect_tiles (tile, then depth key, then
// splat index) from two short sorts instead of one long one. The splats are sorted by depth once
// (the 24-bit tiles::depth_key, N entries; stable, so equal keys keep index order), the
// intersections are emitted in that order, and a stable sort by tile id alone (12 bits for 2,500
// tiles) keeps it within each tile. The CPU sorts (tile << 32 | depth key, index) pairs; one sort
// of those 44-bit keys over all M intersections took twice as long (tools/gpu-machine/perf-log.md).
#include <thrust/iterator/permutation_iterator.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>
#include <string>

#include "core/error.h"
#include "cuda/check.h"
#include "cuda/intersect_cuda.h"
#include "engine/settings.h"
#include "engine/tiles.h"

namespace splat::config {
// Every kernel here is a flat map over splats or intersections with little state per thread.
inline constexpr int intersect_block_size = 256;
}  // namespace splat::config

namespace splat::cuda {
namespace {

unsigned blocks_for(int items) {
  return unsigned((unsigned(items) + config::intersect_block_size - 1) /
                  config::intersect_block_size);
}

constexpr int kWarps = config::intersect_block_size / 32;
constexpr unsigned kFullWarp = 0xffffffffu;

// One lane's splat as tiles::for_each_tile sees it: the n = w x h candidate tiles of its box, in
// row-major order from (x0, y0), and the tile test's inputs; start = the candidates of the warp's
// lanes before it.
struct Candidates {
  float a, b, c, mean_x, mean_y, q_max;
  int x0, y0, w, n, start;
};

// The candidate tiles of splat t: its box's (none when culled) with its tile-test inputs.
__device__ __forceinline__ Candidates candidates(const TileTest& t, tiles::Grid grid) {
  if (t.radius_x <= 0 && t.radius_y <= 0) return {};
  const tiles::Box box = tiles::box(t.mean_x, t.mean_y, t.radius_x, t.radius_y, grid);
  const int w = max(box.x1 - box.x0, 0), h = max(box.y1 - box.y0, 0);
  return {t.a,
          t.b,
          t.c,
          t.mean_x,
          t.mean_y,
          t.q_max,
          box.x0,
          box.y0,
          w,
          t.q_max < 0.0f ? 0 : w * h,  // negative: the splat reaches no tile
          0};
}

// tiles::for_each_tile (with culling) for the 32 lanes' splats, the whole warp testing 32
// candidate tiles at a time: the lanes' candidates in a row, lane l taking candidate base + l.
// One splat per thread left a warp waiting for its largest box (thousands of tests for a splat
// near the camera while its neighbours had one). Calls f(owner, tile, rank) on the lane that found
// that the splat of lane `owner` reaches `tile`, its rank-th tile in for_each_tile's order, so the
// decisions and the order are the CPU's, bit for bit. Returns the number of tiles this lane's
// splat (`mine`, empty for none) reaches. Every lane of the warp must call it; s and done are the
// warp's own [32] of shared memory.
template <class F>
__device__ __forceinline__ int warp_for_each_tile(
    Candidates mine, tiles::Grid grid, Candidates* s, int* done, F&& f) {
  const int lane = int(threadIdx.x % 32);
  int end = mine.n;  // inclusive scan of the lanes' candidate counts
  for (int offset = 1; offset < 32; offset *= 2) {
    const int v = __shfl_up_sync(kFullWarp, end, offset);
    if (lane >= offset) end += v;
  }
  mine.start = end - mine.n;
  const int total = __shfl_sync(kFullWarp, end, 31);
  s[lane] = mine;
  done[lane] = 0;  // tiles reached so far, per lane's splat
  __syncwarp();
  for (int base = 0; base < total; base += 32) {
    const int k = base + lane;
    // The candidate's splat: the last lane whose candidates start at or before k (that lane has
    // some, since the next one starts after k).
    int owner = 0;
    for (int step = 16; step > 0; step /= 2)
      if (s[owner + step].start <= k) owner += step;
    const Candidates& o = s[owner];
    const int local = k - o.start;
    int tile = 0;
    bool hit = false;
    if (k < total) {
      const int ty = o.y0 + local / o.w, tx = o.x0 + local % o.w;
      tile = ty * grid.width + tx;
      hit = tiles::reaches(o.a, o.b, o.c, o.mean_x, o.mean_y, o.q_max, tx, ty, grid.side);
    }
    // The owner's hits in this window before this lane, after those of earlier windows.
    const unsigned hits = __ballot_sync(kFullWarp, hit);
    const unsigned from = unsigned(max(o.start - base, 0));
    const int rank = done[owner] + __popc(hits & ((1u << lane) - 1u) & ~((1u << from) - 1u));
    if (hit) f(owner, tile, rank);
    __syncwarp();
    // The owner's last candidate in this window carries the count on.
    if (k < total && (local == o.n - 1 || lane == 31)) done[owner] = rank + int(hit);
    __syncwarp();
  }
  return done[lane];
}

__global__ void __launch_bounds__(config::intersect_block_size)
    count_kernel(int n,
                 const float* __restrict__ means2d,    // [N, 2]
                 const int* __restrict__ radii,        // [N, 2]
                 const float* __restrict__ conics,     // [N, 3]
                 const float* __restrict__ colors,     // [N, 3]
                 const float* __restrict__ opacities,  // [N]
                 tiles::Grid grid,
                 std::int32_t* __restrict__ tiles_per_splat,  // [N]
                 const float* __restrict__ depths,            // [N]
                 SplatRecord* __restrict__ records,           // [N]
                 TileTest* __restrict__ tests,                // [N]
                 std::uint32_t* __restrict__ depth_keys,      // [N]
                 std::uint32_t* __restrict__ iota,            // [N]
                 std::int32_t* __restrict__ large_count) {    // emit's list, emptied here
  __shared__ Candidates s_candidates[kWarps][32];
  __shared__ int s_done[kWarps][32];
  const int i = int(blockIdx.x * blockDim.x + threadIdx.x), warp = int(threadIdx.x / 32);
  if (i == 0) *large_count = 0;
  TileTest t{};
  if (i < n) {
    const float q_max = tiles::max_quad(opacities[i]);
    t = {conics[i * 3], conics[i * 3 + 1], conics[i * 3 + 2], means2d[i * 2], means2d[i * 2 + 1],
         q_max,         radii[i * 2],      radii[i * 2 + 1]};
    tests[i] = t;
    records[i] = splat_record(conics + std::size_t(i) * 3, opacities[i],
                              means2d + std::size_t(i) * 2, q_max, colors + std::size_t(i) * 3);
    depth_keys[i] = tiles::depth_key(depths[i]);
    iota[i] = std::uint32_t(i);
  }
  const int count = warp_for_each_tile(i < n ? candidates(t, grid) : Candidates{}, grid,
                                       s_candidates[warp], s_done[warp], [](int, int, int) {});
  if (i < n) tiles_per_splat[i] = count;
}

// Entry k of the lists, if it fits (bounded sizing: entries past the capacity are dropped).
__device__ __forceinline__ void put(std::int32_t k,
                                    int tile,
                                    std::uint32_t id,
                                    std::int32_t capacity,
                                    std::uint32_t* keys,
                                    std::uint32_t* gaussian_ids) {
  if (k < capacity) {
    keys[k] = std::uint32_t(tile);
    gaussian_ids[k] = id;
  }
}

// Splats with more candidate tiles than this are left by emit_kernel to emit_large_kernel, one
// warp each. The splats come in depth order, and on a capture the nearest are the largest (a
// thousand candidates and more each): a warp of 32 of them ran long after all the others.
constexpr int kLargeCandidates = 256;

__global__ void __launch_bounds__(config::intersect_block_size)
    emit_kernel(int n,
                const TileTest* __restrict__ tests,        // [N]
                const std::uint32_t* __restrict__ order,   // [N] depth order
                const std::int32_t* __restrict__ offsets,  // [N] inclusive prefix sum, depth order
                tiles::Grid grid,
                std::int32_t capacity,
                std::uint32_t* __restrict__ keys,          // [capacity] tile ids
                std::uint32_t* __restrict__ gaussian_ids,  // [capacity]
                std::uint32_t* __restrict__ large,         // [N] depth ranks left to emit_large
                std::int32_t* __restrict__ large_count) {
  __shared__ Candidates s_candidates[kWarps][32];
  __shared__ int s_done[kWarps][32];
  __shared__ std::int32_t s_first[kWarps][32];  // where each lane's splat's entries start
  __shared__ std::uint32_t s_id[kWarps][32];
  const int j = int(blockIdx.x * blockDim.x + threadIdx.x), warp = int(threadIdx.x / 32),
            lane = j % 32;
  const int i = j < n ? int(order[j]) : -1;
  s_first[warp][lane] = j < n && j > 0 ? offsets[j - 1] : 0;
  s_id[warp][lane] = std::uint32_t(i);
  // The same decisions as count_kernel, from the inputs it stored, so exactly tiles_per_splat[i]
  // entries; one 32-byte gather per splat.
  Candidates mine{};
  if (i >= 0) mine = candidates(tests[i], grid);
  const bool is_large = mine.n > kLargeCandidates;
  if (is_large) mine = {};
  const unsigned large_lanes = __ballot_sync(kFullWarp, is_large);
  if (large_lanes != 0) {  // one atomic per warp appends its large splats' ranks
    std::int32_t at = 0;
    if (lane == __ffs(large_lanes) - 1) at = atomicAdd(large_count, __popc(large_lanes));
    at = __shfl_sync(kFullWarp, at, __ffs(large_lanes) - 1);
    if (is_large) large[at + __popc(large_lanes & ((1u << lane) - 1u))] = std::uint32_t(j);
  }
  warp_for_each_tile(
      mine, grid, s_candidates[warp], s_done[warp], [&](int owner, int tile, int rank) {
        put(s_first[warp][owner] + rank, tile, s_id[warp][owner], capacity, keys, gaussian_ids);
      });
}

// emit_kernel's large splats, one warp each (warp_for_each_tile with the splat on lane 0 alone:
// the same tests, ranks and entries). The grid strides over the list, whose length only the
// device knows. The atomics fill the list in a different order each run; every entry's place in
// the lists (its splat's offset plus its rank) stays the same, so the lists are deterministic.
constexpr int kLargeBlocks = 128;
__global__ void __launch_bounds__(config::intersect_block_size)
    emit_large_kernel(const TileTest* __restrict__ tests,        // [N]
                      const std::uint32_t* __restrict__ order,   // [N] depth order
                      const std::int32_t* __restrict__ offsets,  // [N]
                      tiles::Grid grid,
                      std::int32_t capacity,
                      std::uint32_t* __restrict__ keys,
                      std::uint32_t* __restrict__ gaussian_ids,
                      const std::uint32_t* __restrict__ large,  // [*large_count] depth ranks
                      const std::int32_t* __restrict__ large_count) {
  __shared__ Candidates s_candidates[kWarps][32];
  __shared__ int s_done[kWarps][32];
  const int warp = int(threadIdx.x / 32), lane = int(threadIdx.x % 32);
  const int count = *large_count;
  for (int w = int(blockIdx.x) * kWarps + warp; w < count; w += int(gridDim.x) * kWarps) {
    const std::uint32_t j = large[w], i = order[j];
    const std::int32_t first = j > 0 ? offsets[j - 1] : 0;
    warp_for_each_tile(lane == 0 ? candidates(tests[i], grid) : Candidates{}, grid,
                       s_candidates[warp], s_done[warp], [&](int, int tile, int rank) {
                         put(first + rank, tile, i, capacity, keys, gaussian_ids);
                       });
  }
}

// Bounded sizing: entries [count, capacity) become padding whose key has every sorted bit set,
// so it sorts after all real entries and names a tile past the grid (tile_ranges skips it).
// status[0] = count; status[1] is raised (never lowered) when the count exceeds the capacity;
// status[2] is the largest count so far (the room a repeated step needs, whichever view
// overflowed).
__global__ void pad_kernel(int n,
                           const std::int32_t* __restrict__ offsets,  // [N] inclusive prefix sum
                           std::int32_t capacity,
                           std::uint32_t pad_key,
                           std::uint32_t* __restrict__ keys,          // [capacity]
                           std::uint32_t* __restrict__ gaussian_ids,  // [capacity]
                           int* __restrict__ status) {                // [3]
  const std::int32_t count = n > 0 ? offsets[n - 1] : 0;
  const std::int32_t k = std::int32_t(blockIdx.x * blockDim.x + threadIdx.x);
  if (k == 0) {
    status[0] = count;
    if (count > capacity) status[1] = 1;
    atomicMax(&status[2], count);
  }
  if (k >= count && k < capacity) {
    keys[k] = pad_key;
    gaussian_ids[k] = 0;
  }
}

// A tile's range starts where the tile id differs from the previous key and ends where it differs
// from the next; each boundary has exactly one writer, so no atomics are needed.
// Padding entries (tile ids past the grid) own no range.
__global__ void tile_ranges_kernel(int m,
                                   const std::uint32_t* __restrict__ sorted_keys,  // [M] tile ids
                                   std::uint32_t tile_count,
                                   std::uint32_t* __restrict__ ranges) {  // [tiles, 2]
  const int k = int(blockIdx.x * blockDim.x + threadIdx.x);
  if (k >= m) return;
  const std::uint32_t tile = sorted_keys[k];
  if (tile >= tile_count) return;
  if (k == 0 || sorted_keys[k - 1] != tile) ranges[std::size_t(tile) * 2] = std::uint32_t(k);
  if (k + 1 == m || sorted_keys[k + 1] != tile)
    ranges[std::size_t(tile) * 2 + 1] = std::uint32_t(k + 1);
}

// The bits of tile_order's keys: lists are ordered by length up to 2^16 - 1 entries, longer ones
// tie at the top (the order only schedules the blocks; every order gives the same images). Two
// radix passes in CUB's single-tile sort where 32-bit lengths took four.
constexpr int kTileOrderBits = 16;

// counts[t] = the length of tile t's list, clamped to kTileOrderBits, tiles[t] = t: the keys and
// values of tile_order's sort.
__global__ void tile_counts_kernel(int tile_count,
                                   const std::uint32_t* __restrict__ ranges,  // [tiles, 2]
                                   std::uint32_t* __restrict__ counts,        // [tiles]
                                   std::uint32_t* __restrict__ tiles) {       // [tiles]
  const int t = int(blockIdx.x * blockDim.x + threadIdx.x);
  if (t >= tile_count) return;
  counts[t] =
      min(ranges[std::size_t(t) * 2 + 1] - ranges[std::size_t(t) * 2], (1u << kTileOrderBits) - 1u);
  tiles[t] = std::uint32_t(t);
}

}  // namespace

void intersect_count(
    int n, const ProjectedPtrs& p, tiles::Grid grid, const SplatTiles& s, cudaStream_t stream) {
  if (n <= 0) return;
  count_kernel<<<blocks_for(n), config::intersect_block_size, 0, stream>>>(
      n, p.means2d, p.radii, p.conics, p.colors, p.opacities, grid, s.tiles_per_splat, p.depths,
      s.records, s.tests, s.depth.keys_in, s.depth.ids_in, s.large_count);
  SPLAT_CUDA_CHECK_LAUNCH("intersect_count");
}

void depth_order(int n, const SortBuffers& depth, cudaStream_t stream) {
  if (n <= 0) return;
  sort_intersections(n, tiles::kDepthKeyBits, depth, stream);
}

// tiles_per_splat[order[j]] at j: the counts in depth order, read by the scan where it needs them.
auto counts_in_depth_order(const std::int32_t* tiles_per_splat, const std::uint32_t* order) {
  return thrust::make_permutation_iterator(tiles_per_splat, order);
}

std::size_t scan_temp_bytes(int n) {
  std::size_t bytes = 0;
  SPLAT_CUDA_CHECK(
      cub::DeviceScan::InclusiveSum(nullptr, bytes, counts_in_depth_order(nullptr, nullptr),
                                    static_cast<std::int32_t*>(nullptr), n > 0 ? n : 0));
  return bytes;
}

void intersect_scan(int n, const SplatTiles& s, cudaStream_t stream) {
  if (n <= 0) return;
  std::size_t temp_bytes = s.scan_temp.bytes;  // CUB takes it by reference
  SPLAT_CUDA_CHECK(cub::DeviceScan::InclusiveSum(
      s.scan_temp.ptr, temp_bytes, counts_in_depth_order(s.tiles_per_splat, s.order()), s.offsets,
      n, stream));
}

void intersect_emit(
    int n, tiles::Grid grid, const SplatTiles& s, const IsectBuffers& out, cudaStream_t stream) {
  if (n <= 0) return;
  emit_kernel<<<blocks_for(n), config::intersect_block_size, 0, stream>>>(
      n, s.tests, s.order(), s.offsets, grid, out.capacity, out.sort.keys_in, out.sort.ids_in,
      s.large, s.large_count);
  SPLAT_CUDA_CHECK_LAUNCH("intersect_emit");
  emit_large_kernel<<<kLargeBlocks, config::intersect_block_size, 0, stream>>>(
      s.tests, s.order(), s.offsets, grid, out.capacity, out.sort.keys_in, out.sort.ids_in, s.large,
      s.large_count);
  SPLAT_CUDA_CHECK_LAUNCH("intersect_emit: large splats");
}

void intersect_pad(int n,
                   const SplatTiles& s,
                   const IsectBuffers& out,
                   int end_bit,
                   int* status,
                   cudaStream_t stream) {
  if (end_bit <= 0 || end_bit > 32)
    throw Error("intersect_pad: end_bit " + std::to_string(end_bit) + " is outside (0, 32]");
  const std::uint32_t pad_key = end_bit == 32 ? ~0u : (1u << end_bit) - 1;
  pad_kernel<<<std::max(1u, blocks_for(out.capacity)), config::intersect_block_size, 0, stream>>>(
      n, s.offsets, out.capacity, pad_key, out.sort.keys_in, out.sort.ids_in, status);
  SPLAT_CUDA_CHECK_LAUNCH("intersect_pad");
}

// CUB's scratch grows with the number of radix passes, so sizing for all 32 bits covers every
// end_bit the caller may pass later (an undersized buffer makes CUB return an error, checked).
std::size_t sort_temp_bytes(int m) {
  std::size_t bytes = 0;
  SPLAT_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(
      nullptr, bytes, static_cast<const std::uint32_t*>(nullptr),
      static_cast<std::uint32_t*>(nullptr), static_cast<const std::uint32_t*>(nullptr),
      static_cast<std::uint32_t*>(nullptr), m > 0 ? m : 0, 0, 32));
  return bytes;
}

void sort_intersections(int m, int end_bit, const SortBuffers& b, cudaStream_t stream) {
  if (end_bit <= 0 || end_bit > 32)
    throw Error("sort_intersections: end_bit " + std::to_string(end_bit) + " is outside (0, 32]");
  if (m <= 0) return;
  // Bits [end_bit, 32) are zero in every key (the tile id fits), so skipping them keeps the order.
  std::size_t temp_bytes = b.temp.bytes;  // CUB takes it by reference
  SPLAT_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(b.temp.ptr, temp_bytes, b.keys_in, b.keys_out,
                                                   b.ids_in, b.ids_out, m, 0, end_bit, stream));
}

void tile_ranges(int m,
                 const std::uint32_t* sorted_keys,
                 int tile_count,
                 std::uint32_t* ranges,
                 cudaStream_t stream) {
  if (tile_count <= 0) return;
  SPLAT_CUDA_CHECK(
      cudaMemsetAsync(ranges, 0, std::size_t(tile_count) * 2 * sizeof(std::uint32_t), stream));
  if (m <= 0) return;
  tile_ranges_kernel<<<blocks_for(m), config::intersect_block_size, 0, stream>>>(
      m, sorted_keys, std::uint32_t(tile_count), ranges);
  SPLAT_CUDA_CHECK_LAUNCH("tile_ranges");
}

std::size_t tile_order_temp_bytes(int tile_count) {
  std::size_t bytes = 0;
  SPLAT_CUDA_CHECK(cub::DeviceRadixSort::SortPairsDescending(
      nullptr, bytes, static_cast<const std::uint32_t*>(nullptr),
      static_cast<std::uint32_t*>(nullptr), static_cast<const std::uint32_t*>(nullptr),
      static_cast<std::uint32_t*>(nullptr), std::max(tile_count, 0)));
  return bytes;
}

void tile_order(int tile_count,
                const std::uint32_t* ranges,
                std::uint32_t* scratch,
                TempStorage temp,
                std::uint32_t* order,
                cudaStream_t stream) {
  if (tile_count <= 0) return;
  std::uint32_t *counts = scratch, *counts_sorted = scratch + tile_count,
                *tiles = scratch + 2 * tile_count;
  tile_counts_kernel<<<blocks_for(tile_count), config::intersect_block_size, 0, stream>>>(
      tile_count, ranges, counts, tiles);
  SPLAT_CUDA_CHECK_LAUNCH("tile_order");
  // Stable: equal counts keep tile order.
  SPLAT_CUDA_CHECK(
      cub::DeviceRadixSort::SortPairsDescending(temp.ptr, temp.bytes, counts, counts_sorted, tiles,
                                                order, tile_count, 0, kTileOrderBits, stream));
}

}  // namespace splat::cuda
