#pragma once
// The model as the viewer page downloads it (GET /model): what a rasterizer needs per splat,
// precomputed so that the page only uploads it. Little-endian:
//   header  char[4] "SPLV", u32 layout (2), u32 count, u32 snapshot version, u32 SH degree D
//   splat   f32 mean[3], f32 covariance[6] (xx xy xz yy yz zz, world space),
//           u16 rgba[4]: the degree-0 colour / 2 and opacity in [0, 1], times 65535
//   then, when D > 0, for each splat: f16 sh[K][3], K = (D + 1)^2, DC first: the coefficients
//           from which the page evaluates color = max(0, 0.5 + SH(dir)) for each view
// 44 bytes a splat at D = 0 (a 1M-splat model is 44 MB), 140 at D = 3. The colour range [0, 2]
// keeps the trained colours above 1 that the rasterizer composites unclamped. Layout 1 was this
// without the degree field and the coefficients.
#include <cstdint>
#include <string>

#include "core/gaussians.h"

namespace splat::view {

inline constexpr std::uint32_t kBlobLayout = 2;
inline constexpr std::size_t kBlobHeaderBytes = 20, kBlobSplatBytes = 44;

// The blob of g with its SH coefficients up to degree min(g.sh_degree, max_sh_degree), less the
// highest bands while all their coefficients are zero.
std::string encode_model_blob(const Gaussians& g, std::uint32_t version, int max_sh_degree = 3);

// IEEE 754 binary16 bits of f, rounded to the nearest even; beyond the range, infinity.
std::uint16_t half_bits(float f);

}  // namespace splat::view
