#pragma once
// What a run or a command works on, loaded: a dataset by its layout, a model from a .ply (or
// another model file) or a checkpoint.
#include <string>

#include "engine/backend.h"
#include "io/dataset.h"
#include "train/config.h"

namespace splat {

// Throws unless `path` is a readable directory; the message says what else it is.
void require_dataset_dir(const std::string& path);

// Detects the dataset format of `path` and loads it with the data section of the config.
Dataset load_dataset(const std::string& path, const Config& cfg);

// Model from a .ply or a checkpoint (.ckpt), as a TrainState with zero optimizer moments (and a
// checkpoint's 3D filter, model.antialiased).
TrainState load_model(const std::string& path);
// The parameters for viewers and model files: the 3D filter (model.antialiased) baked into the
// scales and opacities (filter3d::bake), so that plain 3DGS renderers draw the filtered model.
Gaussians viewer_params(const TrainState& st);
Gaussians viewer_params(const Backend& backend);

}  // namespace splat
