#pragma once
// Tile intersection on the GPU: the lists of cpu/intersect_cpu.h (each tile's splats by depth key,
// then index) from two short sorts. Count tiles per splat, sort the splats by depth (CUB, the
// 24-bit tiles::depth_key, stable), inclusive prefix sum of the counts in depth order (CUB), emit
// (tile, gaussian) pairs in depth order, stable radix sort (CUB) over only the tile id's bits, and
// the [start, end) range of each tile.
#include <bit>
#include <cstddef>
#include <cstdint>

#include "cuda/rasterize_cuda.h"
#include "cuda/types.h"
#include "engine/tiles.h"

namespace splat::cuda {

// CUB's scratch for one call: `bytes` of device memory, as the matching *_temp_bytes gives them.
struct TempStorage {
  void* ptr = nullptr;
  std::size_t bytes = 0;
};

// The buffers of a stable LSD radix sort of m (key, id) pairs (sort_intersections):
// double-buffered, the result lands in the *_out arrays.
struct SortBuffers {
  std::uint32_t* keys_in;   // [m]
  std::uint32_t* keys_out;  // [m]
  std::uint32_t* ids_in;    // [m]
  std::uint32_t* ids_out;   // [m]
  TempStorage temp;         // sort_temp_bytes(m)
};

// What the tile test of one splat reads (tiles::for_each_tile): its conic, mean, q_max and
// radii, copied by intersect_count into one 32-byte sector, which intersect_emit gathers in depth
// order (from the projection's four arrays it gathered four or five sectors a splat, and took a
// double-precision log for q_max).
struct alignas(32) TileTest {
  float a, b, c, mean_x, mean_y, q_max;
  std::int32_t radius_x, radius_y;
};

// The stage's per-splat arrays, [N] each, in the order its calls fill them.
struct SplatTiles {
  std::int32_t* tiles_per_splat;  // intersect_count
  SplatRecord* records;           // intersect_count: the rasterizer's record of each splat
  TileTest* tests;                // intersect_count: the inputs of each splat's tile test
  // Keys: depth keys, ids: splat indices (intersect_count); depth_order sorts them, and ids_out
  // holds the splats in depth order.
  SortBuffers depth;
  std::int32_t* offsets;  // intersect_scan
  TempStorage scan_temp;  // scan_temp_bytes(n)
  // intersect_emit's scratch: the depth ranks of the splats with many candidate tiles, which a
  // second kernel emits one warp each, and their count ([1]; emptied by intersect_count).
  std::uint32_t* large;
  std::int32_t* large_count;
  const std::uint32_t* order() const { return depth.ids_out; }
};

// The per-intersection arrays, `capacity` entries each: intersect_emit writes the tile sort's
// inputs (keys_in: tile ids, ids_in: gaussian ids) and sort_intersections sorts them.
struct IsectBuffers {
  SortBuffers sort;
  std::int32_t capacity;  // entries of each array
};

// s.tiles_per_splat[i] = number of tiles splat i reaches (engine/tiles.h; 0 when culled). Reads
// means2d, radii, conics, colors and opacities. Also s.tests[i], the inputs of that test;
// s.records[i], the rasterizer's record of splat i (rasterize.h; with q_max = tiles::max_quad of
// the opacity, the bound of the tile test, which the warp test reads instead of taking a
// double-precision log per warp); depth_order's inputs: s.depth.keys_in[i] = tiles::depth_key
// of its depth and s.depth.ids_in[i] = i; and *s.large_count = 0.
void intersect_count(
    int n, const ProjectedPtrs& p, tiles::Grid grid, const SplatTiles& s, cudaStream_t stream);

// depth.ids_out[j] = the splat with the j-th smallest depth key, equal keys in index order (a
// stable radix sort of the tiles::kDepthKeyBits key bits): sort_intersections over the n (depth
// key, index) pairs, with temp of sort_temp_bytes(n). depth.keys_out is scratch [N].
void depth_order(int n, const SortBuffers& depth, cudaStream_t stream);

// s.offsets[j] = inclusive prefix sum of s.tiles_per_splat in depth order, up to splat
// s.order()[j]; offsets[n-1] is the intersection count. The scan reads the counts through the
// order.
std::size_t scan_temp_bytes(int n);
void intersect_scan(int n, const SplatTiles& s, cudaStream_t stream);

// Writes keys (tile ids) / gaussian ids for every intersection into out.sort's inputs, splat
// s.order()[j] at [offsets[j-1], offsets[j]), tiles in row-major order of its box (the CPU
// order), from s.tests. Entries at or past out.capacity are dropped (bounded sizing, below).
// Splats with many candidate tiles go through s.large to a second kernel that gives each one warp.
void intersect_emit(
    int n, tiles::Grid grid, const SplatTiles& s, const IsectBuffers& out, cudaStream_t stream);

// The bits the tile sort looks at: enough for every tile id and one more value (padding's).
inline int tile_key_bits(int tile_count) {
  return std::bit_width(static_cast<std::uint32_t>(tile_count));
}

// Bounded sizing, where no host wait reads the count first: the per-intersection arrays hold
// `capacity` entries and the sort and tile_ranges run over all of them. Entries from the count on
// become padding with every key bit below end_bit set in out.sort's inputs, which sorts last and
// names no tile. status[0] = the count (s.offsets[n-1]); status[1] is set to 1 if it exceeds the
// capacity: the lists were cut short and the step must be repeated with more room (nothing here
// clears it); status[2] = the largest count seen.
void intersect_pad(int n,
                   const SplatTiles& s,
                   const IsectBuffers& out,
                   int end_bit,
                   int* status,
                   cudaStream_t stream);

// Stable LSD radix sort of m (key, id) pairs over bits [0, end_bit): the intersections by tile id,
// and depth_order's splats by depth. Double-buffered: the result lands in the *_out arrays.
std::size_t sort_temp_bytes(int m);
void sort_intersections(int m, int end_bit, const SortBuffers& b, cudaStream_t stream);

// ranges[tile] = {start, end} into the sorted arrays; tiles without intersections get {0, 0}.
// Zeroes ranges itself. Keys naming a tile at or past tile_count (padding) are skipped.
void tile_ranges(int m,
                 const std::uint32_t* sorted_keys,
                 int tile_count,
                 std::uint32_t* ranges,
                 cudaStream_t stream);

// order[0, tile_count) = the tiles by descending intersection count (from ranges; counts above
// 2^16 - 1 count as that), equal counts in tile order: the order in which both rasterizer passes
// take their tiles. A tile's block runs for about as long as its list, and blocks start in launch
// order, so the long ones start first and the short ones fill the SMs around them instead of long
// ones running alone at the end (longest processing time first). scratch holds 3 * tile_count
// words.
std::size_t tile_order_temp_bytes(int tile_count);
void tile_order(int tile_count,
                const std::uint32_t* ranges,
                std::uint32_t* scratch,
                TempStorage temp,
                std::uint32_t* order,
                cudaStream_t stream);

}  // namespace splat::cuda
