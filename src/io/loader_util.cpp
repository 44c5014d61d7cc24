#include "io/loader_util.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <exception>
#include <tuple>
#include <utility>

#include "core/error.h"
#include "io/image_io.h"

namespace splat {

namespace fs = std::filesystem;

void check_load_options(const std::string& dir, const LoadOptions& opts) {
  const auto at_least = [&](const char* name, int value, int lo) {
    if (value < lo) {
      throw input_error(dir, name,
                        "must be >= " + std::to_string(lo) + ", got " + std::to_string(value));
    }
  };
  at_least("downscale", opts.downscale, 1);
  at_least("test_every", opts.test_every, 1);
  at_least("max_train", opts.max_train, 0);
  at_least("holdout_every", opts.holdout_every, 2);
}

std::optional<std::string> pinhole_problem(
    double fx, double fy, double cx, double cy, double width, double height) {
  const double side = std::max(width, height);
  const double lo = 1e-2 * side, hi = 1e4 * side;
  const std::string size = std::to_string(int(width)) + "x" + std::to_string(int(height));
  const auto num = [](double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", v);
    return std::string(buf);
  };
  for (const auto& [name, f] : {std::pair{"fx", fx}, std::pair{"fy", fy}}) {
    if (!(f >= lo && f <= hi))
      return std::string("focal length ") + name + " = " + num(f) +
             " pixels is implausible for a " + size + " image (expected " + num(lo) + " to " +
             num(hi) + ")";
  }
  for (const auto& [name, c, extent] :
       {std::tuple{"cx", cx, width}, std::tuple{"cy", cy, height}}) {
    if (!(c >= -extent && c <= 2 * extent))
      return std::string("principal point ") + name + " = " + num(c) + " lies far outside the " +
             size + " image";
  }
  return std::nullopt;
}

SplitIndices holdout_split(std::size_t n, const LoadOptions& opts) {
  SplitIndices s;
  std::size_t tests_seen = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (i % std::size_t(opts.holdout_every) == 0) {
      if (tests_seen++ % std::size_t(opts.test_every) == 0) s.test.push_back(i);
    } else if (opts.max_train == 0 || s.train.size() < std::size_t(opts.max_train)) {
      s.train.push_back(i);
    }
  }
  return s;
}

namespace {
std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return char(std::tolower(c)); });
  return s;
}
}  // namespace

std::optional<fs::path> ImageFinder::find(const std::string& rel) const {
  const fs::path p = (root_ / rel).lexically_normal();
  std::error_code ec;
  if (fs::is_regular_file(p, ec)) return p;
  return std::nullopt;
}

const std::vector<std::string>& ImageFinder::listing(const fs::path& dir) const {
  auto it = listings_.find(dir);
  if (it != listings_.end()) return it->second;
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (e.is_regular_file(ec)) names.push_back(e.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return listings_.emplace(dir, std::move(names)).first->second;
}

std::string ImageFinder::describe_missing(const std::string& rel) const {
  const fs::path rel_path = fs::path(rel).lexically_normal();
  const fs::path dir = (root_ / rel_path).parent_path();
  std::string msg = rel_path.string() + " not found";
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return msg + " (" + dir.string() + " is not a directory)";
  const std::string want = rel_path.filename().string();
  const std::string want_stem = lower(rel_path.stem().string());
  const auto shown = [&](const std::string& name) {
    return (rel_path.parent_path() / name).string();
  };
  const std::vector<std::string>& names = listing(dir);
  for (const std::string& name : names) {
    if (lower(name) == lower(want)) return msg + "; " + shown(name) + " exists (case differs)";
  }
  for (const std::string& name : names) {
    if (lower(fs::path(name).stem().string()) == want_stem) {
      return msg + "; " + shown(name) + " exists (extension differs)";
    }
  }
  return msg;
}

DecodedImages decode_images(const std::vector<ImageJob>& jobs,
                            const LoadOptions& opts,
                            const PrepareImage& prepare) {
  const std::size_t n = jobs.size();
  DecodedImages out;
  out.images.resize(n);
  out.full_sizes.resize(n);
  std::vector<std::exception_ptr> errors(n);
#pragma omp parallel for schedule(dynamic)
  for (std::size_t i = 0; i < n; ++i) {
    try {
      Image full = read_image(jobs[i].path);
      out.full_sizes[i] = {full.width, full.height};
      if (full.width / opts.downscale == 0 || full.height / opts.downscale == 0) {
        throw input_error(
            jobs[i].path, "image",
            "downscale factor " + std::to_string(opts.downscale) + " is larger than the image");
      }
      // composite_on and downscale copy when there is nothing to do; full-size images are large.
      Image rgb = full.channels == 4 ? composite_on(full, opts.background) : std::move(full);
      if (prepare) rgb = prepare(std::move(rgb), i);
      out.images[i] = opts.downscale > 1 ? downscale(rgb, opts.downscale) : std::move(rgb);
    } catch (const Error& e) {
      // The decoder names the image; prefix the file and record that referenced it.
      errors[i] = std::make_exception_ptr(input_error(jobs[i].origin, jobs[i].record, e.what()));
    } catch (...) {
      errors[i] = std::current_exception();
    }
  }
  for (const auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
  return out;
}

}  // namespace splat
