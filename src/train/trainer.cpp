#include "train/trainer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <random>

#include "core/error.h"
#include "distributed/sync.h"
#include "engine/filter3d_host.h"
#include "io/model_file.h"
#include "report/history.h"
#include "train/budget_observer.h"
#include "train/checkpoints.h"
#include "train/init.h"
#include "train/interrupt.h"
#include "train/loss_log.h"
#include "train/periodic_eval.h"
#include "train/run_checks.h"
#include "train/schedule.h"
#include "train/show_progress.h"
#include "train/snapshots.h"

namespace splat {

namespace {
std::string new_run_id() {
  std::random_device device;
  const std::uint64_t bits =
      (std::uint64_t(device()) << 32 | device()) ^
      std::uint64_t(std::chrono::system_clock::now().time_since_epoch().count());
  char id[17];
  std::snprintf(id, sizeof id, "%016llx", (unsigned long long)bits);
  return id;
}

// The learning rate to lower when a group diverges.
std::string lr_key_of(const std::string& group) {
  if (group == "raw_opacity") return "train.lr_opacity";
  if (group == "sh") return "train.lr_sh0 / train.lr_shN";
  if (group == "appearance") return "train.lr_appearance";
  if (group == "pose") return "train.lr_pose";
  return "train.lr_" + group;
}

// The divergence limits of a run: kReach times as far from the origin as the farthest training
// camera or starting splat (and the scene extent): no sane step takes a splat there.
DivergenceLimits divergence_limits(const Dataset& data, const Gaussians& start, double extent) {
  constexpr double kReach = 1e4;
  double far = extent;
  for (const View& v : data.train) {
    const Vec3<double> c = v.camera.center();
    far = std::max({far, std::abs(c.x), std::abs(c.y), std::abs(c.z)});
  }
  for (const float x : start.means) far = std::max(far, double(std::abs(x)));
  return {float(std::min(kReach * far, double(kMaxParamMagnitude)))};
}

// What the values of a diverged group should have stayed within.
std::string limits_text(const std::string& group, const DivergenceLimits& limits) {
  char bound[32];
  std::snprintf(bound, sizeof bound, "%.3g", double(limits.range(group).second));
  if (group == "means")
    return "a coordinate beyond +-" + std::string(bound) +
           " (10^4 times the farthest camera or starting splat)";
  if (group == "log_scales")
    return "a log-scale above " + std::string(bound) + " (a splat 10^4 times the scene's size)";
  return "a value beyond +-" + std::string(bound);
}

Gaussians zeros_like(const Gaussians& g) {
  Gaussians z = g;
  z.for_each_group([](const char*, std::vector<float>& v) { std::fill(v.begin(), v.end(), 0.0f); });
  return z;
}
}  // namespace

RasterSettings final_raster_settings(const Config& cfg) {
  RasterSettings rs;
  rs.sh_degree = int(cfg.model.sh_degree);
  for (int c = 0; c < 3; ++c) rs.background[c] = float(cfg.data.background[c]);
  rs.antialiased = cfg.model.antialiased;  // the 2D mip filter; the 3D filter is backend state
  return rs;
}

Trainer::Trainer(Config cfg, const Dataset& data, Backend& backend, dist::Communicator& comm)
    : cfg_(std::move(cfg)),
      auto_choices_(resolve_auto(cfg_, data)),
      data_(data),
      backend_(backend),
      comm_(comm),
      rng_(cfg_.train.seed) {
  if (data_.train.empty()) throw Error("dataset has no training views");
  const std::int64_t batch = cfg_.train.batch_size;
  if (batch > std::int64_t(data_.train.size()))
    throw Error("train.batch_size = " + std::to_string(batch) + " exceeds the " +
                std::to_string(data_.train.size()) + " training views");
  if (batch < comm_.size())
    throw Error("train.batch_size = " + std::to_string(batch) + " is smaller than the " +
                std::to_string(comm_.size()) +
                " ranks of this job (every rank renders at least one view per step)");
  if (cfg_.train.time_budget > 0 && comm_.size() > 1)
    throw Error(
        "train.time_budget plans from one process's measured steps; it cannot be used with " +
        std::to_string(comm_.size()) + " ranks");
  // A coarse_until at or past the last step (1e9, or a resume told to stop sooner than the run
  // was planned for) would leave every step, and the model, at a fraction of the resolution:
  // full resolution comes from half of the iterations on, as auto plans it.
  if (cfg_.train.coarse_factor > 1 && cfg_.train.coarse_until >= cfg_.train.iterations &&
      cfg_.train.iterations > 1) {
    const std::int64_t half = cfg_.train.iterations / 2;
    std::fprintf(stderr,
                 "warning: train.coarse_until = %lld is not before the last step "
                 "(train.iterations = %lld), so training would never reach full resolution; "
                 "full resolution from step %lld instead (half of the iterations)\n",
                 static_cast<long long>(cfg_.train.coarse_until),
                 static_cast<long long>(cfg_.train.iterations), static_cast<long long>(half));
    cfg_.train.coarse_until = half;
  }
  if (cfg_.train.pose_opt && comm_.size() > 1)
    throw Error("train.pose_opt = true trains in one process so far; this job has " +
                std::to_string(comm_.size()) + " ranks");
  if (cfg_.densify.strategy == "fastgs" && comm_.size() > 1)
    throw Error("densify.strategy = \"fastgs\" trains in one process so far; this job has " +
                std::to_string(comm_.size()) + " ranks");
  comm_.set_timeout(cfg_.train.collective_timeout);
  if (comm_.size() > 1) {
    const std::string setup =
        cfg_.to_toml() + "\ntraining views " + std::to_string(data_.train.size());
    dist::expect_identical(comm_, dist::digest(setup),
                           "the resolved config (and training view count)");
  }
  backend_.set_communicator(comm_);
  scene_extent_ = scene_extent(data_);
  coverage_ = training_coverage(data_.train);
  views_.count = data_.train.size();
  views_.camera = [this](int view) -> const Camera& { return training_camera(view); };
  views_.factor = [this] { return factor_in_use_; };
  views_.raster = [this](std::int64_t step) { return settings_at(step).raster; };
  densifier_ = make_densifier(cfg_, scene_extent_, &views_, coverage_);
  std::vector<const Image8*> images;
  for (const View& v : data_.train) images.push_back(&v.image);
  backend_.set_images(images);
  for (int f = int(cfg_.train.coarse_factor); f > 1; f /= 2)
    levels_.push_back(training_level(data_.train, f, "train.coarse_factor"));
}

const TrainingLevel* Trainer::level(int factor) const {
  for (const TrainingLevel& l : levels_)
    if (l.factor == factor) return &l;
  if (factor > 1)
    throw Error("train.coarse_factor: no training images at factor " + std::to_string(factor));
  return nullptr;  // full size: the dataset's own
}

void Trainer::use_resolution(int factor) {
  if (factor == factor_in_use_) return;
  const TrainingLevel* l = level(factor);
  std::vector<const Image8*> images;
  for (std::size_t i = 0; i < data_.train.size(); ++i)
    images.push_back(l ? &l->images[i] : &data_.train[i].image);
  backend_.set_images(images);  // the backend drains first: no queued step reads the old ones
  factor_in_use_ = factor;
}

const Camera& Trainer::training_camera(int view) const {
  const TrainingLevel* l = level(factor_in_use_);
  return l ? l->cameras[std::size_t(view)] : data_.train[std::size_t(view)].camera;
}

void Trainer::initialize() {
  const Gaussians params = initialize_model(cfg_.model, data_, cfg_.train.seed);
  // model.init = auto decides the count only now (validate() checks explicit random inits).
  start_fresh(params, "model.init = \"" + std::string(to_string(cfg_.model.init)) + "\"");
}

void Trainer::initialize_from(Gaussians params) {
  start_fresh(with_sh_degree(params, int(cfg_.model.sh_degree)), "the model to initialize from");
}

void Trainer::start_fresh(Gaussians params, const std::string& source) {
  if (cfg_.densify.strategy == "mcmc" && params.size() > std::size_t(cfg_.densify.cap_max))
    throw Error("densify.cap_max = " + std::to_string(cfg_.densify.cap_max) + " is below the " +
                std::to_string(params.size()) + " initial splats of " + source +
                " (MCMC never removes splats)");
  TrainState st;
  st.params = std::move(params);
  st.adam_m = zeros_like(st.params);
  st.adam_v = zeros_like(st.params);
  if (cfg_.train.appearance == AppearanceKind::Affine)
    st.appearance = AppearanceState::identity(data_.train.size());
  if (cfg_.train.pose_opt) st.pose = PoseState::identity(data_.train.size());
  start_from(std::move(st));
  iteration_ = 0;
  run_id_ = new_run_id();
}

void Trainer::start_from(TrainState st) {
  if (!cfg_.model.antialiased) st.filter3d.clear();
  dist::broadcast_state(comm_, st);
  limits_ = divergence_limits(data_, st.params, scene_extent_);
  backend_.set_state(st);
  // A fresh model, or a checkpoint saved without the filter: compute it now.
  if (cfg_.model.antialiased && st.filter3d.size() != st.params.size()) update_filter3d();
}

void Trainer::update_filter3d() {
  std::vector<Camera> cameras;
  cameras.reserve(data_.train.size());
  for (const View& v : data_.train) cameras.push_back(v.camera);
  backend_.update_filter3d(cameras);
}

void Trainer::check_ranks_identical(const std::string& when) {
  if (comm_.size() == 1) return;
  // The model and what picks the next views: iteration, RNG state, epoch order and position.
  std::vector<std::uint64_t> schedule = rng_.save();
  schedule.push_back(std::uint64_t(iteration_));
  schedule.push_back(std::uint64_t(view_pos_));
  for (const std::int32_t v : view_order_) schedule.push_back(std::uint64_t(v));
  const std::uint64_t d =
      backend_.state_digest() ^
      dist::digest(std::string_view(reinterpret_cast<const char*>(schedule.data()),
                                    schedule.size() * sizeof(std::uint64_t)));
  dist::expect_identical(comm_, d, "the model (parameters, Adam state) or view schedule " + when);
}

void Trainer::resume(const Checkpoint& ckpt) {
  if (ckpt.params.sh_degree != cfg_.model.sh_degree)
    throw Error("checkpoint has SH degree " + std::to_string(ckpt.params.sh_degree) +
                " but model.sh_degree = " + std::to_string(cfg_.model.sh_degree));
  if (ckpt.iteration > cfg_.train.iterations)
    throw Error("the checkpoint is at iteration " + std::to_string(ckpt.iteration) +
                ", past train.iterations = " + std::to_string(cfg_.train.iterations) +
                "; set train.iterations above " + std::to_string(ckpt.iteration) + " to train on");
  const std::size_t views = data_.train.size();
  const bool order_fits =
      (ckpt.view_order.empty() || ckpt.view_order.size() == views) &&
      std::all_of(ckpt.view_order.begin(), ckpt.view_order.end(),
                  [&](std::int32_t v) { return v >= 0 && std::size_t(v) < views; });
  if (!order_fits)
    throw Error("the checkpoint was trained on " + std::to_string(ckpt.view_order.size()) +
                " training views, this dataset has " + std::to_string(views) +
                " (another dataset, or other data.holdout_every / data.max_train_views)");
  try {
    check_same_images(ckpt.train_images, train_images_of(data_.train));
  } catch (const Error& e) {
    throw Error(std::string(e.what()) +
                "; to train the checkpoint's model on these images, start a new run with "
                "--init-from");
  }
  // MCMC never removes splats: above the cap the model trains on at its size and never grows.
  if (cfg_.densify.strategy == "mcmc" && comm_.rank() == 0 &&
      ckpt.params.size() > std::size_t(cfg_.densify.cap_max))
    std::fprintf(stderr,
                 "warning: densify.cap_max = %lld is below the checkpoint's %zu splats: MCMC "
                 "removes none, so the model stays at %zu splats and does not grow (raise "
                 "densify.cap_max to let it grow)\n",
                 (long long)cfg_.densify.cap_max, ckpt.params.size(), ckpt.params.size());
  TrainState st;
  st.params = ckpt.params;
  st.adam_m = ckpt.adam_m;
  st.adam_v = ckpt.adam_v;
  st.adam_step = ckpt.iteration;
  st.filter3d = ckpt.filter3d;
  st.appearance = resumed_appearance(ckpt);
  st.pose = resumed_pose(ckpt);
  // The tick sums every rank's statistics: rank 0 carries the saved sums, the others start at zero
  // (with the same arrays in use, so that every rank all-reduces the same ones).
  st.adc.grad2d = ckpt.adc_grad2d;
  st.adc.count = ckpt.adc_count;
  st.adc.grad2d_abs = ckpt.adc_grad2d_abs;
  if (comm_.rank() != 0) st.adc.reset(st.adc.size());
  start_from(std::move(st));
  iteration_ = ckpt.iteration;
  rng_.restore(ckpt.rng_state);
  view_order_ = ckpt.view_order;
  view_pos_ = ckpt.view_pos;
  run_id_ = ckpt.run_id.empty() ? new_run_id() : ckpt.run_id;  // files before run ids start one
}

AppearanceState Trainer::resumed_appearance(const Checkpoint& ckpt) const {
  const bool saved = !ckpt.appearance.empty();
  if (cfg_.train.appearance == AppearanceKind::None) {
    if (saved)
      throw Error(
          "the checkpoint holds per-image appearance transforms, but train.appearance = "
          "\"none\" (resume with train.appearance = \"affine\")");
    return {};
  }
  // A checkpoint saved without them (appearance = none, or a version before 5) starts them at
  // the identity.
  if (!saved) return AppearanceState::identity(data_.train.size());
  AppearanceState a{ckpt.appearance, ckpt.appearance_m, ckpt.appearance_v};
  if (a.images() != data_.train.size())
    throw Error("the checkpoint holds appearance transforms for " + std::to_string(a.images()) +
                " training images, this dataset has " + std::to_string(data_.train.size()));
  return a;
}

PoseState Trainer::resumed_pose(const Checkpoint& ckpt) const {
  const bool saved = !ckpt.pose.empty();
  if (!cfg_.train.pose_opt) {
    if (saved)
      throw Error(
          "the checkpoint holds per-image pose corrections, but train.pose_opt = false (resume "
          "with train.pose_opt = true)");
    return {};
  }
  // A checkpoint saved without them (pose_opt off, or a version before 8) starts them at the
  // identity.
  if (!saved) return PoseState::identity(data_.train.size());
  PoseState p{ckpt.pose, ckpt.pose_m, ckpt.pose_v, ckpt.pose_steps};
  if (p.images() != data_.train.size())
    throw Error("the checkpoint holds pose corrections for " + std::to_string(p.images()) +
                " training images, this dataset has " + std::to_string(data_.train.size()));
  return p;
}

void Trainer::check_finite() const {
  std::vector<std::string> groups = backend_.diverged_groups(limits_);
  if (groups.empty()) return;
  // MCMC moves the means by noise that the scales, rotations and opacities shape: means out of
  // range beside another group are that group's doing.
  if (groups.size() > 1 && groups.front() == "means")
    std::rotate(groups.begin(), groups.begin() + 1, groups.end());
  const std::string& group = groups.front();
  std::string also;
  for (std::size_t i = 1; i < groups.size(); ++i) also += (i > 1 ? ", " : "") + groups[i];
  throw Error("training diverged: " + group + " holds NaN, inf or, in more than 1 in " +
              std::to_string(kStrayShare) + " values, " + limits_text(group, limits_) +
              " at iteration " + std::to_string(iteration_) +
              (also.empty() ? "" : " (" + also + " too)") +
              "; the check runs after each of the first " + std::to_string(kEarlyChecks) +
              " steps, then every " + std::to_string(kFiniteCheckEvery) + ". Lower " +
              lr_key_of(group) + ", or resume from an earlier checkpoint");
}

Checkpoint Trainer::checkpoint() const {
  check_finite();
  const TrainState st = backend_.state();
  Checkpoint c;
  c.iteration = iteration_;
  c.params = st.params;
  c.adam_m = st.adam_m;
  c.adam_v = st.adam_v;
  c.rng_state = rng_.save();
  c.view_order = view_order_;
  c.view_pos = view_pos_;
  c.config_toml = cfg_.to_toml();
  c.run_id = run_id_;
  // ADC's statistics since the last tick (ADC's and FastGS's ticks read them, and MCMC's with
  // mcmc_grad_power) make a resume between ticks exact. With several ranks each holds its own
  // partial sums (the tick all-reduces them) and only rank 0 writes, so those runs resume with
  // fresh statistics, as before.
  const DensifyConfig& d = cfg_.densify;
  const bool statistics = d.strategy == "adc" || d.strategy == "fastgs" ||
                          (d.strategy == "mcmc" && d.mcmc_grad_power > 0);
  if (statistics && comm_.size() == 1) {
    c.adc_grad2d = st.adc.grad2d;
    c.adc_count = st.adc.count;
    c.adc_grad2d_abs = st.adc.grad2d_abs;
  }
  c.filter3d = st.filter3d;
  c.appearance = st.appearance.params;
  c.appearance_m = st.appearance.m;
  c.appearance_v = st.appearance.v;
  c.pose = st.pose.params;
  c.pose_m = st.pose.m;
  c.pose_v = st.pose.v;
  c.pose_steps = st.pose.steps;
  c.train_images = train_images_of(data_.train);
  return c;
}

// Views are visited in a fresh random order each epoch, as 3DGS does.
int Trainer::next_view() {
  if (view_pos_ >= std::int64_t(view_order_.size())) {
    const int n = int(data_.train.size());
    view_order_.resize(n);
    for (int i = 0; i < n; ++i) view_order_[i] = i;
    for (int i = n - 1; i > 0; --i)
      std::swap(view_order_[i], view_order_[rng_.below(std::uint32_t(i + 1))]);
    view_pos_ = 0;
  }
  return view_order_[view_pos_++];
}

StepSettings step_settings(const Config& cfg,
                           double scene_extent,
                           std::int64_t step,
                           const Densifier& densifier) {
  StepSettings s;
  s.raster = final_raster_settings(cfg);
  s.raster.sh_degree =
      active_sh_degree(step, cfg.train.sh_increase_every, int(cfg.model.sh_degree));
  s.loss = cfg.train.loss;
  s.ssim_lambda = cfg.train.ssim_lambda;
  s.lr = learning_rates(cfg.train, scene_extent, step);
  s.sparse_sh_adam = cfg.train.sparse_sh_adam;
  s.appearance_reg = cfg.train.appearance_reg;
  s.pose_reg = cfg.train.pose_opt ? cfg.train.pose_reg : 0.0;
  s.batch_size = int(cfg.train.batch_size);
  densifier.step_settings(step, s);
  return s;
}

StepSettings Trainer::settings_at(std::int64_t step) const {
  return step_settings(cfg_, scene_extent_, step, *densifier_);
}

bool Trainer::stop_requested() {
  if (comm_.size() == 1) return interrupt_signal() != 0;
  // Every rank stops after the same step: they agree at fixed steps.
  if (iteration_ % kStopCheckEvery != 0) return false;
  const auto signals =
      comm_.allgather(std::uint64_t(interrupt_signal()), "stop request (SIGINT/SIGTERM)");
  return std::any_of(signals.begin(), signals.end(), [](std::uint64_t s) { return s != 0; });
}

EvalResult Trainer::evaluate_now() {
  RasterSettings rs = settings_at(iteration_).raster;
  return evaluate(backend_, data_.test, rs, "");
}

double Trainer::elapsed() const {
  return train_seconds_ +
         std::chrono::duration<double>(std::chrono::steady_clock::now() - session_start_).count() -
         paused_;
}

void Trainer::off_the_clock(const std::function<void()>& work) {
  const auto pause = std::chrono::steady_clock::now();
  collect_losses(true);
  work();
  paused_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - pause).count();
}

// Losses arrive when the backend has them (a GPU queues steps); the observers get them in order.
void Trainer::collect_losses(bool wait) {
  std::vector<StepResult> finished;
  backend_.collect_losses(finished, wait);
  for (const StepResult& r : finished) {
    const std::int64_t step = loss_base_ + std::int64_t(loss_history_.size()) + 1;
    if (!std::isfinite(r.loss))
      throw Error("training diverged: loss is " + std::to_string(r.loss) + " at iteration " +
                  std::to_string(step));
    loss_history_.push_back(r.loss);
    for (const auto& o : observers_) o->on_loss(step, r.loss);
  }
}

StepInfo Trainer::step_info() const {
  return {iteration_, cfg_.train.iterations, backend_.num_splats(), factor_in_use_};
}

std::vector<std::unique_ptr<TrainObserver>> Trainer::observers(RunDir* out, History& history) {
  const bool leader = comm_.rank() == 0;  // shows progress and writes
  const bool writes = leader && out != nullptr;
  // History records continue a resumed run's clock.
  auto clock = [this, &history] { return history.resumed_elapsed() + elapsed(); };
  std::vector<std::unique_ptr<TrainObserver>> list;
  ShowProgress* progress = nullptr;
  if (leader) {
    auto shown = std::make_unique<ShowProgress>(
        iteration_, cfg_.train.iterations, cfg_.train.log_every, cfg_.densify.strategy,
        [this](std::int64_t done, std::int64_t total, std::size_t splats) {
          return Progress::Ahead{densifier_->projected_counts(done, total, splats),
                                 resolution_changes(cfg_.train, done, total)};
        },
        progress_hook_);
    progress = shown.get();
    list.push_back(std::move(shown));
  }
  auto note = [progress](const std::string& line) {
    if (progress) progress->note(line);
  };
  if (writes)
    list.push_back(std::make_unique<LossLog>(history, iteration_, cfg_.train.log_every, clock,
                                             [this] { return backend_.num_splats(); }));
  if (cfg_.train.time_budget > 0)
    list.push_back(std::make_unique<BudgetObserver>(
        cfg_,
        [extent = scene_extent_](const Config& c, std::int64_t done, std::size_t n) {
          return make_densifier(c, extent)->projected_counts(done, c.train.iterations, n);
        },
        [this] { return elapsed(); },
        [this](const Config& planned) {
          cfg_ = planned;
          densifier_ = make_densifier(cfg_, scene_extent_, &views_, coverage_);
        },
        note));
  list.push_back(std::make_unique<DivergenceChecks>(iteration_, kEarlyChecks, kFiniteCheckEvery,
                                                    [this] { check_finite(); }));
  if (leader && snapshot_due_)
    list.push_back(std::make_unique<Snapshots>(
        snapshot_due_, snapshot_take_, [this] { collect_losses(true); },
        [this] {
          // The viewer draws plain 3DGS: the 3D filter baked in, as in model.ply.
          return cfg_.model.antialiased
                     ? filter3d::bake(backend_.params(), backend_.state().filter3d)
                     : backend_.params();
        }));
  list.push_back(std::make_unique<DigestChecks>(
      cfg_.train.digest_every, [this](const std::string& when) { check_ranks_identical(when); }));
  // Every rank pauses at these steps (a time budget's clocks stay alike); the leader writes.
  if (writes || !leader)
    list.push_back(std::make_unique<StepCheckpoints>(
        cfg_.output.checkpoint_every,
        writes ? std::function<void(std::int64_t)>([this, out](std::int64_t step) {
          write_checkpoint(out->claim("checkpoint_" + std::to_string(step) + ".ckpt"),
                           checkpoint());
        })
               : nullptr));
  if (writes && cfg_.output.save_checkpoint && cfg_.output.checkpoint_minutes > 0)
    list.push_back(std::make_unique<TimedCheckpoints>(cfg_.output.checkpoint_minutes, [this, out] {
      write_checkpoint(out->claim("checkpoint.ckpt"), checkpoint());
    }));
  if (writes && cfg_.train.eval_every > 0 && !data_.test.empty())
    list.push_back(std::make_unique<PeriodicEval>(
        cfg_.train.eval_every, [this] { return evaluate_now(); }, history, clock, note));
  return list;
}

void Trainer::train(RunDir* out) {
  const bool writes = comm_.rank() == 0 && out != nullptr;
  History history = writes ? History(out->claim("metrics.jsonl"), iteration_) : History();
  session_start_ = std::chrono::steady_clock::now();
  paused_ = 0;
  loss_base_ = iteration_ - std::int64_t(loss_history_.size());
  observers_ = observers(out, history);
  // This rank's share of every step's batch: positions [first, last) of the B views drawn.
  const std::int64_t batch = cfg_.train.batch_size, ranks = comm_.size(), rank = comm_.rank();
  const std::int64_t first = batch * rank / ranks, last = batch * (rank + 1) / ranks;
  std::vector<BatchView> mine(std::size_t(last - first));
  check_ranks_identical("at iteration " + std::to_string(iteration_));
  // The resolution only rises: a time budget's re-plan can move coarse_until later.
  int factor = std::numeric_limits<int>::max();
  while (iteration_ < cfg_.train.iterations) {
    factor = std::min(factor, resolution_factor(cfg_.train, iteration_));
    use_resolution(factor);
    for (std::int64_t j = 0; j < batch; ++j) {
      const int view = next_view();
      if (j >= first && j < last) mine[std::size_t(j - first)] = {&training_camera(view), view};
    }
    backend_.step(mine, settings_at(iteration_));
    ++iteration_;
    const auto tick = densifier_->after_step(iteration_, backend_);
    // Mip-Splatting recomputes the 3D filter whenever the splats change (a refine tick) and every
    // kFilter3dEvery steps, as the means move.
    if (cfg_.model.antialiased && (tick || iteration_ % kFilter3dEvery == 0)) update_filter3d();
    if (tick)
      for (const auto& o : observers_) o->on_refine(iteration_, *tick);
    collect_losses(false);
    for (const auto& o : observers_) o->on_step(step_info());
    if (stop_requested()) {
      interrupted_ = true;
      break;
    }
    for (const auto& o : observers_)
      if (o->due(step_info())) off_the_clock([&] { o->on_due(step_info()); });
  }
  collect_losses(true);
  for (const auto& o : observers_) o->on_end(step_info(), interrupted_);
  observers_.clear();
  train_seconds_ = elapsed();
  use_resolution(1);  // a run stopped early leaves the backend no images the trainer owns
}

}  // namespace splat
