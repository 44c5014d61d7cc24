// Datasets described by transforms JSON: NeRF-synthetic ("Blender",
// transforms_{train,val,test}.json) and instant-ngp / nerfstudio (one transforms.json). They share
// the frame, pose and intrinsics parsing below and differ in how splits form, whether a missing
// image is fatal, and scene bounds.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <numbers>
#include <optional>
#include <sstream>
#include <utility>

#include "core/error.h"
#include "io/dataset.h"
#include "io/loader_util.h"
#include "io/read_file.h"
#include "io/undistort.h"

namespace splat {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// Tried in this order when `file_path` has no extension, or names a file that is absent (the
// shared Lego copy stores lossless WebP where the original JSON would say .png).
constexpr const char* kImageExtensions[] = {".png", ".webp", ".jpg", ".jpeg"};

// Camera fields, at the top level or in a frame (nerfstudio allows per-frame intrinsics).
struct Intrinsics {
  std::optional<double> angle_x, fl_x, fl_y, cx, cy, w, h;
  std::optional<double> k1, k2, k3, k4, p1, p2;
};

constexpr std::pair<const char*, std::optional<double> Intrinsics::*> kIntrinsicKeys[] = {
    {"camera_angle_x", &Intrinsics::angle_x},
    {"fl_x", &Intrinsics::fl_x},
    {"fl_y", &Intrinsics::fl_y},
    {"cx", &Intrinsics::cx},
    {"cy", &Intrinsics::cy},
    {"w", &Intrinsics::w},
    {"h", &Intrinsics::h},
    {"k1", &Intrinsics::k1},
    {"k2", &Intrinsics::k2},
    {"k3", &Intrinsics::k3},
    {"k4", &Intrinsics::k4},
    {"p1", &Intrinsics::p1},
    {"p2", &Intrinsics::p2}};

// One frame resolved to a file, before decoding.
struct FrameRef {
  int index = 0;  // position in frames[], for error messages
  std::string name;
  std::string file_path;  // as written in the JSON
  std::string path;       // the image file it resolved to
  std::string mask_path;  // nerfstudio's per-frame loss mask, relative to the JSON, or ""
  std::array<double, 16> c2w{};
  Intrinsics in;  // the top-level fields, overridden by the frame's own
  Lens::Model lens_model = Lens::Model::RadialTangential;  // the file's camera_model
};

std::string frame_field(int index) {
  return "frames[" + std::to_string(index) + "]";
}

json parse_json(const std::string& file) {
  const std::string text = read_input_file(file, "JSON file", kMaxJsonBytes);
  try {
    return json::parse(text);
  } catch (const json::parse_error& e) {
    throw input_error(file, "JSON",
                      "malformed at byte " + std::to_string(e.byte) + ": " + e.what());
  } catch (const json::exception& e) {  // a number too large for a double: out_of_range
    throw input_error(file, "JSON", e.what());
  }
}

// `prefix` says where `j` is: "" for the top level, "frames[3]." for a frame.
std::optional<double> optional_number(const std::string& file,
                                      const json& j,
                                      const char* key,
                                      const std::string& prefix = "") {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::nullopt;
  if (!it->is_number()) {
    throw input_error(file, prefix + key, "expected a number, got " + it->dump());
  }
  const double v = it->get<double>();
  if (!std::isfinite(v)) throw input_error(file, prefix + key, "not finite");
  return v;
}

Intrinsics parse_intrinsics(const std::string& file, const json& j, const std::string& prefix) {
  Intrinsics in;
  for (const auto& [key, member] : kIntrinsicKeys)
    in.*member = optional_number(file, j, key, prefix);
  for (const auto& [key, member] :
       {std::pair{"fl_x", in.fl_x}, {"fl_y", in.fl_y}, {"w", in.w}, {"h", in.h}}) {
    if (member && *member <= 0) throw input_error(file, prefix + key, "must be > 0");
  }
  return in;
}

Intrinsics merged(Intrinsics top, const Intrinsics& frame) {
  for (const auto& [key, member] : kIntrinsicKeys) {
    if (frame.*member) top.*member = frame.*member;
  }
  return top;
}

// The focal length comes from fl_x, or from camera_angle_x and the image width.
void require_focal(const std::string& file, const std::string& prefix, const Intrinsics& in) {
  if (!in.angle_x && !in.fl_x) {
    throw input_error(file, prefix + "camera_angle_x", "missing (and no fl_x)");
  }
  if (in.angle_x && !in.fl_x && !(*in.angle_x > 0 && *in.angle_x < std::numbers::pi)) {
    throw input_error(file, prefix + "camera_angle_x",
                      "must lie in (0, pi), got " + std::to_string(*in.angle_x));
  }
}

// Intrinsics for the image as found on disk: fl_x, cx, ... are in the pixel units of w/h when
// those are given, and the file may have another size.
CameraIntrinsics pinhole_for(const Intrinsics& in, int width, int height) {
  const double W = width, H = height;
  const double sx = in.w ? W / *in.w : 1.0, sy = in.h ? H / *in.h : sx;
  CameraIntrinsics p;
  p.width = width, p.height = height;
  p.fx = in.fl_x ? *in.fl_x * sx : 0.5 * W / std::tan(0.5 * *in.angle_x);
  p.fy = in.fl_y ? *in.fl_y * sy : (in.fl_x ? *in.fl_x * sy : p.fx);
  p.cx = in.cx ? *in.cx * sx : 0.5 * W;
  p.cy = in.cy ? *in.cy * sy : 0.5 * H;
  return p;
}

// When w and h are given, the image may be a downscaled copy (nerfstudio's images_2/, ...):
// W x H = (w x h) / s for one factor s, each side rounded to whole pixels, so |W h - H w| <= w + h.
// Any other size is another picture, which the intrinsics do not describe.
std::optional<std::string> size_problem(const Intrinsics& in, int width, int height) {
  if (!in.w || !in.h) return std::nullopt;
  const double w = *in.w, h = *in.h;
  if (std::abs(double(width) * h - double(height) * w) <= w + h) return std::nullopt;
  return std::to_string(width) + "x" + std::to_string(height) + " but its camera's w x h is " +
         std::to_string(std::llround(w)) + "x" + std::to_string(std::llround(h)) +
         " (not that size, nor a downscaled copy of the same aspect ratio)";
}

Lens lens_of(const FrameRef& f) {
  Lens lens;
  lens.model = f.lens_model;
  lens.k = {f.in.k1.value_or(0), f.in.k2.value_or(0), f.in.k3.value_or(0), f.in.k4.value_or(0)};
  lens.p1 = f.in.p1.value_or(0), lens.p2 = f.in.p2.value_or(0);
  return lens;
}

std::array<double, 16> parse_matrix(const std::string& file,
                                    const std::string& field,
                                    const json& m) {
  const auto bad = [&](const std::string& what) { return input_error(file, field, what); };
  if (!m.is_array() || m.size() != 4) throw bad("expected a 4x4 array of numbers");
  std::array<double, 16> out{};
  for (int r = 0; r < 4; ++r) {
    if (!m[r].is_array() || m[r].size() != 4) throw bad("expected a 4x4 array of numbers");
    for (int c = 0; c < 4; ++c) {
      if (!m[r][c].is_number()) throw bad("expected a 4x4 array of numbers");
      out[r * 4 + c] = m[r][c].get<double>();
      if (!std::isfinite(out[r * 4 + c])) throw bad("not finite");
    }
  }
  // Camera::from_c2w_opengl inverts by transposing, which is only right for a rotation; a
  // scaled or sheared matrix would give silently wrong poses.
  for (int a = 0; a < 3; ++a) {
    for (int b = 0; b < 3; ++b) {
      double d = 0;
      for (int r = 0; r < 3; ++r) d += out[r * 4 + a] * out[r * 4 + b];
      if (std::abs(d - (a == b ? 1.0 : 0.0)) > 1e-3) {
        throw bad("the upper-left 3x3 block is not a rotation");
      }
    }
  }
  // A reflection (determinant -1) is orthonormal too, but no camera mirrors the world.
  const auto& m3 = out;
  const double det = m3[0] * (m3[5] * m3[10] - m3[6] * m3[9]) -
                     m3[1] * (m3[4] * m3[10] - m3[6] * m3[8]) +
                     m3[2] * (m3[4] * m3[9] - m3[5] * m3[8]);
  if (det < 0)
    throw bad("the upper-left 3x3 block is a reflection (determinant -1), not a rotation");
  return out;
}

// The same image twice would be trained on twice, or leak from the training into the test split.
void reject_duplicate_frames(const std::string& file, const std::vector<FrameRef>& frames) {
  std::map<std::string, int> first;
  for (const FrameRef& f : frames) {
    const auto [it, fresh] = first.emplace(f.path, f.index);
    if (!fresh)
      throw input_error(file, frame_field(f.index) + ".file_path",
                        "'" + f.file_path + "' is the image of " + frame_field(it->second) +
                            " too; every frame needs its own image");
  }
}

// The image a `file_path` names; nullopt with the candidates in `tried` when none exists.
std::optional<std::string> resolve_image(const fs::path& dir,
                                         const std::string& rel,
                                         std::string& tried) {
  const fs::path base = (dir / rel).lexically_normal();
  std::vector<fs::path> candidates{base};
  const std::string ext = base.extension().string();
  const bool known_ext =
      std::find_if(std::begin(kImageExtensions), std::end(kImageExtensions),
                   [&](const char* e) { return ext == e; }) != std::end(kImageExtensions);
  for (const char* e : kImageExtensions) {
    fs::path p = base;
    if (known_ext) {
      p.replace_extension(e);
    } else {
      p += e;
    }
    if (p != base) candidates.push_back(p);
  }
  if (const auto found = find_input(candidates)) return found->string();
  for (const fs::path& p : candidates) tried += (tried.empty() ? "" : ", ") + p.string();
  return std::nullopt;
}

std::vector<FrameRef> parse_frames(const std::string& file, const json& j, const Intrinsics& top) {
  const auto it = j.find("frames");
  if (it == j.end()) throw input_error(file, "frames", "missing");
  if (!it->is_array()) throw input_error(file, "frames", "expected an array");
  std::vector<FrameRef> frames;
  for (std::size_t i = 0; i < it->size(); ++i) {
    const json& f = (*it)[i];
    const std::string field = frame_field(int(i));
    if (!f.is_object()) throw input_error(file, field, "expected an object");
    const auto fp = f.find("file_path");
    if (fp == f.end()) throw input_error(file, field + ".file_path", "missing");
    if (!fp->is_string()) throw input_error(file, field + ".file_path", "expected a string");
    const auto tm = f.find("transform_matrix");
    if (tm == f.end()) throw input_error(file, field + ".transform_matrix", "missing");
    FrameRef ref;
    ref.index = int(i);
    ref.c2w = parse_matrix(file, field + ".transform_matrix", *tm);
    ref.file_path = fp->get<std::string>();
    if (const auto mp = f.find("mask_path"); mp != f.end() && !mp->is_null()) {
      if (!mp->is_string()) throw input_error(file, field + ".mask_path", "expected a string");
      ref.mask_path = mp->get<std::string>();
    }
    ref.name = fs::path(ref.file_path).stem().string();
    ref.in = merged(top, parse_intrinsics(file, f, field + "."));
    frames.push_back(std::move(ref));
  }
  return frames;
}

// Decodes (in parallel), undistorts where the lens says so, downscales, and poses every frame.
// `full_sizes` receives the decoded sizes.
std::vector<View> make_views(const std::string& file,
                             const std::vector<FrameRef>& frames,
                             const LoadOptions& opts,
                             std::vector<std::array<int, 2>>* full_sizes = nullptr) {
  std::vector<ImageJob> jobs;
  const fs::path json_dir = fs::path(file).parent_path();
  for (const FrameRef& f : frames) {
    const std::string mask =
        f.mask_path.empty() ? "" : (json_dir / f.mask_path).lexically_normal().string();
    jobs.push_back({f.path, file, frame_field(f.index), mask, !lens_of(f).is_pinhole()});
  }
  // The intrinsics are checked against the size found on disk, before undistortion uses them.
  std::vector<CameraIntrinsics> pinholes(frames.size());  // of each image as resampled
  DecodedImages decoded = decode_images(jobs, opts, [&](Image full, std::size_t i) {
    if (const auto problem = size_problem(frames[i].in, full.width, full.height))
      throw Error(frames[i].path + " is " + *problem);
    const CameraIntrinsics in = pinhole_for(frames[i].in, full.width, full.height);
    if (const auto problem = pinhole_problem(in.fx, in.fy, in.cx, in.cy, full.width, full.height))
      throw Error("fl_x fl_y cx cy (or camera_angle_x): " + *problem);
    const Lens lens = lens_of(frames[i]);
    pinholes[i] = undistorted_camera(in, lens, opts.crop_undistorted);
    return lens.is_pinhole() ? full : undistort(full, in, lens, pinholes[i]);
  });
  std::vector<View> views(frames.size());
  for (std::size_t i = 0; i < frames.size(); ++i) {
    const CameraIntrinsics& p = pinholes[i];
    views[i].name = frames[i].name;
    views[i].path = frames[i].path;
    views[i].camera = loaded_camera(
        Camera::from_c2w_opengl(frames[i].c2w, p.width, p.height, p.fx, p.fy, p.cx, p.cy), opts);
    views[i].image = std::move(decoded.images[i]);
    views[i].coverage = decoded.coverage[i];
  }
  if (full_sizes) *full_sizes = decoded.full_sizes;
  return views;
}

json parse_object(const fs::path& file_path) {
  const std::string file = file_path.string();
  json j = parse_json(file);
  if (!j.is_object()) throw input_error(file, "JSON", "top level must be an object");
  return j;
}

// ---- NeRF-synthetic ------------------------------------------------------------------------

// keep_every: keep frames 0, k, 2k, ...; max_count: keep the first m (0 = all).
std::vector<View> load_split(const fs::path& file_path,
                             const fs::path& dir,
                             const LoadOptions& opts,
                             int keep_every,
                             int max_count) {
  const std::string file = file_path.string();
  const json j = parse_object(file_path);
  const Intrinsics top = parse_intrinsics(file, j, "");
  require_focal(file, "", top);
  std::vector<FrameRef> all = parse_frames(file, j, top);
  std::vector<FrameRef> kept;
  for (std::size_t i = 0; i < all.size(); i += std::size_t(keep_every)) {
    if (max_count > 0 && int(kept.size()) >= max_count) break;
    kept.push_back(std::move(all[i]));
    // Only the frames kept need their images (a subset may be all that is on disk).
    FrameRef& f = kept.back();
    std::string tried;
    const auto path = resolve_image(dir, f.file_path, tried);
    if (!path) {
      throw input_error(file, frame_field(f.index) + ".file_path",
                        "image not found (tried " + tried + ")");
    }
    f.path = *path;
  }
  reject_duplicate_frames(file, kept);
  std::vector<std::array<int, 2>> sizes;
  std::vector<View> views = make_views(file, kept, opts, &sizes);
  const auto size_str = [](const std::array<int, 2>& s) {
    return std::to_string(s[0]) + "x" + std::to_string(s[1]);
  };
  for (std::size_t i = 0; i < kept.size(); ++i) {
    if (sizes[i] != sizes[0]) {
      throw input_error(file, frame_field(kept[i].index),
                        kept[i].path + " is " + size_str(sizes[i]) + " but " + kept[0].path +
                            " is " + size_str(sizes[0]) +
                            "; all images of a split must have one size");
    }
  }
  return views;
}

// ---- instant-ngp / nerfstudio --------------------------------------------------------------

// The lens of the file's cameras: nerfstudio's camera_model (OPENCV, OPENCV_FISHEYE, PINHOLE)
// or instant-ngp's is_fisheye, with the k1..k4, p1, p2 of each frame.
Lens::Model lens_model_of(const std::string& file, const json& j) {
  Lens::Model m = Lens::Model::RadialTangential;
  const auto model = j.find("camera_model");
  if (model != j.end()) {
    if (!model->is_string()) throw input_error(file, "camera_model", "expected a string");
    const std::string name = model->get<std::string>();
    if (name == "OPENCV_FISHEYE") {
      m = Lens::Model::Fisheye;
    } else if (name != "OPENCV" && name != "PINHOLE" && name != "SIMPLE_PINHOLE") {
      throw input_error(file, "camera_model",
                        "'" + name + "' is not supported (PINHOLE, SIMPLE_PINHOLE, OPENCV and " +
                            "OPENCV_FISHEYE are); undistort the images first");
    }
  }
  const auto fisheye = j.find("is_fisheye");
  if (fisheye != j.end()) {
    if (!fisheye->is_boolean()) throw input_error(file, "is_fisheye", "expected true or false");
    if (fisheye->get<bool>()) m = Lens::Model::Fisheye;
  }
  return m;
}

// instant-ngp maps world p to p * scale + offset and models the cube [0.5 - a/2, 0.5 + a/2]^3,
// a = aabb_scale (defaults: scale 0.33, offset 0.5; testbed/nerf_loader.cu).
std::optional<SceneBounds> ngp_bounds(const std::string& file, const json& j) {
  const auto aabb = optional_number(file, j, "aabb_scale");
  if (!aabb) return std::nullopt;
  if (*aabb <= 0) throw input_error(file, "aabb_scale", "must be > 0");
  const double scale = optional_number(file, j, "scale").value_or(0.33);
  if (scale <= 0) throw input_error(file, "scale", "must be > 0");
  std::array<double, 3> offset{0.5, 0.5, 0.5};
  if (const auto it = j.find("offset"); it != j.end()) {
    if (!it->is_array() || it->size() != 3 ||
        !std::all_of(it->begin(), it->end(), [](const json& v) {
          return v.is_number() && std::isfinite(v.get<double>());
        })) {
      throw input_error(file, "offset", "expected an array of 3 numbers");
    }
    for (int k = 0; k < 3; ++k) offset[k] = (*it)[k].get<double>();
  }
  SceneBounds b;
  for (int k = 0; k < 3; ++k) b.center[k] = (0.5 - offset[k]) / scale;
  b.half_size = 0.5 * *aabb / scale;
  return b;
}

}  // namespace

Dataset load_blender(const std::string& dir_str, const LoadOptions& opts) {
  check_load_options(dir_str, opts);
  const fs::path dir(dir_str);
  const fs::path train_json = dir / "transforms_train.json";
  if (!find_input({train_json})) {
    throw input_error(train_json.string(), "file",
                      "not found (a NeRF-synthetic dataset needs transforms_train.json)");
  }
  Dataset data;
  data.train = load_split(train_json, dir, opts, 1, opts.max_train);
  if (data.train.empty()) throw input_error(train_json.string(), "frames", "no frames");
  for (const char* split : {"transforms_test.json", "transforms_val.json"}) {
    const fs::path p = dir / split;
    if (find_input({p})) {
      data.test = load_split(p, dir, opts, opts.test_every, 0);
      break;
    }
  }
  // The objects lie in about the unit cube around the origin; model.init_extent is in its units.
  data.bounds = SceneBounds{};
  return data;
}

Dataset load_transforms(const std::string& dir_str, const LoadOptions& opts) {
  check_load_options(dir_str, opts);
  const fs::path dir(dir_str);
  const fs::path file_path = dir / "transforms.json";
  const std::string file = file_path.string();
  if (!find_input({file_path})) {
    throw input_error(file, "file", "not found (an instant-ngp dataset needs transforms.json)");
  }
  const json j = parse_object(file_path);
  const Lens::Model lens_model = lens_model_of(file, j);
  const Intrinsics top = parse_intrinsics(file, j, "");
  std::vector<FrameRef> frames;
  std::size_t total = 0, missing = 0;
  std::string first_missing;
  const ImageFinder finder(dir);
  for (FrameRef& f : parse_frames(file, j, top)) {
    ++total;
    require_focal(file, frame_field(f.index) + ".", f.in);
    std::string tried;
    if (const auto path = resolve_image(dir, f.file_path, tried)) {
      f.path = *path;
      f.lens_model = lens_model;
      frames.push_back(std::move(f));
    } else if (missing++ == 0) {
      first_missing = finder.describe_missing(f.file_path);
    }
  }
  // Captures are often pruned (blurry frames deleted) without editing transforms.json.
  if (missing > 0 && !frames.empty()) {
    std::fprintf(stderr,
                 "warning: %s: skipped %zu of %zu frames whose image is missing (first: %s)\n",
                 file.c_str(), missing, total, first_missing.c_str());
  }
  if (frames.empty()) {
    throw input_error(
        file, "frames",
        total == 0 ? "no frames" : "no frame has its image (first: " + first_missing + ")");
  }
  reject_duplicate_frames(file, frames);
  std::stable_sort(frames.begin(), frames.end(),
                   [](const FrameRef& a, const FrameRef& b) { return a.file_path < b.file_path; });
  if (std::any_of(frames.begin(), frames.end(),
                  [](const FrameRef& f) { return !lens_of(f).is_pinhole(); })) {
    std::fprintf(stderr, "%s: undistorting the images (%s lens%s)\n", file.c_str(),
                 lens_model == Lens::Model::Fisheye ? "fisheye" : "k1 k2 k3 k4 p1 p2",
                 opts.crop_undistorted ? ", cropped to the valid region" : "");
  }

  const SplitIndices split = holdout_split(frames.size(), opts);
  std::vector<FrameRef> ordered;  // train then test: one parallel decode for both
  for (const auto* indices : {&split.train, &split.test}) {
    for (std::size_t i : *indices) ordered.push_back(frames[i]);
  }
  // nerfstudio's images_2/, images_4/ ...: pixel intrinsics scale to a copy's size through w, h.
  std::vector<std::string> paths;
  std::string blocker;
  for (const FrameRef& f : ordered) {
    paths.push_back(f.path);
    if (!f.mask_path.empty()) blocker = "the masks are of the full-size images";
    if (blocker.empty() && !(f.in.w && f.in.h) && (f.in.fl_x || f.in.fl_y || f.in.cx || f.in.cy))
      blocker = "fl_x fl_y cx cy without w, h to scale them from";
  }
  LoadOptions load = opts;
  if (const auto copies = image_copies(dir, paths, opts.downscale, blocker)) {
    for (std::size_t i = 0; i < ordered.size(); ++i) ordered[i].path = (*copies)[i];
    load.downscale = 1;  // the pixels are downscaled already
  }
  std::vector<View> views = make_views(file, ordered, load);
  Dataset data;
  data.train.assign(std::make_move_iterator(views.begin()),
                    std::make_move_iterator(views.begin() + std::ptrdiff_t(split.train.size())));
  data.test.assign(std::make_move_iterator(views.begin() + std::ptrdiff_t(split.train.size())),
                   std::make_move_iterator(views.end()));
  if (data.train.empty()) throw input_error(file, "frames", "no training frames after the holdout");
  data.bounds = ngp_bounds(file, j);
  return data;
}

}  // namespace splat
