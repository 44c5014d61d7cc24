#pragma once
// Standard 3DGS .ply (binary little-endian): x y z, nx ny nz, f_dc_0..2, f_rest_0..(3(K-1)-1)
// (channel-major: all coefficients of R, then G, then B), opacity (raw logit), scale_0..2 (log),
// rot_0..3 (w x y z). Opens in the common splat viewers.
#include <string>
#include <vector>

#include "core/gaussians.h"

namespace splat {

// `comment`, if not empty, becomes a header comment line (viewers ignore it).
void write_ply(const std::string& path, const Gaussians& g, const std::string& comment = "");

// Reads a 3DGS .ply (binary little-endian or ascii); the SH degree follows from the f_rest count.
// Missing properties, a truncated body or a non-finite value are errors naming the file, the
// property and the vertex.
Gaussians read_ply(const std::string& path);
// The header's comment lines, without "comment ".
std::vector<std::string> read_ply_comments(const std::string& path);

}  // namespace splat
