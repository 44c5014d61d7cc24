// Tile intersection on the GPU: the order of cpu::intersect_tiles (tile, then depth bits, then
// splat index) from two short sorts instead of one long one. The splats are sorted by depth once
// (32-bit keys, N entries; stable, so equal depths keep index order), the intersections are
// emitted in that order, and a stable sort by tile id alone (12 bits for 2,500 tiles) keeps it
// within each tile. The CPU sorts (tile << 32 | depth bits, index) pairs; the GPU used to sort
// those 44-bit keys over all M intersections.
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/error.h"
#include "cuda/check.h"
#include "cuda/intersect.h"
#include "render/settings.h"
#include "render/tiles.h"

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

// tiles::for_each_tile for splat i: the decisions of the CPU's intersect_tiles, bit for bit.
template <class F>
__device__ __forceinline__ void for_each_tile(int i, const float* means2d, const int* radii, const float* conics,
                                              const float* opacities, int tiles_x, int tiles_y, F&& f) {
  tiles::for_each_tile(means2d[i * 2], means2d[i * 2 + 1], radii[i * 2], radii[i * 2 + 1], conics[i * 3],
                       conics[i * 3 + 1], conics[i * 3 + 2], opacities[i], true, tiles_x, tiles_y, f);
}

__global__ void count_kernel(int n,
                             const float* __restrict__ means2d,    // [N, 2]
                             const int* __restrict__ radii,        // [N, 2]
                             const float* __restrict__ conics,     // [N, 3]
                             const float* __restrict__ colors,     // [N, 3]
                             const float* __restrict__ opacities,  // [N]
                             int tiles_x,
                             int tiles_y,
                             std::int32_t* __restrict__ tiles_per_splat,  // [N]
                             SplatRecord* __restrict__ records,           // [N]
                             std::uint32_t* __restrict__ iota) {          // [N]
  const int i = int(blockIdx.x * blockDim.x + threadIdx.x);
  if (i >= n) return;
  records[i] = splat_record(conics + std::size_t(i) * 3, opacities[i], means2d + std::size_t(i) * 2,
                            tiles::max_quad(opacities[i]), colors + std::size_t(i) * 3);
  iota[i] = std::uint32_t(i);
  std::int32_t count = 0;
  for_each_tile(i, means2d, radii, conics, opacities, tiles_x, tiles_y, [&](int) { ++count; });
  tiles_per_splat[i] = count;
}

// counts[j] = tiles_per_splat[order[j]]: the counts in depth order, for the scan.
__global__ void gather_counts_kernel(int n,
                                     const std::int32_t* __restrict__ tiles_per_splat,  // [N]
                                     const std::uint32_t* __restrict__ order,           // [N]
                                     std::int32_t* __restrict__ counts) {               // [N]
  const int j = int(blockIdx.x * blockDim.x + threadIdx.x);
  if (j < n) counts[j] = tiles_per_splat[order[j]];
}

__global__ void emit_kernel(int n,
                            const float* __restrict__ means2d,         // [N, 2]
                            const int* __restrict__ radii,             // [N, 2]
                            const float* __restrict__ conics,          // [N, 3]
                            const float* __restrict__ opacities,       // [N]
                            const std::uint32_t* __restrict__ order,   // [N] depth order
                            const std::int32_t* __restrict__ offsets,  // [N] inclusive prefix sum, depth order
                            int tiles_x,
                            int tiles_y,
                            std::int32_t capacity,  // entries past it are dropped (bounded sizing)
                            std::uint32_t* __restrict__ keys,            // [capacity] tile ids
                            std::uint32_t* __restrict__ gaussian_ids) {  // [capacity]
  const int j = int(blockIdx.x * blockDim.x + threadIdx.x);
  if (j >= n) return;
  std::int32_t k = j == 0 ? 0 : offsets[j - 1];
  if (k == offsets[j]) return;  // culled, or reaches no tile
  const int i = int(order[j]);
  // The same decisions as count_kernel, so exactly tiles_per_splat[i] entries.
  for_each_tile(i, means2d, radii, conics, opacities, tiles_x, tiles_y, [&](int tile) {
    if (k < capacity) {
      keys[k] = std::uint32_t(tile);
      gaussian_ids[k] = std::uint32_t(i);
    }
    ++k;
  });
}

// Bounded sizing: entries [count, capacity) become padding whose key has every sorted bit set,
// so it sorts after all real entries and names a tile past the grid (tile_ranges skips it).
// status[0] = count; status[1] is raised (never lowered) when the count exceeds the capacity;
// status[2] is the largest count so far (the room a repeated step needs, whichever view overflowed).
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
                                   std::uint32_t* __restrict__ ranges) {           // [tiles, 2]
  const int k = int(blockIdx.x * blockDim.x + threadIdx.x);
  if (k >= m) return;
  const std::uint32_t tile = sorted_keys[k];
  if (tile >= tile_count) return;
  if (k == 0 || sorted_keys[k - 1] != tile)
    ranges[std::size_t(tile) * 2] = std::uint32_t(k);
  if (k + 1 == m || sorted_keys[k + 1] != tile)
    ranges[std::size_t(tile) * 2 + 1] = std::uint32_t(k + 1);
}

// counts[t] = the length of tile t's list, tiles[t] = t: the keys and values of tile_order's sort.
__global__ void tile_counts_kernel(int tile_count,
                                   const std::uint32_t* __restrict__ ranges,  // [tiles, 2]
                                   std::uint32_t* __restrict__ counts,        // [tiles]
                                   std::uint32_t* __restrict__ tiles) {       // [tiles]
  const int t = int(blockIdx.x * blockDim.x + threadIdx.x);
  if (t >= tile_count) return;
  counts[t] = ranges[std::size_t(t) * 2 + 1] - ranges[std::size_t(t) * 2];
  tiles[t] = std::uint32_t(t);
}

}  // namespace

void intersect_count(int n, const ProjectedPtrs& p, TileGridParams grid, std::int32_t* tiles_per_splat,
                     SplatRecord* records, std::uint32_t* iota, cudaStream_t stream) {
  if (n <= 0) return;
  count_kernel<<<blocks_for(n), config::intersect_block_size, 0, stream>>>(
      n, p.means2d, p.radii, p.conics, p.colors, p.opacities, grid.tiles_x, grid.tiles_y, tiles_per_splat, records,
      iota);
  SPLAT_CUDA_CHECK_LAUNCH("intersect_count");
}

std::size_t depth_order_temp_bytes(int n) {
  std::size_t bytes = 0;
  SPLAT_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(
      nullptr, bytes, static_cast<const std::uint32_t*>(nullptr), static_cast<std::uint32_t*>(nullptr),
      static_cast<const std::uint32_t*>(nullptr), static_cast<std::uint32_t*>(nullptr), n > 0 ? n : 0));
  return bytes;
}

void depth_order(int n, const float* depths, const std::uint32_t* iota, std::uint32_t* depth_bits_sorted,
                 std::uint32_t* order, void* temp, std::size_t temp_bytes, cudaStream_t stream) {
  if (n <= 0) return;
  // The depths' bit patterns as keys: positive floats order like their bits.
  SPLAT_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(temp, temp_bytes, reinterpret_cast<const std::uint32_t*>(depths),
                                                   depth_bits_sorted, iota, order, n, 0, 32, stream));
}

std::size_t scan_temp_bytes(int n) {
  std::size_t bytes = 0;
  SPLAT_CUDA_CHECK(cub::DeviceScan::InclusiveSum(nullptr, bytes,
                                                 static_cast<const std::int32_t*>(nullptr),
                                                 static_cast<std::int32_t*>(nullptr), n > 0 ? n : 0));
  return bytes;
}

void intersect_scan(int n, const std::int32_t* tiles_per_splat, const std::uint32_t* order,
                    std::int32_t* counts_in_order, std::int32_t* offsets, void* temp, std::size_t temp_bytes,
                    cudaStream_t stream) {
  if (n <= 0) return;
  gather_counts_kernel<<<blocks_for(n), config::intersect_block_size, 0, stream>>>(n, tiles_per_splat, order,
                                                                                   counts_in_order);
  SPLAT_CUDA_CHECK_LAUNCH("intersect_scan: gather");
  SPLAT_CUDA_CHECK(cub::DeviceScan::InclusiveSum(temp, temp_bytes, counts_in_order, offsets, n, stream));
}

void intersect_emit(int n, const ProjectedPtrs& p, const std::uint32_t* order, const std::int32_t* offsets,
                    TileGridParams grid, std::uint32_t* keys, std::uint32_t* gaussian_ids, cudaStream_t stream,
                    std::int32_t capacity) {
  if (n <= 0) return;
  emit_kernel<<<blocks_for(n), config::intersect_block_size, 0, stream>>>(
      n, p.means2d, p.radii, p.conics, p.opacities, order, offsets, grid.tiles_x, grid.tiles_y, capacity, keys,
      gaussian_ids);
  SPLAT_CUDA_CHECK_LAUNCH("intersect_emit");
}

void intersect_pad(int n, const std::int32_t* offsets, std::int32_t capacity, int end_bit, std::uint32_t* keys,
                   std::uint32_t* gaussian_ids, int* status, cudaStream_t stream) {
  if (end_bit <= 0 || end_bit > 32)
    throw Error("intersect_pad: end_bit " + std::to_string(end_bit) + " is outside (0, 32]");
  const std::uint32_t pad_key = end_bit == 32 ? ~0u : (1u << end_bit) - 1;
  pad_kernel<<<std::max(1u, blocks_for(capacity)), config::intersect_block_size, 0, stream>>>(
      n, offsets, capacity, pad_key, keys, gaussian_ids, status);
  SPLAT_CUDA_CHECK_LAUNCH("intersect_pad");
}

// CUB's scratch grows with the number of radix passes, so sizing for all 32 bits covers every
// end_bit the caller may pass later (an undersized buffer makes CUB return an error, checked).
std::size_t sort_temp_bytes(int m) {
  std::size_t bytes = 0;
  SPLAT_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(
      nullptr, bytes, static_cast<const std::uint32_t*>(nullptr), static_cast<std::uint32_t*>(nullptr),
      static_cast<const std::uint32_t*>(nullptr), static_cast<std::uint32_t*>(nullptr), m > 0 ? m : 0, 0, 32));
  return bytes;
}

void sort_intersections(int m, int end_bit, const std::uint32_t* keys_in, std::uint32_t* keys_out,
                        const std::uint32_t* ids_in, std::uint32_t* ids_out, void* temp,
                        std::size_t temp_bytes, cudaStream_t stream) {
  if (end_bit <= 0 || end_bit > 32)
    throw Error("sort_intersections: end_bit " + std::to_string(end_bit) + " is outside (0, 32]");
  if (m <= 0) return;
  // Bits [end_bit, 32) are zero in every key (the tile id fits), so skipping them keeps the order.
  SPLAT_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(temp, temp_bytes, keys_in, keys_out, ids_in,
                                                   ids_out, m, 0, end_bit, stream));
}

void tile_ranges(int m, const std::uint32_t* sorted_keys, int tile_count, std::uint32_t* ranges,
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
      nullptr, bytes, static_cast<const std::uint32_t*>(nullptr), static_cast<std::uint32_t*>(nullptr),
      static_cast<const std::uint32_t*>(nullptr), static_cast<std::uint32_t*>(nullptr), std::max(tile_count, 0)));
  return bytes;
}

void tile_order(int tile_count, const std::uint32_t* ranges, std::uint32_t* scratch, void* temp, std::size_t temp_bytes,
                std::uint32_t* order, cudaStream_t stream) {
  if (tile_count <= 0) return;
  std::uint32_t *counts = scratch, *counts_sorted = scratch + tile_count, *tiles = scratch + 2 * tile_count;
  tile_counts_kernel<<<blocks_for(tile_count), config::intersect_block_size, 0, stream>>>(tile_count, ranges, counts,
                                                                                         tiles);
  SPLAT_CUDA_CHECK_LAUNCH("tile_order");
  // Stable: equal counts keep tile order.
  SPLAT_CUDA_CHECK(cub::DeviceRadixSort::SortPairsDescending(temp, temp_bytes, counts, counts_sorted, tiles, order,
                                                             tile_count, 0, 32, stream));
}

}  // namespace splat::cuda
