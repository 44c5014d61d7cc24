#pragma once
// The training loop, backend-agnostic: pick a view, step, schedule, report, save.
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/rng.h"
#include "distributed/communicator.h"
#include "engine/backend.h"
#include "io/checkpoint.h"
#include "io/dataset.h"
#include "io/run_dir.h"
#include "train/auto_config.h"
#include "train/config.h"
#include "train/densify.h"
#include "train/observer.h"
#include "train/resolution.h"

namespace splat {

class History;

// cc_psnr: the PSNR after the best affine colour map (train/metrics.h color_corrected_psnr).
struct ViewMetrics {
  std::string name;
  double psnr = 0, ssim = 0, cc_psnr = 0;
};

// What the progress line shows after a step (Trainer::set_progress_hook).
struct StepProgress {
  std::int64_t iteration = 0, total = 0;  // completed and planned iterations
  double loss = 0;                        // smoothed, as the progress line shows it
  std::size_t splats = 0;
};

struct EvalResult {
  std::vector<ViewMetrics> views;
  double mean_psnr = 0, mean_ssim = 0, mean_cc_psnr = 0;
  std::size_t blank_views = 0;  // views whose render is the background alone: no splat drawn
};

class Trainer {
 public:
  Trainer(const Trainer&) = delete;  // the densifier reads this trainer (views_)
  Trainer& operator=(const Trainer&) = delete;
  // `data`, `backend` and `comm` must outlive the trainer. With several ranks every rank makes a
  // trainer with the same config and data; each step, rank r renders views
  // [r B / R, (r + 1) B / R) of the step's B views (train.batch_size), which all ranks draw from
  // the same view order. The config is checked to be the same on every rank.
  Trainer(Config cfg,
          const Dataset& data,
          Backend& backend,
          dist::Communicator& comm = dist::single_process());

  void initialize();  // a fresh model from model.init
  // A fresh run from a model's splats, its SH padded with zeros or cut to model.sh_degree.
  void initialize_from(Gaussians params);
  // Continue exactly where the checkpoint stopped. With train.appearance = affine and a checkpoint
  // without transforms they start at the identity; transforms in a checkpoint that
  // train.appearance = none would drop are an error; train.pose_opt and the pose corrections
  // likewise. So is a checkpoint of other training images (check_same_images). An MCMC cap
  // (densify.cap_max) below its splat count warns.
  void resume(const Checkpoint& ckpt);
  // Trains up to train.iterations, or until SIGINT/SIGTERM (interrupt.h) asks it to stop after the
  // step in progress (then interrupted() is true). Into `out`, if not null (rank 0 only; rank 0
  // alone shows progress): metrics.jsonl (history.h) with the evaluations of train.eval_every,
  // checkpoint_<step>.ckpt every output.checkpoint_every steps and checkpoint.ckpt every
  // output.checkpoint_minutes. Several ranks compare model digests every train.digest_every steps
  // and at the end, and agree on a stop every kStopCheckEvery steps. With train.time_budget the
  // iterations and step schedules are re-planned as it goes (time_budget.h).
  void train(RunDir* out);
  bool interrupted() const { return interrupted_; }
  // Model snapshots during train() (the live viewer): on rank 0, after every step, `due` gets the
  // completed iteration count; when it returns true, `take` gets the parameters at that step
  // boundary, with the backend's queue drained first. The time it takes counts as training time.
  using SnapshotDue = std::function<bool(std::int64_t iteration)>;
  using SnapshotTake = std::function<void(std::int64_t iteration, Gaussians params)>;
  void set_snapshots(SnapshotDue due, SnapshotTake take) {
    snapshot_due_ = std::move(due);
    snapshot_take_ = std::move(take);
  }
  // Called on rank 0 after every train.log_every steps and after the last with what the progress
  // line shows (the Python module's progress callback).
  void set_progress_hook(std::function<void(const StepProgress&)> hook) {
    progress_hook_ = std::move(hook);
  }
  // What resolve_auto() chose for this run's config (printed at the start by the caller).
  const std::vector<AutoChoice>& auto_choices() const { return auto_choices_; }
  // The subject's share of the training pixels (training_coverage): MCMC's regularizer scale.
  double coverage() const { return coverage_; }
  // The state to resume from; throws splat::Error when training has diverged (check_finite()).
  Checkpoint checkpoint() const;
  // Names this run in every output it writes (checkpoint, model.ply, metrics.json), so that a
  // directory holding files of two runs, or of one interrupted final write, is recognised. Fresh
  // for a new run; a resumed run keeps its checkpoint's.
  const std::string& run_id() const { return run_id_; }

  std::int64_t iteration() const { return iteration_; }
  double train_seconds() const { return train_seconds_; }
  const std::vector<double>& loss_history() const { return loss_history_; }
  const Config& config() const { return cfg_; }

 private:
  int next_view();
  StepSettings settings_at(std::int64_t step) const;
  void start_from(TrainState state);  // the same on every rank: rank 0's
  void start_fresh(Gaussians params, const std::string& source);  // zero moments, iteration 0
  void check_ranks_identical(const std::string& when);
  bool stop_requested();
  EvalResult evaluate_now();
  // The observers of train(), in the order they are told: what the run shows, logs, checks and
  // writes (observer.h).
  std::vector<std::unique_ptr<TrainObserver>> observers(RunDir* out, History& history);
  StepInfo step_info() const;
  // Takes the losses the backend has (all of them when `wait`) and tells the observers.
  void collect_losses(bool wait);
  // Training seconds of the run so far, without the time spent off the clock.
  double elapsed() const;
  // Runs `work` on a drained queue, off the training clock.
  void off_the_clock(const std::function<void()>& work);
  void check_finite() const;
  void update_filter3d();  // model.antialiased: from the training cameras
  // train.coarse_factor: gives the backend the training images of this factor (1: full size).
  void use_resolution(int factor);
  const TrainingLevel* level(int factor) const;   // null for full size
  const Camera& training_camera(int view) const;  // at the factor in use
  // train.appearance: the checkpoint's transforms, the identity where it has none.
  AppearanceState resumed_appearance(const Checkpoint& ckpt) const;
  // train.pose_opt: the checkpoint's pose corrections, the identity where it has none.
  PoseState resumed_pose(const Checkpoint& ckpt) const;

  static constexpr std::int64_t kStopCheckEvery = 50;
  // Parameters are checked for NaN, inf and values beyond limits_ this often (and before every
  // checkpoint): a diverged run stops within this many steps of going wrong, not at the end. One
  // pass over the model. The first kEarlyChecks steps are each checked.
  static constexpr std::int64_t kFiniteCheckEvery = 100;
  static constexpr std::int64_t kEarlyChecks = 10;
  // model.antialiased: the 3D filter is recomputed this often besides every refine tick (the
  // Mip-Splatting paper's interval).
  static constexpr std::int64_t kFilter3dEvery = 100;

  Config cfg_;
  std::vector<AutoChoice> auto_choices_;
  const Dataset& data_;
  Backend& backend_;
  dist::Communicator& comm_;
  std::unique_ptr<Densifier> densifier_;
  TrainingViews views_;  // for the densifier; its functions read this trainer
  double scene_extent_ = 1.0;
  double coverage_ = 1.0;       // training_coverage of the training views
  DivergenceLimits limits_;     // set with the starting state
  std::int64_t iteration_ = 0;  // completed iterations
  Rng rng_;
  std::vector<std::int32_t> view_order_;  // this epoch's random permutation of training views
  std::int64_t view_pos_ = 0;
  std::vector<double> loss_history_;
  // During train(): the observers, the step of loss_history_[0], and the clock.
  std::vector<std::unique_ptr<TrainObserver>> observers_;
  std::int64_t loss_base_ = 0;
  std::chrono::steady_clock::time_point session_start_;
  double paused_ = 0;  // seconds of this session off the clock
  // train.coarse_factor: the images and cameras of every coarser factor, made once at the start
  // (data preparation, like the loader's downscale), and the factor the backend has.
  std::vector<TrainingLevel> levels_;
  int factor_in_use_ = 1;
  double train_seconds_ = 0;
  bool interrupted_ = false;
  std::string run_id_;
  SnapshotDue snapshot_due_;
  SnapshotTake snapshot_take_;
  std::function<void(const StepProgress&)> progress_hook_;
};

// Renders every view with the backend, PSNR and SSIM against its image; writes PNGs into
// render_dir when it is not empty.
EvalResult evaluate(Backend& backend,
                    const std::vector<View>& views,
                    const RasterSettings& rs,
                    const std::string& render_dir);

// Raster settings for rendering a finished model of the given config.
RasterSettings final_raster_settings(const Config& cfg);

// The settings of step `step` (0-based) of a run of `cfg`: its learning rates and SH degree, and
// what the densifier adds.
StepSettings step_settings(const Config& cfg,
                           double scene_extent,
                           std::int64_t step,
                           const Densifier& densifier);

}  // namespace splat
