#pragma once
// Initial Gaussians for a new run.
#include <cstdint>

#include "core/gaussians.h"
#include "io/config.h"
#include "io/dataset.h"

namespace splat {

// `count` points uniform in the cube [-extent, extent]^3 with random colors (as gsplat's random
// initialization), or the dataset's sparse points when model.init = "points".
Gaussians initialize_model(const ModelConfig& cfg, const Dataset& data, std::uint64_t seed);

// Isotropic log scale per point: log of the RMS distance to its 3 nearest neighbours (3DGS).
std::vector<float> knn_log_scales(const std::vector<float>& positions);

}  // namespace splat
