#pragma once
// The run configuration. Defaults are the member initializers below and nowhere else: a config
// file, --set and code all start from Config{} and go through the same field table (config.cpp).
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/backend_config.h"
#include "engine/loss.h"
#include "io/model_file.h"
#include "io/prepare.h"
#include "strategy/strategy.h"  // DensifyConfig

namespace splat {

enum class InitKind { Auto, Random, Points };
enum class LrBatchScaling { None, Sqrt, Linear };
// train.appearance: per-training-image colour compensation (engine/appearance.h).
enum class AppearanceKind { None, Affine };

std::string_view to_string(InitKind k);
std::string_view to_string(LrBatchScaling k);
std::string_view to_string(AppearanceKind k);
// The inverse of to_string: from_string<BackendKind>("cpu"). Throws splat::Error listing the
// valid names. Defined for the enums above, engine/backend_config.h's and LossKind (config.cpp).
template <class E>
E from_string(std::string_view name);

struct DataConfig {
  std::array<double, 3> background{1.0, 1.0, 1.0};  // composited under RGBA images
  std::int64_t downscale = 1;                       // integer image downscale factor
  std::int64_t test_every = 1;                      // evaluate every n-th test view
  std::int64_t max_train_views = 0;                 // 0 = all
  std::int64_t holdout_every = 8;   // COLMAP, transforms.json: every n-th image is a test view
  bool crop_undistorted = true;     // lens cameras: resample to the largest valid pinhole image
  bool alpha_mask = false;          // RGBA images: alpha is a loss mask, not transparency
  std::int64_t max_image_size = 0;  // long side limit after downscale (0 = none)
  // Width limit after downscale (0 = none): wider images shrink to it, as the original 3DGS code
  // and FastGS do ("rescaling to 1.6K"), so phone photos train at the size their peers train them.
  std::int64_t max_image_width = 1600;
};

struct ModelConfig {
  std::int64_t sh_degree = 3;
  InitKind init = InitKind::Auto;  // auto: the dataset's sparse points if it has them, else random
  std::int64_t init_points = 100000;  // random initialization: number of points
  double init_extent = 1.3;  // random init: cube half-size, in scene half-sizes (train/init.h)
  // MCMC's initial opacity and scale (gsplat's MCMC settings); ADC configs set 0.1 and 1.0 (3DGS).
  double init_opacity = 0.5;
  double init_scale = 0.1;  // multiplies the nearest-neighbour scale of each initial point
  // Mip-Splatting (Yu et al. 2024): the 3D smoothing filter and the 2D mip filter, in training,
  // evaluation and rendering; model.ply gets the 3D filter baked in (engine/filter3d.h).
  bool antialiased = false;
};

// The shortest train.time_budget: the budget plans from the run's measured steps, and less than
// this leaves a handful of steps, not a trained model.
inline constexpr double kMinTimeBudget = 1.0;

struct TrainConfig {
  // 0 = auto: resolved when training starts (auto_config.h), then saved resolved.
  std::int64_t iterations = 0;
  // Seconds of training to fit the run into (at least kMinTimeBudget), 0 = none: the recipe is
  // compressed to fit (time_budget.h).
  double time_budget = 0;
  std::uint64_t seed = 0;
  LossKind loss = LossKind::L1Ssim;       // engine/loss.h
  double ssim_lambda = 0.2;               // losses with SSIM (l1_ssim, l2_ssim) only
  std::int64_t sh_increase_every = 1000;  // SH degree grows by one every n iterations
  // Coarse-to-fine resolution (train/resolution.h): the first steps on the training images
  // downscaled by coarse_factor (a power of two; 1 = off), the factor halving at evenly spaced
  // steps up to full resolution at step coarse_until. 0 = auto for either (auto_config.h).
  std::int64_t coarse_factor = 0;
  std::int64_t coarse_until = 0;
  // 3DGS learning rates; means are scaled by the scene extent and decay exponentially.
  double lr_means = 1.6e-4;
  double lr_means_final = 1.6e-6;
  double lr_log_scales = 5e-3;
  double lr_quats = 1e-3;
  double lr_opacity = 5e-2;
  double lr_sh0 = 2.5e-3;
  double lr_shN = 2.5e-3 / 20.0;
  // Sparse Adam on the SH coefficients (StepSettings::sparse_sh_adam): on Lego the same PSNR
  // (+0.006 dB at 400k splats, +0.033 at 3M) in 1.2% / 2.6% less time than with false
  // (docs/benchmarks.md).
  bool sparse_sh_adam = true;
  // Real captures: an affine colour transform per training image, applied to the render before
  // the loss and trained with Adam at lr_appearance (engine/appearance.h); off for synthetic data.
  AppearanceKind appearance = AppearanceKind::None;
  // About 1% of a gain per step: an image's transform, which a gradient reaches once per epoch,
  // settles in a few epochs, without the jitter of a larger rate (the splats' colours use 2.5e-3).
  double lr_appearance = 1e-3;
  // Pull toward the identity, appearance_reg * ||[A | b] - [I | 0]||^2 per view: the transforms
  // and the splats' colours can trade a common colour change, which this keeps out of the
  // transforms, so that the splats (what held-out views see) carry the mean appearance.
  double appearance_reg = 0.01;
  // Camera pose refinement (gsplat's pose_opt): a rigid correction of each training image's pose,
  // learnt with the splats (engine/pose.h), for SfM poses with small errors. gsplat's rate and
  // weight decay: the corrections move slowly and stay small.
  bool pose_opt = false;
  double lr_pose = 1e-5;
  double pose_reg = 1e-6;
  std::int64_t log_every = 100;  // plain progress line period when not on a terminal
  // Test PSNR/SSIM every n steps into metrics.jsonl (0 = only at the end).
  std::int64_t eval_every = 0;
  // Views per step, over all ranks: their gradients are averaged into one Adam update. Iterations,
  // schedules and refine intervals count steps.
  std::int64_t batch_size = 1;
  // Learning rates times sqrt(B) (Grendel-GS), B or 1: sqrt keeps the Adam step per epoch, and
  // the MCMC noise (which follows the means rate) per epoch, what they are at B = 1.
  LrBatchScaling lr_batch_scaling = LrBatchScaling::Sqrt;
  // Several ranks: compare a model digest every n steps (0 = never).
  std::int64_t digest_every = 100;
  // Several ranks: seconds before a stalled collective ends the job.
  double collective_timeout = 300;
};

struct OutputConfig {
  bool save_renders = true;  // test renders as PNG
  // The model files written at the end (model.ply, model.splat, model.spz, model.compressed.ply).
  std::vector<ModelFormat> formats{ModelFormat::Ply};
  // The final checkpoint.ckpt (what --resume continues from); a run that needs no resuming can
  // skip it.
  bool save_checkpoint = true;
  std::int64_t checkpoint_every = 0;  // 0 = only at the end
  // checkpoint.ckpt rewritten every n minutes of training, so a crash or kill loses at most that.
  double checkpoint_minutes = 10;
};

struct Config {
  DataConfig data;
  ModelConfig model;
  TrainConfig train;
  BackendConfig backend;
  DensifyConfig densify;
  OutputConfig output;
  PrepareOptions prepare;  // splat prepare, and splat train on photos or a video

  // Rejects incompatible combinations, naming both keys. Throws splat::Error.
  void validate() const;
  void validate_backend() const;   // part of validate(): the execution modes
  void validate_fastgs() const;    // part of validate(): what densify.strategy = "fastgs" needs
  void validate_pose_opt() const;  // part of validate(): what train.pose_opt = true needs
  // The resolved config as TOML (every key, in table order).
  std::string to_toml() const;
};

// Applies a TOML file on top of `cfg`. Unknown section/key, wrong type or out-of-range value:
// splat::Error naming the key, the file and the line.
void apply_config_file(Config& cfg, const std::string& path);
// Applies TOML text (used for checkpoints and tests); `origin` names it in errors, with the line
// unless the text was made by a program (`has_lines` false: the Python module's config dict).
void apply_config_text(Config& cfg,
                       std::string_view toml,
                       const std::string& origin,
                       bool has_lines = true);
// Applies one "section.key=value" override (value in TOML syntax; bare words are strings).
void apply_override(Config& cfg, const std::string& assignment);
// Config{} as TOML with a comment per key (what it does, its range or valid names): the body of
// configs/default.toml, and what a CLI listing of the keys can print.
std::string config_reference();

}  // namespace splat
