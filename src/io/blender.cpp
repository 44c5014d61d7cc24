// NeRF-synthetic ("Blender") datasets: transforms_{train,val,test}.json beside the images.
#include <algorithm>
#include <cmath>
#include <exception>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <numbers>
#include <optional>
#include <sstream>

#include "core/error.h"
#include "io/dataset.h"
#include "io/image_io.h"

namespace splat {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// Tried in this order when `file_path` has no extension, or names a file that is absent (the
// shared Lego copy stores lossless WebP where the original JSON would say .png).
constexpr const char* kImageExtensions[] = {".png", ".webp", ".jpg", ".jpeg"};

struct Intrinsics {
  std::optional<double> angle_x, fl_x, fl_y, cx, cy, w, h;
};

// One frame resolved to a file, before decoding.
struct FrameRef {
  int index = 0;  // position in frames[], for error messages
  std::string name;
  std::string file_path;  // as written in the JSON
  std::string path;       // the image file it resolved to
  std::array<double, 16> c2w{};
};

json parse_json(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw input_error(file, "file", "cannot open");
  std::stringstream ss;
  ss << in.rdbuf();
  try {
    return json::parse(ss.str());
  } catch (const json::parse_error& e) {
    throw input_error(file, "JSON",
                      "malformed at byte " + std::to_string(e.byte) + ": " + e.what());
  }
}

std::optional<double> optional_number(const std::string& file, const json& j, const char* key) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::nullopt;
  if (!it->is_number()) throw input_error(file, key, "expected a number, got " + it->dump());
  const double v = it->get<double>();
  if (!std::isfinite(v)) throw input_error(file, key, "not finite");
  return v;
}

Intrinsics parse_intrinsics(const std::string& file, const json& j) {
  Intrinsics in;
  in.angle_x = optional_number(file, j, "camera_angle_x");
  in.fl_x = optional_number(file, j, "fl_x");
  in.fl_y = optional_number(file, j, "fl_y");
  in.cx = optional_number(file, j, "cx");
  in.cy = optional_number(file, j, "cy");
  in.w = optional_number(file, j, "w");
  in.h = optional_number(file, j, "h");
  if (!in.angle_x && !in.fl_x) throw input_error(file, "camera_angle_x", "missing (and no fl_x)");
  if (in.angle_x && !in.fl_x && !(*in.angle_x > 0 && *in.angle_x < std::numbers::pi)) {
    throw input_error(file, "camera_angle_x",
                      "must lie in (0, pi), got " + std::to_string(*in.angle_x));
  }
  if ((in.w && *in.w <= 0) || (in.h && *in.h <= 0)) throw input_error(file, "w/h", "must be > 0");
  return in;
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
  return out;
}

std::string resolve_image(const std::string& file,
                          const std::string& field,
                          const fs::path& dir,
                          const std::string& rel) {
  const fs::path base = (dir / rel).lexically_normal();
  std::error_code ec;
  if (fs::is_regular_file(base, ec)) return base.string();
  std::string tried = base.string();
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
    if (p == base) continue;
    if (fs::is_regular_file(p, ec)) return p.string();
    tried += ", " + p.string();
  }
  throw input_error(file, field, "image not found (tried " + tried + ")");
}

std::vector<FrameRef> parse_frames(const std::string& file, const json& j) {
  const auto it = j.find("frames");
  if (it == j.end()) throw input_error(file, "frames", "missing");
  if (!it->is_array()) throw input_error(file, "frames", "expected an array");
  std::vector<FrameRef> frames;
  for (std::size_t i = 0; i < it->size(); ++i) {
    const json& f = (*it)[i];
    const std::string field = "frames[" + std::to_string(i) + "]";
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
    ref.name = fs::path(ref.file_path).stem().string();
    frames.push_back(std::move(ref));
  }
  return frames;
}

// Decodes, composites and downscales every frame. Errors are collected per frame and the one
// with the lowest index is rethrown, so the report does not depend on thread timing.
std::vector<View> decode_split(const std::string& file,
                               const std::vector<FrameRef>& frames,
                               const Intrinsics& in,
                               const LoadOptions& opts) {
  const int n = int(frames.size());
  std::vector<View> views(n);
  std::vector<std::array<int, 2>> sizes(n);
  std::vector<std::exception_ptr> errors(n);
#pragma omp parallel for schedule(dynamic)
  for (int i = 0; i < n; ++i) {
    const std::string field = "frames[" + std::to_string(frames[i].index) + "]";
    try {
      Image full = read_image(frames[i].path);
      sizes[i] = {full.width, full.height};
      if (full.width / opts.downscale == 0 || full.height / opts.downscale == 0) {
        throw input_error(
            frames[i].path, "image",
            "downscale factor " + std::to_string(opts.downscale) + " is larger than the image");
      }
      // composite_on and downscale copy when there is nothing to do; full-size frames are large.
      Image rgb = full.channels == 4 ? composite_on(full, opts.background) : std::move(full);
      views[i].image = opts.downscale > 1 ? downscale(rgb, opts.downscale) : std::move(rgb);
    } catch (const Error& e) {
      // The decoder names the image; prefix the JSON file and frame that referenced it.
      errors[i] = std::make_exception_ptr(input_error(file, field, e.what()));
    } catch (...) {
      errors[i] = std::current_exception();
    }
  }
  for (const auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }

  const auto size_str = [](const std::array<int, 2>& s) {
    return std::to_string(s[0]) + "x" + std::to_string(s[1]);
  };
  for (int i = 0; i < n; ++i) {
    const FrameRef& f = frames[i];
    if (sizes[i] != sizes[0]) {
      throw input_error(file, "frames[" + std::to_string(f.index) + "]",
                        f.path + " is " + size_str(sizes[i]) + " but " + frames[0].path + " is " +
                            size_str(sizes[0]) + "; all images of a split must have one size");
    }
    const double W = sizes[i][0], H = sizes[i][1];
    // fl_x/cx/... are in the pixel units of w/h when given; the image on disk may differ.
    const double sx = in.w ? W / *in.w : 1.0, sy = in.h ? H / *in.h : sx;
    const double fx = in.fl_x ? *in.fl_x * sx : 0.5 * W / std::tan(0.5 * *in.angle_x);
    const double fy = in.fl_y ? *in.fl_y * sy : (in.fl_x ? *in.fl_x * sy : fx);
    const double cx = in.cx ? *in.cx * sx : 0.5 * W;
    const double cy = in.cy ? *in.cy * sy : 0.5 * H;
    views[i].name = f.name;
    views[i].path = f.path;
    views[i].camera = Camera::from_c2w_opengl(f.c2w, sizes[i][0], sizes[i][1], fx, fy, cx, cy)
                          .downscaled(opts.downscale);
  }
  return views;
}

// keep_every: keep frames 0, k, 2k, ...; max_count: keep the first m (0 = all).
std::vector<View> load_split(const fs::path& file_path,
                             const fs::path& dir,
                             const LoadOptions& opts,
                             int keep_every,
                             int max_count) {
  const std::string file = file_path.string();
  const json j = parse_json(file);
  if (!j.is_object()) throw input_error(file, "JSON", "top level must be an object");
  const Intrinsics in = parse_intrinsics(file, j);
  std::vector<FrameRef> all = parse_frames(file, j);
  std::vector<FrameRef> kept;
  for (std::size_t i = 0; i < all.size(); i += std::size_t(keep_every)) {
    if (max_count > 0 && int(kept.size()) >= max_count) break;
    kept.push_back(std::move(all[i]));
    // Only the frames kept need their images (a subset may be all that is on disk).
    FrameRef& f = kept.back();
    f.path = resolve_image(file, "frames[" + std::to_string(f.index) + "].file_path", dir, f.file_path);
  }
  return decode_split(file, kept, in, opts);
}

}  // namespace

Dataset load_blender(const std::string& dir_str, const LoadOptions& opts) {
  const fs::path dir(dir_str);
  if (opts.downscale < 1) {
    throw input_error(dir_str, "downscale", "must be >= 1, got " + std::to_string(opts.downscale));
  }
  if (opts.test_every < 1) {
    throw input_error(dir_str, "test_every",
                      "must be >= 1, got " + std::to_string(opts.test_every));
  }
  if (opts.max_train < 0) {
    throw input_error(dir_str, "max_train", "must be >= 0, got " + std::to_string(opts.max_train));
  }
  const fs::path train_json = dir / "transforms_train.json";
  std::error_code ec;
  if (!fs::is_regular_file(train_json, ec)) {
    throw input_error(train_json.string(), "file",
                      "not found (a NeRF-synthetic dataset needs transforms_train.json)");
  }
  Dataset data;
  data.train = load_split(train_json, dir, opts, 1, opts.max_train);
  if (data.train.empty()) throw input_error(train_json.string(), "frames", "no frames");
  for (const char* split : {"transforms_test.json", "transforms_val.json"}) {
    const fs::path p = dir / split;
    if (fs::is_regular_file(p, ec)) {
      data.test = load_split(p, dir, opts, opts.test_every, 0);
      break;
    }
  }
  return data;
}

double scene_extent(const Dataset& data) {
  const std::size_t n = data.train.size();
  Vec3<double> mean{};
  for (const View& v : data.train) mean += v.camera.center();
  if (n > 0) mean = mean * (1.0 / double(n));
  double max_dist = 0;
  for (const View& v : data.train) max_dist = std::max(max_dist, norm(v.camera.center() - mean));
  // One camera (or all at one spot) gives no scale; 1 keeps learning rates at their defaults
  // rather than zero.
  return max_dist > 0 ? 1.1 * max_dist : 1.0;
}

}  // namespace splat
