#pragma once
// A posed image collection, whatever format it came from.
#include <array>
#include <optional>
#include <string>
#include <vector>

#include "core/camera.h"
#include "core/image.h"

namespace splat {

struct View {
  std::string name;  // e.g. "r_0"
  std::string path;  // image file it was decoded from
  Camera camera;
  Image image;  // RGB, composited on the background, already downscaled
};

struct PointCloud {
  std::vector<float> positions;  // [M, 3]
  std::vector<float> colors;     // [M, 3] in [0, 1]
};

struct Dataset {
  std::vector<View> train;
  std::vector<View> test;
  std::optional<PointCloud> points;  // sparse points, when the format has them (COLMAP)
};

struct LoadOptions {
  std::array<float, 3> background{1.0f, 1.0f, 1.0f};
  int downscale = 1;   // integer factor applied to images and intrinsics
  int test_every = 1;  // keep every n-th test view (1 = all)
  int max_train = 0;   // 0 = all training views
};

// NeRF-synthetic layout: transforms_{train,val,test}.json beside the image folders. `file_path`
// entries may have an extension or not (then .png, .webp, .jpg, .jpeg are tried in that order).
// The val split is used for testing only when there is no test split.
Dataset load_blender(const std::string& dir, const LoadOptions& opts);

// Scene extent for learning-rate scaling: 1.1 x the largest distance of a training camera
// center from the mean of the centers (as in 3DGS).
double scene_extent(const Dataset& data);

}  // namespace splat
