#pragma once
// Pieces the dataset loaders share: option checks, the held-out split, finding images (with a
// hint when a name differs only in case or extension) and decoding them in parallel.
#include <array>
#include <cstddef>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/image.h"
#include "io/dataset.h"

namespace splat {

// Rejects out-of-range options, naming the dataset and the option.
void check_load_options(const std::string& dir, const LoadOptions& opts);

// What is wrong with intrinsics no camera has, or nullopt: a focal length that is not finite or
// lies outside [1e-2, 1e4] times the larger image side (fields of view of 178 degrees down to
// 0.006), or a principal point that is not finite or lies farther than one image size outside
// the image. Such values (a zero or 1e-300 focal length) make every projection overflow.
std::optional<std::string> pinhole_problem(
    double fx, double fy, double cx, double cy, double width, double height);

// The size an image of w x h is loaded at: divided by LoadOptions::downscale (rounded down), then
// shrunk, aspect kept, to fit a long side of max_image_size and a width of max_image_width where
// it exceeds either (rounded to nearest).
std::array<int, 2> loaded_size(int w, int h, const LoadOptions& opts);
// The camera of the full-size image, for the image as loaded.
Camera loaded_camera(const Camera& full, const LoadOptions& opts);

// For formats with one image collection: positions 0..n-1 of the collection sorted by name. Every
// holdout_every-th (0, k, 2k, ...) is a test view, thinned by test_every; the rest are training
// views, at most max_train of them.
struct SplitIndices {
  std::vector<std::size_t> train, test;
};
SplitIndices holdout_split(std::size_t n, const LoadOptions& opts);

// Looks up image files below `root` by relative name. When one is missing, says what is there
// instead: "images/IMG_1.JPG not found; images/img_1.jpg exists (case differs)". Directory
// listings are read once and cached.
class ImageFinder {
 public:
  explicit ImageFinder(std::filesystem::path root) : root_(std::move(root)) {}
  // The file root/rel, if it exists.
  std::optional<std::filesystem::path> find(const std::string& rel) const;
  // "REL not found", plus a file of the same directory whose name matches ignoring case, or
  // whose stem matches with another extension.
  std::string describe_missing(const std::string& rel) const;

 private:
  const std::vector<std::string>& listing(const std::filesystem::path& dir) const;
  std::filesystem::path root_;
  mutable std::map<std::filesystem::path, std::vector<std::string>> listings_;
};

// Datasets that ship 1/n copies of their images (DIR/images_n/ beside DIR/images/: Mip-NeRF
// 360's images_4, nerfstudio's images_2, ...) are read from those at downscale n, as 3DGS's -r n,
// gsplat's --data_factor n and nerfstudio's downscale_factor do. The copies' paths, one for each
// of `paths` (image files under DIR/images/), when DIR/images_n/ has every one of them and
// `blocker` (why the copies cannot serve: masks of the full-size images, ...) is empty; otherwise
// nullopt, said in one line where the folder exists.
std::optional<std::vector<std::string>> image_copies(const std::filesystem::path& dir,
                                                     const std::vector<std::string>& paths,
                                                     int n,
                                                     const std::string& blocker);

struct ImageJob {
  std::string path;    // the image file
  std::string origin;  // the file that referenced it, and the record: errors name both
  std::string record;
  std::string mask;         // a mask image of the same size (0: left out of the loss), or ""
  bool undistorts = false;  // `prepare` resamples it (a lens camera)
};

struct DecodedImages {
  std::vector<Image8> images;                  // prepared, downscaled, 8-bit (dataset.h View)
  std::vector<std::array<int, 2>> full_sizes;  // width, height as decoded
  std::vector<double> coverage;                // View::coverage of each
};

// Decodes every job in parallel (OpenMP), then `prepare` (at full resolution; may throw), then
// downscale, keeping 8 bits. An RGBA image that is not resampled keeps its alpha, which the loss
// composites on the background; one that is resampled is composited first (in float, then
// rounded). A mask (the job's mask file, or with LoadOptions::alpha_mask the alpha channel)
// goes through the same resampling as the image and is then binarized at 1/2. Errors are
// collected per image and the one with the lowest index is rethrown, so the report does not
// depend on thread timing.
using PrepareImage = std::function<Image(Image full, std::size_t index)>;
DecodedImages decode_images(const std::vector<ImageJob>& jobs,
                            const LoadOptions& opts,
                            const PrepareImage& prepare = {});

}  // namespace splat
