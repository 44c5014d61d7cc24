#pragma once
// COLMAP sparse models: cameras, images and points3D, in COLMAP's binary (.bin) or text (.txt)
// form. Only what splat uses is kept (intrinsics, poses, point positions and colors); the 2D
// observations and point tracks are read over and checked, not stored. load_colmap (dataset.h)
// turns a model and its images into a Dataset.
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace splat {

struct ColmapCameraModel {
  int id;
  std::string_view name;
  int num_params;
  int num_focal;  // 1 (f) or 2 (fx, fy); the principal point follows, then the distortion
  bool fisheye;   // not a perspective projection even with zero distortion
};
// The camera models COLMAP defines (colmap/sensor/models.h), by id or name; nullptr if unknown.
const ColmapCameraModel* colmap_camera_model(int id);
const ColmapCameraModel* colmap_camera_model(std::string_view name);

struct ColmapCamera {
  std::uint32_t id = 0;
  int model_id = 0;
  std::uint64_t width = 0, height = 0;
  std::vector<double> params;
};

struct ColmapImage {
  std::uint32_t id = 0;
  std::array<double, 4> qvec{};  // w, x, y, z: the world-to-camera rotation, OpenCV axes
  std::array<double, 3> tvec{};  // world-to-camera translation
  std::uint32_t camera_id = 0;
  std::string name;  // path relative to the image folder
};

struct ColmapPoint {
  std::uint64_t id = 0;
  std::array<double, 3> xyz{};
  std::array<std::uint8_t, 3> rgb{};
  double error = 0;                // mean reprojection error over the track, pixels
  std::uint64_t track_length = 0;  // the images that observe it
};

struct ColmapModel {
  std::vector<ColmapCamera> cameras;  // in file order
  std::vector<ColmapImage> images;
  std::vector<ColmapPoint> points;
  std::string cameras_file, images_file, points_file;  // the files read, for messages
};

// Reads DIR/{cameras,images,points3D}.bin, or .txt where a .bin is absent. A truncated or
// malformed record, a duplicate id, an unknown camera model or an image whose camera is not in
// cameras: splat::Error naming the file and the record.
ColmapModel read_colmap_model(const std::string& sparse_dir);

}  // namespace splat
