#pragma once
// Checkpoint: everything needed to resume a run exactly where it stopped.
#include <cstdint>
#include <string>
#include <vector>

#include "core/gaussians.h"
#include "io/dataset.h"

namespace splat {

// One training image as a run trained on it. The list of them, in the trainer's order
// (Dataset::train), is the dataset's identity: a resume or a replay on other images is refused.
struct TrainImage {
  std::string name;                    // View::name
  std::int32_t width = 0, height = 0;  // as trained: after downscale, undistortion, max size
  // The image file's size in bytes; it tells apart scenes whose images share names and sizes
  // (every NeRF-synthetic scene has r_0.png .. r_99.png at 800x800). 0 when the file cannot be
  // stat'ed; then it is not compared.
  std::uint64_t file_bytes = 0;
  bool operator==(const TrainImage&) const = default;
};

struct Checkpoint {
  std::int64_t iteration = 0;  // iterations completed
  Gaussians params;
  Gaussians adam_m;                      // first moments, same shapes as params
  Gaussians adam_v;                      // second moments
  std::vector<std::uint64_t> rng_state;  // trainer RNG, opaque words
  std::vector<std::int32_t> view_order;  // current epoch's view permutation
  std::int64_t view_pos = 0;             // position in view_order
  std::string config_toml;               // the resolved config the run used
  // ADC's statistics since the last refine tick (per splat: gradient-norm sum, visible steps);
  // empty for MCMC runs and in version-1 files, which resume with fresh statistics.
  std::vector<float> adc_grad2d;
  std::vector<std::int32_t> adc_count;
  // AbsGS's statistic since the last tick (adc::Stats::grad2d_abs), one per count; empty when the
  // run gathers none and before version 7.
  std::vector<float> adc_grad2d_abs;
  // The run this state belongs to (train.h: every output of a run carries it); empty in files
  // before version 3.
  std::string run_id;
  // Mip-Splatting's 3D filter variance per splat (model.antialiased; engine/filter3d.h), so that
  // eval, render and view draw the model as it trained; empty otherwise and before version 4.
  std::vector<float> filter3d;
  // train.appearance = affine: the per-training-image colour transforms, [images, 3, 4] row-major
  // [A | b] (engine/appearance.h), and their Adam moments; empty otherwise and before version 5.
  std::vector<float> appearance;
  std::vector<float> appearance_m;
  std::vector<float> appearance_v;
  // train.pose_opt: the per-training-image pose corrections, [images, 9] (engine/pose.h), their
  // Adam moments and each one's Adam step count; empty otherwise and before version 8.
  std::vector<float> pose;
  std::vector<float> pose_m;
  std::vector<float> pose_v;
  std::vector<std::int32_t> pose_steps;
  // The training images the run trained on (TrainImage); empty before version 6.
  std::vector<TrainImage> train_images;
};

void write_checkpoint(const std::string& path, const Checkpoint& ckpt);
// Throws splat::Error naming the file and the section on a bad magic, version, size or truncation,
// or a non-finite parameter (the writer refuses those too: a diverged state is no place to resume
// from). From version 6 on, a file whose CRC32C does not match its bytes is refused naming
// "checksum" (and what the damage broke, if anything), whatever else is found.
Checkpoint read_checkpoint(const std::string& path);

// The identity of `train`, in its order; each file's size is stat'ed now.
std::vector<TrainImage> train_images_of(const std::vector<View>& train);
// Throws splat::Error when `here` (the dataset of a resume or replay) are not the images
// `saved` (a checkpoint's) trained on: naming the first differing image and what differs. An
// empty `saved` (a checkpoint before version 6) is not checked.
void check_same_images(const std::vector<TrainImage>& saved, const std::vector<TrainImage>& here);

}  // namespace splat
