#pragma once
// A posed image collection, whatever format it came from.
#include <array>
#include <optional>
#include <string>
#include <vector>

#include "core/camera.h"
#include "core/image.h"
#include "core/math.h"

namespace splat {

struct View {
  std::string name;  // e.g. "r_0"; a file name stem, safe to use as an output file name
  std::string path;  // image file it was decoded from
  Camera camera;
  // 8-bit as decoded, undistorted and downscaled: RGB; or RGBA whose alpha the loss composites
  // on the background; or RGB plus a binary loss mask (masks/, mask_path, data.alpha_mask).
  Image8 image;
  // The share of the image the subject covers: the mean alpha of a file with transparency that is
  // composited on the background (an object cut out of its surroundings, as NeRF-synthetic),
  // as decoded, before any resampling; 1 for opaque images and masked ones.
  double coverage = 1.0;
};

struct PointCloud {
  std::vector<float> positions;  // [M, 3]
  std::vector<float> colors;     // [M, 3] in [0, 1]
  std::string source = "";       // the file they were read from, for messages
};

// An axis-aligned cube: the region the scene occupies.
struct SceneBounds {
  Vec3<double> center{};
  double half_size = 1.0;
};

struct Dataset {
  std::vector<View> train;
  std::vector<View> test;
  std::optional<PointCloud> points;  // sparse points, when the format has them (COLMAP)
  // Set when the format defines where the scene lies (NeRF-synthetic: the unit cube around the
  // origin; instant-ngp: its aabb); otherwise scene_bounds() derives it from points or cameras.
  std::optional<SceneBounds> bounds;
};

struct LoadOptions {
  std::array<float, 3> background{1.0f, 1.0f, 1.0f};
  int downscale = 1;      // integer factor applied to images and intrinsics
  int test_every = 1;     // keep every n-th test view (1 = all)
  int max_train = 0;      // 0 = all training views
  int holdout_every = 8;  // single-collection formats: images 0, n, 2n, ... (by name) are tests
  // Lens cameras (distortion, fisheye) become pinholes: cropped to the largest image that sees only
  // what the lens saw, or (false) with the input's intrinsics and size (io/undistort.h).
  bool crop_undistorted = true;
  // The alpha channel of RGBA images is a loss mask (pixels with alpha below 1/2 are left out of
  // the loss) instead of transparency composited on the background.
  bool alpha_mask = false;
  // Images whose long side exceeds max_image_size, or whose width exceeds max_image_width (after
  // `downscale`), are shrunk to fit with an area filter, intrinsics scaled to match; 0 = no limit.
  int max_image_size = 0;
  int max_image_width = 0;
};

// NeRF-synthetic layout: transforms_{train,val,test}.json beside the image folders. `file_path`
// entries may have an extension or not (then .png, .webp, .jpg, .jpeg are tried in that order).
// The val split is used for testing only when there is no test split.
Dataset load_blender(const std::string& dir, const LoadOptions& opts);

// instant-ngp / nerfstudio layout: one DIR/transforms.json. Intrinsics (fl_x, fl_y, cx, cy, w, h
// or camera_angle_x) shared at the top level or per frame; c2w in OpenGL axes. Images with
// nonzero distortion (k1 k2 k3 k4 p1 p2; camera_model OPENCV) or a fisheye lens (camera_model
// OPENCV_FISHEYE or is_fisheye) are resampled to a pinhole (io/undistort.h); other projections
// are rejected. Frames whose image is missing are skipped
// with one warning. Split: LoadOptions::holdout_every over the frames sorted by file path.
// aabb_scale (with instant-ngp's scale and offset) sets Dataset::bounds.
Dataset load_transforms(const std::string& dir, const LoadOptions& opts);

// COLMAP layout: DIR/sparse/0/{cameras,images,points3D}.{bin,txt} and DIR/images/ (io/colmap.h
// reads the model files). Cameras with lens distortion (SIMPLE_RADIAL, RADIAL, OPENCV, FULL_OPENCV)
// or a fisheye lens (OPENCV_FISHEYE, SIMPLE_RADIAL_FISHEYE, RADIAL_FISHEYE) are resampled to
// pinholes as in load_transforms; FOV and the thin-prism models are rejected with the command that
// undistorts them. Split as load_transforms, over the images sorted by name.
Dataset load_colmap(const std::string& dir, const LoadOptions& opts);

// The largest distance of a camera center from the mean of the centers (0 for one camera).
double camera_reach(const std::vector<View>& views);

// Scene extent for learning-rate scaling: 1.1 x the largest distance of a training camera
// center from the mean of the centers (as in 3DGS).
double scene_extent(const Dataset& data);

// The bounding cube of the points (1st to 99th percentile per axis: SfM points have far
// outliers); nullopt when there are none or they all lie at one spot.
std::optional<SceneBounds> points_bounds(const PointCloud& pc);

// Where the scene is known to lie, for random initialization: Dataset::bounds when the format
// defines it; else the bounding cube of the sparse points (1st to 99th percentile per axis: SfM
// points have far outliers); else a cube around the point the training cameras look at (least
// squares over their optical axes, when it lies in front of most of them and their axes pass
// nearer to it than the cameras are to each other) reaching the farthest camera. nullopt when none
// of these says: no bounds or points, and optical axes that do not meet in front of the cameras
// (forward-facing rigs as LLFF captures, outward-facing ones).
std::optional<SceneBounds> known_scene_bounds(const Dataset& data);

// known_scene_bounds, else a cube around the mean camera center reaching the farthest camera.
SceneBounds scene_bounds(const Dataset& data);

}  // namespace splat
