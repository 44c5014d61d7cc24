#pragma once
// Niantic's .spz (nianticlabs/spz, the gzip versions): a gzip stream of a 16-byte header
//   uint32 magic 0x5053474e ("NGSP"), uint32 version, uint32 numPoints, uint8 shDegree,
//   uint8 fractionalBits, uint8 flags (1 = antialiased), uint8 reserved
// then, each attribute for all points before the next: positions (3 x 24-bit signed fixed point
// with fractionalBits), alphas (sigmoid(opacity) * 255), colors (f_dc * 0.15 * 255 + 127.5),
// scales ((log scale + 10) * 16), rotations (version 2: x y z of the unit quaternion with w >= 0,
// q * 127.5 + 127.5; version 3: smallest three, 4 bytes), SH without DC (coefficient-major,
// channel inner, x * 128 + 128; degree 1 in 5 bits, higher in 4). spz stores RUB axes (x right,
// y up, z back) and the 3DGS frame is RDF, so y and z flip, as the reference converts.
// splat writes version 3 and reads versions 2 and 3. The zstd container of version 4 is not read.
#include <cstdint>
#include <string>
#include <vector>

#include "core/gaussians.h"

namespace splat {

inline constexpr std::uint32_t kSpzMagic = 0x5053474e;
inline constexpr std::uint32_t kSpzVersion = 3;

// The uncompressed stream (header and attributes), and the gzip file of it.
std::vector<std::uint8_t> spz_stream(const Gaussians& g, std::uint32_t version = kSpzVersion);
void write_spz(const std::string& path, const Gaussians& g);

// Decodes an uncompressed stream; `path` names it in errors.
Gaussians parse_spz_stream(const std::string& path, const std::vector<std::uint8_t>& stream);
Gaussians read_spz(const std::string& path);

}  // namespace splat
