#pragma once
// The PlayCanvas / SuperSplat compressed .ply (as playcanvas/splat-transform writes and reads
// it): binary little-endian PLY with
//   element chunk ceil(N/256): float min_x min_y min_z max_x max_y max_z, min_scale_x..z,
//     max_scale_x..z (log scales, clamped to [-20, 20]), min_r min_g min_b max_r max_g max_b
//     (color = 0.5 + C0 * f_dc)
//   element vertex N: uint packed_position (11-10-11 bits of the position within its chunk's
//     bounds), packed_rotation (2-bit index of the largest component of the unit quaternion
//     (w x y z), made positive, then the other three as 10 bits of q * sqrt(1/2) + 0.5),
//     packed_scale (11-10-11 of the log scale within the chunk's bounds), packed_color (8-8-8 of
//     the color within the chunk's bounds, then 8 bits of sigmoid(opacity))
//   element sh N (only for SH degree > 0): uchar f_rest_0.. (as the 3DGS .ply orders them),
//     trunc((v / 8 + 0.5) * 256) clamped to a byte
// Splats are grouped in chunks of 256 consecutive ones, in Morton order of their positions so
// that each chunk is compact. Positions are in the 3DGS .ply frame.
#include <string>

#include "core/gaussians.h"

namespace splat {

inline constexpr std::size_t kCompressedChunk = 256;

void write_compressed_ply(const std::string& path, const Gaussians& g);
// Chunk colors are optional (12 chunk properties), as the reference reader accepts.
Gaussians read_compressed_ply(const std::string& path);

}  // namespace splat
