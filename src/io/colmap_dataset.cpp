// COLMAP scenes: a sparse model in DIR/sparse/0 (or DIR/sparse, where image_undistorter writes
// it) and the images in DIR/images.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <optional>
#include <set>

#include "core/error.h"
#include "io/colmap.h"
#include "io/dataset.h"
#include "io/loader_util.h"

namespace splat {
namespace {

namespace fs = std::filesystem;

fs::path find_sparse_dir(const fs::path& dir) {
  std::error_code ec;
  for (const fs::path& d : {dir / "sparse" / "0", dir / "sparse"}) {
    if (fs::is_regular_file(d / "cameras.bin", ec) || fs::is_regular_file(d / "cameras.txt", ec)) {
      return d;
    }
  }
  throw input_error(dir.string(), "sparse/0",
                    "no COLMAP model (looked for sparse/0/cameras.{bin,txt} and "
                    "sparse/cameras.{bin,txt})");
}

struct Pinhole {
  double fx, fy, cx, cy;
};

// The pinhole intrinsics of a camera; nullopt when its model distorts. The perspective models
// with every distortion parameter zero (SIMPLE_RADIAL with k = 0, ...) are pinholes.
std::optional<Pinhole> pinhole_of(const ColmapCamera& c) {
  const ColmapCameraModel& m = *colmap_camera_model(c.model_id);
  const std::vector<double>& p = c.params;
  const int pp = m.num_focal;  // the principal point follows the focal length(s)
  if (m.fisheye || std::any_of(p.begin() + pp + 2, p.end(), [](double v) { return v != 0.0; })) {
    return std::nullopt;
  }
  return Pinhole{p[0], p[m.num_focal - 1], p[pp], p[pp + 1]};
}

std::string distortion_text(const ColmapCamera& c) {
  const ColmapCameraModel& m = *colmap_camera_model(c.model_id);
  std::string s;
  for (std::size_t i = std::size_t(m.num_focal) + 2; i < c.params.size(); ++i) {
    s += (s.empty() ? "" : ", ") + std::to_string(c.params[i]);
  }
  return m.fisheye ? "a fisheye projection" : "lens distortion (" + s + ")";
}

std::string undistort_advice(const fs::path& dir, const fs::path& sparse) {
  fs::path clean = dir.lexically_normal();
  if (clean.filename().empty()) clean = clean.parent_path();
  const std::string out = clean.string() + "_undistorted";
  return "Undistort the images and the model with COLMAP, then point splat at the output "
         "folder:\n  colmap image_undistorter --image_path " +
         (dir / "images").string() + " --input_path " + sparse.string() + " --output_path " + out +
         "\n  splat train " + out;
}

// COLMAP's world-to-camera pose (unit quaternion w, x, y, z and translation), OpenCV axes.
Camera camera_of(const ColmapImage& im, const ColmapCamera& c, const Pinhole& p) {
  double n = 0;
  for (double q : im.qvec) n += q * q;
  n = std::sqrt(n);
  const double w = im.qvec[0] / n, x = im.qvec[1] / n, y = im.qvec[2] / n, z = im.qvec[3] / n;
  // clang-format off
  const std::array<double, 16> w2c = {
      1 - 2 * (y * y + z * z), 2 * (x * y - w * z),     2 * (x * z + w * y),     im.tvec[0],
      2 * (x * y + w * z),     1 - 2 * (x * x + z * z), 2 * (y * z - w * x),     im.tvec[1],
      2 * (x * z - w * y),     2 * (y * z + w * x),     1 - 2 * (x * x + y * y), im.tvec[2],
      0,                       0,                       0,                       1};
  // clang-format on
  return Camera::from_w2c(w2c, int(c.width), int(c.height), p.fx, p.fy, p.cx, p.cy);
}

// "sub/DSC_1.JPG" -> "sub_DSC_1": usable as an output file name.
std::string view_name(const std::string& image_name) {
  std::string s = fs::path(image_name).replace_extension().generic_string();
  std::replace(s.begin(), s.end(), '/', '_');
  return s;
}

std::string image_record(const ColmapImage& im) {
  return "image " + std::to_string(im.id) + " (" + im.name + ")";
}

}  // namespace

Dataset load_colmap(const std::string& dir_str, const LoadOptions& opts) {
  check_load_options(dir_str, opts);
  const fs::path dir(dir_str);
  const fs::path sparse = find_sparse_dir(dir);
  const ColmapModel model = read_colmap_model(sparse.string());
  if (model.images.empty()) throw input_error(model.images_file, "images", "no images");

  // Intrinsics of the cameras in use; a distorted one stops the load before any image is read.
  std::set<std::uint32_t> used;
  for (const ColmapImage& im : model.images) used.insert(im.camera_id);
  std::map<std::uint32_t, std::pair<const ColmapCamera*, Pinhole>> cameras;
  const ColmapCamera* first_distorted = nullptr;
  std::size_t distorted = 0;
  for (const ColmapCamera& c : model.cameras) {
    if (!used.count(c.id)) continue;
    if (const auto p = pinhole_of(c)) {
      cameras[c.id] = {&c, *p};
    } else if (distorted++ == 0) {
      first_distorted = &c;
    }
  }
  if (first_distorted) {
    const ColmapCamera& c = *first_distorted;
    throw input_error(model.cameras_file, "camera " + std::to_string(c.id),
                      "model " + std::string(colmap_camera_model(c.model_id)->name) + " has " +
                          distortion_text(c) + ", but splat renders ideal pinhole cameras only (" +
                          std::to_string(distorted) + " of " + std::to_string(used.size()) +
                          " cameras in use are distorted). " + undistort_advice(dir, sparse));
  }

  std::vector<const ColmapImage*> sorted;
  for (const ColmapImage& im : model.images) sorted.push_back(&im);
  std::sort(sorted.begin(), sorted.end(),
            [](const ColmapImage* a, const ColmapImage* b) { return a->name < b->name; });
  for (std::size_t i = 1; i < sorted.size(); ++i) {
    if (sorted[i]->name == sorted[i - 1]->name) {
      throw input_error(model.images_file, image_record(*sorted[i]),
                        "the name is also used by image " + std::to_string(sorted[i - 1]->id));
    }
  }
  const SplitIndices split = holdout_split(sorted.size(), opts);
  std::vector<const ColmapImage*> ordered;  // train then test: one parallel decode for both
  for (const auto* indices : {&split.train, &split.test}) {
    for (std::size_t i : *indices) ordered.push_back(sorted[i]);
  }

  // Every missing image is counted; the first is described (case or extension mismatches).
  const ImageFinder finder(dir);
  std::vector<ImageJob> jobs;
  std::size_t missing = 0;
  const ColmapImage* first_missing = nullptr;
  std::string missing_what;
  for (const ColmapImage* im : ordered) {
    const std::string rel = "images/" + im->name;
    if (const auto path = finder.find(rel)) {
      jobs.push_back({path->string(), model.images_file, image_record(*im)});
    } else if (missing++ == 0) {
      first_missing = im;
      missing_what = finder.describe_missing(rel);
    }
  }
  if (first_missing) {
    if (missing > 1) {
      missing_what += " (" + std::to_string(missing) + " of " + std::to_string(ordered.size()) +
                      " images are missing)";
    }
    throw input_error(model.images_file, image_record(*first_missing), missing_what);
  }

  DecodedImages decoded = decode_images(jobs, opts, [&](Image full, std::size_t i) {
    const ColmapCamera& c = *cameras.at(ordered[i]->camera_id).first;
    if (std::uint64_t(full.width) != c.width || std::uint64_t(full.height) != c.height) {
      throw Error(jobs[i].path + " is " + std::to_string(full.width) + "x" +
                  std::to_string(full.height) + " but camera " + std::to_string(c.id) + " in " +
                  model.cameras_file + " is " + std::to_string(c.width) + "x" +
                  std::to_string(c.height));
    }
    return full;
  });
  std::vector<View> views(ordered.size());
  for (std::size_t i = 0; i < ordered.size(); ++i) {
    const auto& [camera, pinhole] = cameras.at(ordered[i]->camera_id);
    views[i].name = view_name(ordered[i]->name);
    views[i].path = jobs[i].path;
    views[i].camera = camera_of(*ordered[i], *camera, pinhole).downscaled(opts.downscale);
    views[i].image = std::move(decoded.images[i]);
  }
  Dataset data;
  const auto n_train = std::ptrdiff_t(split.train.size());
  data.train.assign(std::make_move_iterator(views.begin()),
                    std::make_move_iterator(views.begin() + n_train));
  data.test.assign(std::make_move_iterator(views.begin() + n_train),
                   std::make_move_iterator(views.end()));
  if (data.train.empty()) {
    throw input_error(model.images_file, "images", "no training images after the holdout");
  }
  if (!model.points.empty()) {
    PointCloud pc;
    for (const ColmapPoint& p : model.points) {
      for (int k = 0; k < 3; ++k) {
        pc.positions.push_back(float(p.xyz[k]));
        pc.colors.push_back(float(p.rgb[k]) / 255.0f);
      }
    }
    data.points = std::move(pc);
  }
  return data;
}

}  // namespace splat
