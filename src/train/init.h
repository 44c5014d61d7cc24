#pragma once
// Initial Gaussians for a new run.
#include <cstdint>

#include "core/gaussians.h"
#include "io/dataset.h"
#include "train/config.h"

namespace splat {

// init_points points uniform in a cube with random colors (as gsplat's random initialization):
// centered on scene_bounds(data), of half-size init_extent times its half-size. Or the dataset's
// sparse points: model.init = "points", or "auto" when the dataset has them.
// Sparse points that all lie at one spot (one point, or copies of one) would start every splat
// there at a scale of nothing: such a cloud is set aside with a warning naming its file, and the
// init is random as if the dataset had no points.
Gaussians initialize_model(const ModelConfig& cfg, const Dataset& data, std::uint64_t seed);

// Whether initialize_model starts from the dataset's points (else init_points random ones).
bool init_uses_points(const ModelConfig& cfg, const Dataset& data);

// Isotropic log scale per point: log of the RMS distance to its 3 nearest neighbours (3DGS).
std::vector<float> knn_log_scales(const std::vector<float>& positions);

}  // namespace splat
