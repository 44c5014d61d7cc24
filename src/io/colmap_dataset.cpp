// COLMAP scenes: a sparse model in DIR/sparse/0 (or DIR/sparse, where image_undistorter writes
// it) and the images in DIR/images.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <optional>
#include <set>

#include "core/error.h"
#include "io/colmap.h"
#include "io/dataset.h"
#include "io/loader_util.h"
#include "io/read_file.h"
#include "io/undistort.h"

namespace splat {
namespace {

namespace fs = std::filesystem;

fs::path find_sparse_dir(const fs::path& dir) {
  for (const fs::path& d : {dir / "sparse" / "0", dir / "sparse"})
    if (find_input({d / "cameras.bin", d / "cameras.txt"})) return d;
  throw input_error(dir.string(), "sparse/0",
                    "no COLMAP model (looked for sparse/0/cameras.{bin,txt} and "
                    "sparse/cameras.{bin,txt})");
}

// The intrinsics and lens of a camera: COLMAP's parameters are the focal length(s), the
// principal point, then the model's distortion terms (colmap/sensor/models.h). nullopt for the
// models io/undistort.h does not have (FOV, the thin-prism fisheyes).
std::optional<std::pair<CameraIntrinsics, Lens>> lens_camera_of(const ColmapCamera& c) {
  const ColmapCameraModel& m = *colmap_camera_model(c.model_id);
  const std::vector<double>& p = c.params;
  const int pp = m.num_focal;  // the principal point follows the focal length(s)
  CameraIntrinsics in{p[0], p[m.num_focal - 1], p[pp], p[pp + 1], int(c.width), int(c.height)};
  Lens lens;
  const std::string name(m.name);
  const double* e = p.data() + pp + 2;  // the extra parameters
  if (name == "SIMPLE_PINHOLE" || name == "PINHOLE") {
  } else if (name == "SIMPLE_RADIAL") {
    lens.k[0] = e[0];
  } else if (name == "RADIAL") {
    lens.k[0] = e[0], lens.k[1] = e[1];
  } else if (name == "OPENCV") {  // k1 k2 p1 p2
    lens.k[0] = e[0], lens.k[1] = e[1], lens.p1 = e[2], lens.p2 = e[3];
  } else if (name == "FULL_OPENCV") {  // k1 k2 p1 p2 k3 k4 k5 k6
    lens.k[0] = e[0], lens.k[1] = e[1], lens.p1 = e[2], lens.p2 = e[3], lens.k[2] = e[4];
    lens.d = {e[5], e[6], e[7]};
  } else if (name == "OPENCV_FISHEYE") {  // k1 k2 k3 k4
    lens.model = Lens::Model::Fisheye;
    lens.k = {e[0], e[1], e[2], e[3]};
  } else if (name == "SIMPLE_RADIAL_FISHEYE") {
    lens.model = Lens::Model::Fisheye;
    lens.k[0] = e[0];
  } else if (name == "RADIAL_FISHEYE") {
    lens.model = Lens::Model::Fisheye;
    lens.k[0] = e[0], lens.k[1] = e[1];
  } else {
    return std::nullopt;
  }
  return std::pair{in, lens};
}

// COLMAP's mask convention: DIR/masks/<image name>.png (masks/0001.jpg.png), or
// masks/<name without extension>.png. No masks/ folder: no masks. A masks/ folder without the
// image's mask is an error naming both names tried.
std::optional<std::string> find_mask(const fs::path& dir, const std::string& image_name) {
  std::error_code ec;
  if (!fs::is_directory(dir / "masks", ec)) return std::nullopt;
  const fs::path full = (dir / "masks" / (image_name + ".png")).lexically_normal();
  const fs::path stem =
      (dir / "masks" / fs::path(image_name).replace_extension(".png")).lexically_normal();
  if (const auto found = find_input({full, stem})) return found->string();
  throw input_error((dir / "masks").string(), image_name,
                    "no mask for images/" + image_name + " (looked for " + full.string() + " and " +
                        stem.string() + ")");
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
Camera camera_of(const ColmapImage& im, const CameraIntrinsics& p) {
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
  return Camera::from_w2c(w2c, p.width, p.height, p.fx, p.fy, p.cx, p.cy);
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

  // The cameras in use, as the pinholes their images are resampled to; a model without a lens
  // here stops the load before any image is read.
  std::set<std::uint32_t> used;
  for (const ColmapImage& im : model.images) used.insert(im.camera_id);
  struct UsedCamera {
    const ColmapCamera* colmap;
    CameraIntrinsics in, out;
    Lens lens;
  };
  std::map<std::uint32_t, UsedCamera> cameras;
  std::size_t distorted = 0;
  for (const ColmapCamera& c : model.cameras) {
    if (!used.count(c.id)) continue;
    const std::string record = "camera " + std::to_string(c.id);
    const auto lc = lens_camera_of(c);
    if (!lc) {
      throw input_error(
          model.cameras_file, record,
          "model " + std::string(colmap_camera_model(c.model_id)->name) +
              " is not supported (the pinhole, radial, OpenCV and fisheye models are). " +
              undistort_advice(dir, sparse));
    }
    try {
      cameras[c.id] = {&c, lc->first,
                       undistorted_camera(lc->first, lc->second, opts.crop_undistorted),
                       lc->second};
    } catch (const Error& e) {
      throw input_error(model.cameras_file, record, e.what());
    }
    distorted += !lc->second.is_pinhole();
  }
  if (distorted > 0) {
    std::fprintf(stderr, "%s: undistorting the images of %zu of %zu cameras%s\n",
                 model.cameras_file.c_str(), distorted, used.size(),
                 opts.crop_undistorted ? ", cropped to the valid region" : "");
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
      const auto mask = find_mask(dir, im->name);
      jobs.push_back({path->string(), model.images_file, image_record(*im), mask ? *mask : "",
                      !cameras.at(im->camera_id).lens.is_pinhole()});
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

  std::vector<std::string> paths;
  std::string blocker;
  for (const ImageJob& job : jobs) {
    paths.push_back(job.path);
    if (!job.mask.empty()) blocker = "the masks are of the full-size images";
  }
  if (distorted > 0) blocker = "the lens cameras are undistorted from the full-size images";
  LoadOptions load = opts;
  if (const auto copies = image_copies(dir, paths, opts.downscale, blocker)) {
    for (std::size_t i = 0; i < jobs.size(); ++i) jobs[i].path = (*copies)[i];
    load.downscale = 1;  // the pixels are downscaled already
  }
  const bool from_copies = load.downscale != opts.downscale;
  DecodedImages decoded = decode_images(jobs, load, [&](Image full, std::size_t i) {
    const UsedCamera& used_camera = cameras.at(ordered[i]->camera_id);
    const ColmapCamera& c = *used_camera.colmap;
    const std::uint64_t n = from_copies ? std::uint64_t(opts.downscale) : 1;
    const auto fits = [n](int got, std::uint64_t side) {  // a 1/n copy rounds either way
      return std::uint64_t(got) * n + n > side && std::uint64_t(got) * n < side + n;
    };
    if (!fits(full.width, c.width) || !fits(full.height, c.height)) {
      throw Error(
          jobs[i].path + " is " + std::to_string(full.width) + "x" + std::to_string(full.height) +
          " but camera " + std::to_string(c.id) + " in " + model.cameras_file + " is " +
          std::to_string(c.width) + "x" + std::to_string(c.height) +
          (from_copies ? ", of which a 1/" + std::to_string(n) + " copy is about " +
                             std::to_string(c.width / n) + "x" + std::to_string(c.height / n)
                       : ""));
    }
    if (used_camera.lens.is_pinhole()) return full;
    return undistort(full, used_camera.in, used_camera.lens, used_camera.out);
  });
  std::vector<View> views(ordered.size());
  for (std::size_t i = 0; i < ordered.size(); ++i) {
    views[i].name = view_name(ordered[i]->name);
    views[i].path = jobs[i].path;
    const Camera full = camera_of(*ordered[i], cameras.at(ordered[i]->camera_id).out);
    const auto [w, h] = decoded.full_sizes[i];  // a 1/n copy's intrinsics scale to its size
    views[i].camera = loaded_camera(from_copies ? full.resized(w, h) : full, load);
    views[i].image = std::move(decoded.images[i]);
    views[i].coverage = decoded.coverage[i];
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
    pc.source = model.points_file;
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
