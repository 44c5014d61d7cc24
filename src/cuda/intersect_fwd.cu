// Tile intersection on the GPU, the same three passes as cpu::intersect_tiles (count, prefix sum,
// emit) followed by a CUB radix sort and the per-tile ranges. Keys are emitted in gaussian order
// and an LSD radix sort is stable, so equal keys keep gaussian order: the CPU's (key, index) sort.
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/error.h"
#include "cuda/check.h"
#include "cuda/intersect.h"
#include "render/settings.h"

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

struct TileBoxD {
  int x0, y0, x1, y1;  // tiles [x0, x1) x [y0, y1)
};

// cpu::tile_box: [floor((m - r) / 16), ceil((m + r) / 16)) per axis, clamped to the grid. The
// divisions are by a power of two (exact), written _rn so fast-math cannot swap in an approximate
// reciprocal and move a box by a tile. The clamp happens in float before the conversion: the same
// result as the CPU's clamp(int(v)) for every representable box, and defined for NaN / huge means
// (NaN goes to 0) where a float -> int conversion out of range would not be.
__device__ __forceinline__ int clamp_tile(float v, int hi) {
  return int(fminf(fmaxf(v, 0.0f), float(hi)));
}

__device__ __forceinline__ TileBoxD tile_box(float mean_x, float mean_y, int radius_x, int radius_y,
                                             int tiles_x, int tiles_y) {
  const float ts = float(config::tile_size);
  const float tx = __fdiv_rn(mean_x, ts), ty = __fdiv_rn(mean_y, ts);
  const float rx = __fdiv_rn(float(radius_x), ts), ry = __fdiv_rn(float(radius_y), ts);
  return {clamp_tile(floorf(__fsub_rn(tx, rx)), tiles_x),
          clamp_tile(floorf(__fsub_rn(ty, ry)), tiles_y),
          clamp_tile(ceilf(__fadd_rn(tx, rx)), tiles_x),
          clamp_tile(ceilf(__fadd_rn(ty, ry)), tiles_y)};
}

// Culled means both radii <= 0 (cpu::intersect_tiles); one zero radius still gets a box.
__device__ __forceinline__ bool culled(const int* radii, int i) {
  return radii[i * 2] <= 0 && radii[i * 2 + 1] <= 0;
}

__global__ void count_kernel(int n,
                             const float* __restrict__ means2d,  // [N, 2]
                             const int* __restrict__ radii,      // [N, 2]
                             int tiles_x,
                             int tiles_y,
                             std::int32_t* __restrict__ tiles_per_splat) {  // [N]
  const int i = int(blockIdx.x * blockDim.x + threadIdx.x);
  if (i >= n) return;
  std::int32_t count = 0;
  if (!culled(radii, i)) {
    const TileBoxD b = tile_box(means2d[i * 2], means2d[i * 2 + 1], radii[i * 2], radii[i * 2 + 1],
                                tiles_x, tiles_y);
    count = max(0, b.x1 - b.x0) * max(0, b.y1 - b.y0);
  }
  tiles_per_splat[i] = count;
}

__global__ void emit_kernel(int n,
                            const float* __restrict__ means2d,         // [N, 2]
                            const int* __restrict__ radii,             // [N, 2]
                            const float* __restrict__ depths,          // [N]
                            const std::int32_t* __restrict__ offsets,  // [N] inclusive prefix sum
                            int tiles_x,
                            int tiles_y,
                            std::uint64_t* __restrict__ keys,            // [M]
                            std::uint32_t* __restrict__ gaussian_ids) {  // [M]
  const int i = int(blockIdx.x * blockDim.x + threadIdx.x);
  if (i >= n) return;
  const std::int32_t start = i == 0 ? 0 : offsets[i - 1];
  const std::int32_t end = offsets[i];
  // An empty range covers the culled splats too; the box below is recomputed exactly as in
  // count_kernel, so it yields end - start tiles.
  if (start == end) return;
  const TileBoxD b = tile_box(means2d[i * 2], means2d[i * 2 + 1], radii[i * 2], radii[i * 2 + 1],
                              tiles_x, tiles_y);
  // Positive IEEE floats order like their bit patterns, so the low word sorts by depth.
  const std::uint64_t depth_bits = __float_as_uint(depths[i]);
  std::int32_t k = start;
  for (int ty = b.y0; ty < b.y1; ++ty) {
    for (int tx = b.x0; tx < b.x1; ++tx) {
      const std::uint64_t tile = std::uint32_t(ty * tiles_x + tx);
      keys[k] = (tile << 32) | depth_bits;
      gaussian_ids[k] = std::uint32_t(i);
      ++k;
    }
  }
}

// A tile's range starts where the tile id differs from the previous key and ends where it differs
// from the next; each boundary has exactly one writer, so no atomics are needed.
__global__ void tile_ranges_kernel(int m,
                                   const std::uint64_t* __restrict__ sorted_keys,  // [M]
                                   std::uint32_t* __restrict__ ranges) {           // [tiles, 2]
  const int k = int(blockIdx.x * blockDim.x + threadIdx.x);
  if (k >= m) return;
  const std::uint32_t tile = std::uint32_t(sorted_keys[k] >> 32);
  if (k == 0 || std::uint32_t(sorted_keys[k - 1] >> 32) != tile)
    ranges[std::size_t(tile) * 2] = std::uint32_t(k);
  if (k + 1 == m || std::uint32_t(sorted_keys[k + 1] >> 32) != tile)
    ranges[std::size_t(tile) * 2 + 1] = std::uint32_t(k + 1);
}

}  // namespace

void intersect_count(int n, const float* means2d, const int* radii, TileGridParams grid,
                     std::int32_t* tiles_per_splat, cudaStream_t stream) {
  if (n <= 0) return;
  count_kernel<<<blocks_for(n), config::intersect_block_size, 0, stream>>>(
      n, means2d, radii, grid.tiles_x, grid.tiles_y, tiles_per_splat);
  SPLAT_CUDA_CHECK_LAUNCH("intersect_count");
}

std::size_t scan_temp_bytes(int n) {
  std::size_t bytes = 0;
  SPLAT_CUDA_CHECK(cub::DeviceScan::InclusiveSum(nullptr, bytes,
                                                 static_cast<const std::int32_t*>(nullptr),
                                                 static_cast<std::int32_t*>(nullptr), n > 0 ? n : 0));
  return bytes;
}

void intersect_scan(int n, const std::int32_t* tiles_per_splat, std::int32_t* offsets, void* temp,
                    std::size_t temp_bytes, cudaStream_t stream) {
  if (n <= 0) return;
  SPLAT_CUDA_CHECK(
      cub::DeviceScan::InclusiveSum(temp, temp_bytes, tiles_per_splat, offsets, n, stream));
}

void intersect_emit(int n, const float* means2d, const int* radii, const float* depths,
                    const std::int32_t* offsets, TileGridParams grid, std::uint64_t* keys,
                    std::uint32_t* gaussian_ids, cudaStream_t stream) {
  if (n <= 0) return;
  emit_kernel<<<blocks_for(n), config::intersect_block_size, 0, stream>>>(
      n, means2d, radii, depths, offsets, grid.tiles_x, grid.tiles_y, keys, gaussian_ids);
  SPLAT_CUDA_CHECK_LAUNCH("intersect_emit");
}

// CUB's scratch grows with the number of radix passes, so sizing for all 64 bits covers every
// end_bit the caller may pass later (an undersized buffer makes CUB return an error, checked).
std::size_t sort_temp_bytes(int m) {
  std::size_t bytes = 0;
  SPLAT_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(
      nullptr, bytes, static_cast<const std::uint64_t*>(nullptr),
      static_cast<std::uint64_t*>(nullptr), static_cast<const std::uint32_t*>(nullptr),
      static_cast<std::uint32_t*>(nullptr), m > 0 ? m : 0, 0, 64));
  return bytes;
}

void sort_intersections(int m, int end_bit, const std::uint64_t* keys_in, std::uint64_t* keys_out,
                        const std::uint32_t* ids_in, std::uint32_t* ids_out, void* temp,
                        std::size_t temp_bytes, cudaStream_t stream) {
  if (end_bit <= 0 || end_bit > 64)
    throw Error("sort_intersections: end_bit " + std::to_string(end_bit) + " is outside (0, 64]");
  if (m <= 0) return;
  // Bits [end_bit, 64) are zero in every key (the tile id fits), so skipping them keeps the order.
  SPLAT_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(temp, temp_bytes, keys_in, keys_out, ids_in,
                                                   ids_out, m, 0, end_bit, stream));
}

void tile_ranges(int m, const std::uint64_t* sorted_keys, int tile_count, std::uint32_t* ranges,
                 cudaStream_t stream) {
  if (tile_count <= 0) return;
  SPLAT_CUDA_CHECK(
      cudaMemsetAsync(ranges, 0, std::size_t(tile_count) * 2 * sizeof(std::uint32_t), stream));
  if (m <= 0) return;
  tile_ranges_kernel<<<blocks_for(m), config::intersect_block_size, 0, stream>>>(m, sorted_keys,
                                                                                 ranges);
  SPLAT_CUDA_CHECK_LAUNCH("tile_ranges");
}

}  // namespace splat::cuda
