#pragma once
// Host side of Mip-Splatting's 3D smoothing filter (engine/filter3d.h): the variances of a model
// from its training cameras (the reference both backends are held to), and the filter baked into
// plain 3DGS parameters for viewers and formats that do not know it.
#include <span>
#include <vector>

#include "core/camera.h"
#include "core/gaussians.h"

namespace splat::filter3d {

// Filter variance of every splat [N] from its mean (means [N, 3]) and the training cameras.
std::vector<float> variances(std::span<const float> means, std::span<const Camera> cameras);

// The same splats with the filter folded in: log_scale' = log(sqrt(scale^2 + var)) per axis and
// opacity' = opacity * prod(scale / scale') (as a logit), so that a renderer without the filter
// draws what the filtered model is. `var` is empty (nothing to bake) or one entry per splat.
Gaussians bake(const Gaussians& g, std::span<const float> var);

}  // namespace splat::filter3d
