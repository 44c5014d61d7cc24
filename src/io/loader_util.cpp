#include "io/loader_util.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <exception>
#include <tuple>
#include <utility>

#include "core/error.h"
#include "io/image_io.h"
#include "io/read_file.h"

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
  at_least("max_image_size", opts.max_image_size, 0);
  at_least("max_image_width", opts.max_image_width, 0);
}

std::array<int, 2> loaded_size(int w, int h, const LoadOptions& opts) {
  w /= opts.downscale, h /= opts.downscale;
  double s = 1.0;  // the largest scale within both limits
  if (opts.max_image_size > 0) s = std::min(s, double(opts.max_image_size) / std::max(w, h));
  if (opts.max_image_width > 0) s = std::min(s, double(opts.max_image_width) / w);
  if (s >= 1.0) return {w, h};
  return {std::max(1, int(std::lround(w * s))), std::max(1, int(std::lround(h * s)))};
}

Camera loaded_camera(const Camera& full, const LoadOptions& opts) {
  const Camera c = full.downscaled(opts.downscale);
  const auto [w, h] = loaded_size(full.width, full.height, opts);
  return w == c.width && h == c.height ? c : c.resized(w, h);
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

std::optional<std::vector<std::string>> image_copies(const fs::path& dir,
                                                     const std::vector<std::string>& paths,
                                                     int n,
                                                     const std::string& blocker) {
  const fs::path copies = (dir / ("images_" + std::to_string(n))).lexically_normal();
  std::error_code ec;
  if (n <= 1 || !fs::is_directory(copies, ec)) return std::nullopt;
  std::string why = blocker;
  std::vector<std::string> out;
  for (std::size_t i = 0; i < paths.size() && why.empty(); ++i) {
    const fs::path rel =
        fs::path(paths[i]).lexically_normal().lexically_relative(dir.lexically_normal());
    auto part = rel.begin();
    if (part == rel.end() || *part != "images") {
      why = paths[i] + " is not in images/";
      break;
    }
    fs::path copy = copies;
    for (++part; part != rel.end(); ++part) copy /= *part;
    if (find_input({copy}))
      out.push_back(copy.string());
    else
      why = "no " + copy.string();
  }
  if (why.empty()) return out;
  std::fprintf(stderr, "%s: not used (%s); images/ downscaled by %d instead\n",
               copies.string().c_str(), why.c_str(), n);
  return std::nullopt;
}

std::optional<fs::path> ImageFinder::find(const std::string& rel) const {
  return find_input({(root_ / rel).lexically_normal()});
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

namespace {

// The fraction of a mask's pixels that are not black or white: a colour, or a gray level more
// than a tenth away from both ends. A mask has few (its antialiased or compressed edges); a
// photograph used as a mask by mistake has most.
double photo_likeness(const Image& m) {
  std::size_t unlike = 0;
  for (std::size_t i = 0; i < m.pixels(); ++i) {
    const float* p = &m.data[i * std::size_t(m.channels)];
    const bool black = p[0] < 0.1f && p[1] < 0.1f && p[2] < 0.1f;
    const bool white = p[0] > 0.9f && p[1] > 0.9f && p[2] > 0.9f;
    unlike += !black && !white;
  }
  return m.pixels() ? double(unlike) / double(m.pixels()) : 0.0;
}

// The mask file as weights in {0, 1} (its first channel: gray masks decode as RGB), checked
// against the image's size; `photo` receives its photo_likeness.
std::vector<float> read_mask(const std::string& path, const Image& image, double& photo) {
  const Image m = read_image(path);
  if (m.width != image.width || m.height != image.height)
    throw input_error(path, "mask",
                      "is " + std::to_string(m.width) + "x" + std::to_string(m.height) +
                          " but its image is " + std::to_string(image.width) + "x" +
                          std::to_string(image.height));
  photo = photo_likeness(m);
  std::vector<float> w(m.pixels());
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = m.data[i * std::size_t(m.channels)] >= 0.5f;
  return w;
}

// RGB (RGBA composited on the background) with `weights` as a fourth channel.
Image with_mask(const Image& img, const std::vector<float>& weights, const LoadOptions& opts) {
  Image out(img.width, img.height, 4);
  for (std::size_t i = 0; i < img.pixels(); ++i) {
    for (int c = 0; c < 3; ++c) out.data[4 * i + c] = img.data[i * std::size_t(img.channels) + c];
    out.data[4 * i + 3] = weights[i];
  }
  if (img.channels == 4 && !opts.alpha_mask) {  // transparency stays transparency
    const Image rgb = composite_on(img, opts.background);
    for (std::size_t i = 0; i < img.pixels(); ++i)
      for (int c = 0; c < 3; ++c) out.data[4 * i + c] = rgb.data[3 * i + c];
  }
  return out;
}

bool opaque(const Image8& img) {
  for (std::size_t i = 0; i < img.pixels(); ++i)
    if (img.data[4 * i + 3] != 255) return false;
  return true;
}

Image8 drop_alpha(const Image8& img) {
  Image8 out(img.width, img.height, 3);
  out.background = img.background;
  for (std::size_t i = 0; i < img.pixels(); ++i)
    for (int c = 0; c < 3; ++c) out.data[3 * i + c] = img.data[4 * i + c];
  return out;
}

// What decode_one saw on the way, for the warnings of decode_images.
struct DecodeNotes {
  std::array<int, 2> full_size{};
  bool alpha = false;       // the image has an alpha channel
  double coverage = 1.0;    // View::coverage
  double mask_photo = 0.0;  // photo_likeness of its mask file
};

// Decode, mask, prepare, downscale, to 8 bits: one job of decode_images.
Image8 decode_one(const ImageJob& job,
                  const LoadOptions& opts,
                  const PrepareImage& prepare,
                  std::size_t index,
                  DecodeNotes& notes) {
  Image img = read_image(job.path);
  const std::array<int, 2> full_size = {img.width, img.height};
  notes.full_size = full_size;
  notes.alpha = img.channels == 4;
  if (img.width / opts.downscale == 0 || img.height / opts.downscale == 0) {
    throw input_error(
        job.path, "image",
        "downscale factor " + std::to_string(opts.downscale) + " is larger than the image");
  }
  const bool alpha_mask = opts.alpha_mask && img.channels == 4;
  const bool masked = !job.mask.empty() || alpha_mask;
  if (img.channels == 4 && !masked) {
    double alpha = 0;
    for (std::size_t i = 0; i < img.pixels(); ++i) alpha += img.data[4 * i + 3];
    notes.coverage = alpha / double(std::max<std::size_t>(1, img.pixels()));
  }
  if (masked) {
    std::vector<float> weights = job.mask.empty() ? std::vector<float>(img.pixels(), 1.0f)
                                                  : read_mask(job.mask, img, notes.mask_photo);
    if (alpha_mask)
      for (std::size_t i = 0; i < weights.size(); ++i)
        weights[i] = weights[i] * float(img.data[4 * i + 3] >= 0.5f);
    img = with_mask(img, weights, opts);
  } else if (img.channels == 4 &&
             (job.undistorts || loaded_size(img.width, img.height, opts) != full_size)) {
    img = composite_on(img, opts.background);  // resampled as today: composite first
  }
  if (prepare) img = prepare(std::move(img), index);
  const auto [w, h] = loaded_size(img.width, img.height, opts);
  if (opts.downscale > 1) img = downscale(img, opts.downscale);
  if (w != img.width || h != img.height) img = resize_area(img, w, h);
  Image8 out = to_image8(img);
  out.background = opts.background;
  if (masked) {
    out.alpha = AlphaUse::mask;
    for (std::size_t i = 0; i < out.pixels(); ++i)
      out.data[4 * i + 3] = out.data[4 * i + 3] >= 128 ? 255 : 0;
    if (out.counted_pixels() == 0)
      throw input_error(job.mask.empty() ? job.path : job.mask, "mask",
                        "leaves no pixel in the loss (0 is left out, 255 counts: inverted?)");
  } else if (out.channels == 4 && opaque(out)) {
    out = drop_alpha(out);  // composites to its RGB exactly (c 1 + b 0 = c): a quarter smaller
  }
  return out;
}

// Inputs that load but are likely not what the user meant: photographs as masks, and
// data.alpha_mask on images without alpha. One line each, naming the first file and the count.
void warn_about(const std::vector<ImageJob>& jobs,
                const std::vector<DecodeNotes>& notes,
                const LoadOptions& opts) {
  constexpr double kPhotoLikeness = 0.25;
  std::size_t photos = 0, opaque_images = 0, first_photo = 0, first_opaque = 0;
  for (std::size_t i = 0; i < notes.size(); ++i) {
    if (notes[i].mask_photo > kPhotoLikeness && photos++ == 0) first_photo = i;
    if (opts.alpha_mask && !notes[i].alpha && opaque_images++ == 0) first_opaque = i;
  }
  if (photos > 0) {
    const std::string more =
        photos > 1 ? "; " + std::to_string(photos - 1) + " more masks are like it" : "";
    std::fprintf(stderr,
                 "warning: %s: %.0f%% of its pixels are neither black nor white: a photograph "
                 "rather than a mask? (a mask is cut at 1/2: dark pixels are left out of the "
                 "loss)%s\n",
                 jobs[first_photo].mask.c_str(), 100.0 * notes[first_photo].mask_photo,
                 more.c_str());
  }
  if (opaque_images > 0)
    std::fprintf(stderr,
                 "warning: data.alpha_mask = true, but %zu of %zu images have no alpha channel "
                 "(first: %s): all of their pixels count in the loss\n",
                 opaque_images, notes.size(), jobs[first_opaque].path.c_str());
}

}  // namespace

DecodedImages decode_images(const std::vector<ImageJob>& jobs,
                            const LoadOptions& opts,
                            const PrepareImage& prepare) {
  const std::size_t n = jobs.size();
  DecodedImages out;
  out.images.resize(n);
  std::vector<DecodeNotes> notes(n);
  std::vector<std::exception_ptr> errors(n);
#pragma omp parallel for schedule(dynamic)
  for (std::size_t i = 0; i < n; ++i) {
    try {
      out.images[i] = decode_one(jobs[i], opts, prepare, i, notes[i]);
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
  for (const DecodeNotes& d : notes) {
    out.full_sizes.push_back(d.full_size);
    out.coverage.push_back(d.coverage);
  }
  warn_about(jobs, notes, opts);
  return out;
}

}  // namespace splat
