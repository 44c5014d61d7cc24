#pragma once
// `splat prepare`: a folder of photos or a video becomes a COLMAP dataset (images/ and sparse/0,
// what `splat train`, gsplat and the original 3DGS code open), with the camera poses from
// COLMAP's structure from motion (its command line: Debian package colmap) and the video frames
// from ffmpeg (Debian package ffmpeg).
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace splat {

// prepare.camera_model: the COLMAP camera model SfM fits. auto: OPENCV (radial and tangential
// distortion) for one shared camera, which many images constrain; SIMPLE_RADIAL (one focal
// length, one distortion term) for a camera per image.
enum class PrepareCamera { Auto, SimplePinhole, Pinhole, SimpleRadial, Radial, Opencv };
inline constexpr std::pair<PrepareCamera, std::string_view> kPrepareCameraNames[] = {
    {PrepareCamera::Auto, "auto"},       {PrepareCamera::SimplePinhole, "SIMPLE_PINHOLE"},
    {PrepareCamera::Pinhole, "PINHOLE"}, {PrepareCamera::SimpleRadial, "SIMPLE_RADIAL"},
    {PrepareCamera::Radial, "RADIAL"},   {PrepareCamera::Opencv, "OPENCV"}};

// prepare.matcher: which image pairs COLMAP matches. auto: sequential for video frames and for
// folders of more than prepare.exhaustive_max images, exhaustive otherwise.
enum class PrepareMatcher { Auto, Exhaustive, Sequential };
inline constexpr std::pair<PrepareMatcher, std::string_view> kPrepareMatcherNames[] = {
    {PrepareMatcher::Auto, "auto"},
    {PrepareMatcher::Exhaustive, "exhaustive"},
    {PrepareMatcher::Sequential, "sequential"}};

// prepare.shared_camera: auto shares one camera among a video's frames and among photos that
// all have one size (one phone or camera), else gives each image its own.
enum class PrepareSharing { Auto, Shared, PerImage };
inline constexpr std::pair<PrepareSharing, std::string_view> kPrepareSharingNames[] = {
    {PrepareSharing::Auto, "auto"},
    {PrepareSharing::Shared, "shared"},
    {PrepareSharing::PerImage, "per_image"}};

// The [prepare] section of the config (train/config.h).
struct PrepareOptions {
  std::int64_t max_image_size = 1600;  // SfM sees images shrunk to this long side (0 = full size)
  std::int64_t frames = 200;           // video: frames kept, the sharpest of each window
  PrepareCamera camera = PrepareCamera::Auto;
  PrepareSharing sharing = PrepareSharing::Auto;
  PrepareMatcher matcher = PrepareMatcher::Auto;
  std::int64_t exhaustive_max = 100;  // matcher auto: exhaustive up to this many images
  std::int64_t threads = 0;           // COLMAP's threads (0 = all cores)
};

struct PrepareStage {
  std::string name;  // images / frames, extract, match, map, write
  double seconds = 0;
};

struct PrepareSummary {
  std::string dataset;  // the folder written
  int given = 0, registered = 0;
  std::vector<std::string> left_out;  // images not in the dataset's model, with why
  std::size_t points = 0;
  double mean_reprojection_error = 0;  // pixels, over every observation
  std::vector<PrepareStage> stages;
};

// What `splat train` prepares first: true when `path` is a video file (by its extension: .mp4,
// .mov, .m4v, .mkv, .avi, .webm, .mts), or a directory with image files and no dataset layout
// (transforms_train.json, transforms.json, sparse/). splat prepare takes any file as a video.
bool is_unposed_input(const std::string& path);

// Runs the whole preparation of `input` (a folder of images or a video file) into the folder
// `out`: out/images/ (the photos, or the chosen frames), out/sparse/0/ (the largest model COLMAP
// reconstructed, intrinsics for the full-size images), out/database.db and out/prepare.log
// (COLMAP's and ffmpeg's output). Prints a progress line per stage and the summary to stderr.
// Bad input (too few or unreadable images, a video ffmpeg cannot decode, under half of the
// images registered, an output folder holding a dataset without `overwrite`) throws
// splat::Error naming the files. With `overwrite`, what splat wrote there before is replaced.
PrepareSummary prepare_dataset(const std::string& input,
                               const std::string& out,
                               const PrepareOptions& opts,
                               bool overwrite);

}  // namespace splat
