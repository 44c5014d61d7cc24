#pragma once
// Initial Gaussians for a new run.
#include <cstdint>

#include "core/gaussians.h"
#include "io/dataset.h"
#include "train/config.h"

namespace splat {

// init_points points with random colors (as gsplat's random initialization): uniform in a cube
// of half-size init_extent times the half-size of known_scene_bounds(data), centered on it. Where
// nothing says where the scene lies and the cameras face one way (a forward-facing rig, as LLFF
// captures), uniform over the training cameras' images instead, at depths from where a point's
// parallax across the rig is half the image width to 100 times that depth, uniform in inverse
// depth (init_extent is not used). Cameras that neither converge nor face one way, or sit at one
// spot, get the cube around the cameras (scene_bounds) and a warning saying what would place the
// init. Or the dataset's sparse points: model.init = "points", or "auto" when the dataset has them.
// Sparse points that all lie at one spot (one point, or copies of one) would start every splat
// there at a scale of nothing: such a cloud is set aside with a warning naming its file, and the
// init is random as if the dataset had no points.
Gaussians initialize_model(const ModelConfig& cfg, const Dataset& data, std::uint64_t seed);

// Whether initialize_model starts from the dataset's points (else init_points random ones).
bool init_uses_points(const ModelConfig& cfg, const Dataset& data);

// Isotropic log scale per point: log of the RMS distance to its 3 nearest neighbours (3DGS).
std::vector<float> knn_log_scales(const std::vector<float>& positions);

}  // namespace splat
