#pragma once
// The model as the viewer page downloads it (GET /model): what a rasterizer needs per splat at SH
// degree 0, precomputed so that the page only uploads it. Little-endian:
//   header  char[4] "SPLV", u32 layout (1), u32 count, u32 snapshot version
//   splat   f32 mean[3], f32 covariance[6] (xx xy xz yy yz zz, world space),
//           u16 rgba[4]: color / 2 and opacity in [0, 1], times 65535
// 44 bytes a splat: a 1M-splat model is 44 MB. The colour range [0, 2] keeps the trained colours
// above 1 that the rasterizer composites unclamped.
#include <cstdint>
#include <string>

#include "core/gaussians.h"

namespace splat::view {

inline constexpr std::size_t kBlobHeaderBytes = 16, kBlobSplatBytes = 44;

std::string encode_model_blob(const Gaussians& g, std::uint32_t version);

}  // namespace splat::view
