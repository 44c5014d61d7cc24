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
#include "report/progress.h"
#include "train/init.h"
#include "train/interrupt.h"
#include "train/schedule.h"
#include "train/time_budget.h"

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
  comm_.set_timeout(cfg_.train.collective_timeout);
  if (comm_.size() > 1) {
    const std::string setup =
        cfg_.to_toml() + "\ntraining views " + std::to_string(data_.train.size());
    dist::expect_identical(comm_, dist::digest(setup),
                           "the resolved config (and training view count)");
  }
  backend_.set_communicator(comm_);
  scene_extent_ = scene_extent(data_);
  densifier_ = make_densifier(cfg_, scene_extent_);
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
  if (cfg_.densify.strategy == DensifyStrategy::Mcmc &&
      params.size() > std::size_t(cfg_.densify.cap_max))
    throw Error("densify.cap_max = " + std::to_string(cfg_.densify.cap_max) + " is below the " +
                std::to_string(params.size()) + " initial splats of " + source +
                " (MCMC never removes splats)");
  TrainState st;
  st.params = std::move(params);
  st.adam_m = zeros_like(st.params);
  st.adam_v = zeros_like(st.params);
  if (cfg_.train.appearance == AppearanceKind::Affine)
    st.appearance = AppearanceState::identity(data_.train.size());
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
  if (cfg_.densify.strategy == DensifyStrategy::Mcmc && comm_.rank() == 0 &&
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
  // The tick sums every rank's statistics: rank 0 carries the saved sums, the others start at zero.
  if (comm_.rank() == 0) {
    st.adc.grad2d = ckpt.adc_grad2d;
    st.adc.count = ckpt.adc_count;
  }
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
  throw Error("training diverged: " + group + " holds NaN, inf or " + limits_text(group, limits_) +
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
  // ADC's statistics since the last tick make a resume between ticks exact. With several ranks
  // each holds its own partial sums (the tick all-reduces them) and only rank 0 writes, so those
  // runs resume with fresh statistics, as before.
  if (cfg_.densify.strategy == DensifyStrategy::Adc && comm_.size() == 1) {
    c.adc_grad2d = st.adc.grad2d;
    c.adc_count = st.adc.count;
  }
  c.filter3d = st.filter3d;
  c.appearance = st.appearance.params;
  c.appearance_m = st.appearance.m;
  c.appearance_v = st.appearance.v;
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

void Trainer::train(RunDir* out) {
  std::int64_t total = cfg_.train.iterations;  // a time budget re-plans it
  const std::int64_t started = iteration_;
  const bool leader = comm_.rank() == 0;  // shows progress and writes
  const bool writes = leader && out != nullptr;
  Progress progress(iteration_, total, cfg_.train.log_every);
  History history = writes ? History(out->claim("metrics.jsonl"), iteration_) : History();
  Smoothed smoothed;
  const std::int64_t base =
      iteration_ - std::int64_t(loss_history_.size());  // the step of history entry 0
  std::vector<StepResult> finished;
  double last_loss = 0;
  const auto start = std::chrono::steady_clock::now();
  double paused = 0;  // seconds spent on checkpoints and evaluations, not training
  auto elapsed = [&] {
    return train_seconds_ +
           std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() - paused;
  };
  // History records continue a resumed run's clock; `logged` is the last record's step and time.
  auto clock = [&] { return history.resumed_elapsed() + elapsed(); };
  std::pair<std::int64_t, double> logged{iteration_, clock()};
  // Losses arrive when the backend has them (a GPU queues steps); the history stays in order.
  auto collect = [&](bool wait) {
    finished.clear();
    backend_.collect_losses(finished, wait);
    for (const StepResult& r : finished) {
      if (!std::isfinite(r.loss))
        throw Error("training diverged: loss is " + std::to_string(r.loss) + " at iteration " +
                    std::to_string(base + std::int64_t(loss_history_.size()) + 1));
      loss_history_.push_back(r.loss);
      last_loss = r.loss;
      smoothed.add(r.loss);
      const std::int64_t done = base + std::int64_t(loss_history_.size());
      if (writes && cfg_.train.log_every > 0 && done % cfg_.train.log_every == 0) {
        const double now = clock();
        const double rate =
            now > logged.second ? double(done - logged.first) / (now - logged.second) : 0.0;
        history.add({{"step", done},
                     {"elapsed", now},
                     {"loss", r.loss},
                     {"loss_smoothed", smoothed.value()},
                     {"splats", backend_.num_splats()},
                     {"its_per_s", rate}});
        logged = {done, now};
      }
    }
  };
  // Work that is not training (checkpoints, evaluations) runs on a drained queue, off the clock.
  auto off_the_clock = [&](auto&& work) {
    const auto pause = std::chrono::steady_clock::now();
    collect(true);
    work();
    paused += std::chrono::duration<double>(std::chrono::steady_clock::now() - pause).count();
  };
  // This rank's share of every step's batch: positions [first, last) of the B views drawn.
  const std::int64_t batch = cfg_.train.batch_size, ranks = comm_.size(), rank = comm_.rank();
  const std::int64_t first = batch * rank / ranks, last = batch * (rank + 1) / ranks;
  std::vector<BatchView> mine(std::size_t(last - first));
  const std::int64_t digest_every = cfg_.train.digest_every;
  check_ranks_identical("at iteration " + std::to_string(iteration_));
  auto last_checkpoint = std::chrono::steady_clock::now();
  const auto checkpoint_period =
      std::chrono::duration<double>(60.0 * cfg_.output.checkpoint_minutes);
  const bool timed_checkpoints =
      writes && cfg_.output.save_checkpoint && cfg_.output.checkpoint_minutes > 0;
  std::optional<TimeBudget> budget;
  if (cfg_.train.time_budget > 0)
    budget.emplace(cfg_, cfg_.train.time_budget,
                   [extent = scene_extent_](const Config& c, std::int64_t done, std::size_t n) {
                     return make_densifier(c, extent)->projected_counts(done, c.train.iterations,
                                                                        n);
                   });
  std::int64_t noted_total = total;  // the plan last shown: a change over 10% is shown
  auto replan = [&](const Config& planned, const std::string& why) {
    cfg_ = planned;
    densifier_ = make_densifier(cfg_, scene_extent_);
    total = cfg_.train.iterations;
    progress.set_total(total);
    if (leader && std::abs(double(total - noted_total)) > 0.1 * double(noted_total))
      progress.note(why), noted_total = total;
  };
  // The resolution only rises: a time budget's re-plan can move coarse_until later.
  int factor = std::numeric_limits<int>::max();
  while (iteration_ < total) {
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
    if (tick && leader && cfg_.train.log_every > 0 && iteration_ % (cfg_.train.log_every * 10) == 0)
      progress.note("refine at " + std::to_string(iteration_) + ": " +
                    (cfg_.densify.strategy == DensifyStrategy::Adc
                         ? std::to_string(tick->cloned) + " cloned, " +
                               std::to_string(tick->split) + " split, " +
                               std::to_string(tick->pruned) + " pruned, "
                         : std::to_string(tick->dead) + " relocated, " +
                               std::to_string(tick->added) + " added, ") +
                    std::to_string(tick->count) + " splats");
    collect(false);
    const double shown_loss = smoothed.empty() ? last_loss : smoothed.value();
    if (leader)
      progress.update(iteration_, shown_loss, backend_.num_splats(), factor_in_use_, [&] {
        return Progress::Ahead{
            densifier_->projected_counts(iteration_, total, backend_.num_splats()),
            resolution_changes(cfg_.train, iteration_, total)};
      });
    const std::int64_t log_every = cfg_.train.log_every;
    if (leader && progress_hook_ &&
        ((log_every > 0 && iteration_ % log_every == 0) || iteration_ == total))
      progress_hook_({iteration_, total, shown_loss, backend_.num_splats()});
    if (budget) {
      char line[160];
      if (auto planned = budget->after_step(iteration_, backend_.num_splats(), elapsed(), factor)) {
        std::snprintf(line, sizeof line,
                      "time budget %.4g s: %lld iterations planned (%.3f of the recipe's steps)",
                      budget->seconds(), (long long)planned->train.iterations,
                      budget->compression());
        replan(*planned, line);
      }
      if (iteration_ < total && budget->spent(elapsed())) {
        Config stop_here = cfg_;
        stop_here.train.iterations = iteration_;
        std::snprintf(line, sizeof line, "time budget %.4g s spent: stopping at iteration %lld",
                      budget->seconds(), (long long)iteration_);
        noted_total = -1000000000;  // always shown
        replan(stop_here, line);
      }
    }
    // A learning rate far too large throws its group out of range in one step, and the next step
    // spreads NaN to every group: checked at once, the first group out is the one to blame.
    if (iteration_ - started <= kEarlyChecks || iteration_ % kFiniteCheckEvery == 0 ||
        iteration_ == total)
      check_finite();
    if (leader && snapshot_due_ && snapshot_due_(iteration_)) {
      collect(true);
      // The viewer draws plain 3DGS: the 3D filter baked in, as in model.ply.
      snapshot_take_(iteration_, cfg_.model.antialiased
                                     ? filter3d::bake(backend_.params(), backend_.state().filter3d)
                                     : backend_.params());
    }
    if (digest_every > 0 && iteration_ % digest_every == 0)
      check_ranks_identical("at iteration " + std::to_string(iteration_));
    if (stop_requested()) {
      interrupted_ = true;
      break;
    }
    const std::int64_t every = cfg_.output.checkpoint_every;
    // Every rank pauses at these steps (a time budget's clocks stay alike); the leader writes.
    if (every > 0 && iteration_ % every == 0 && iteration_ < total && (writes || !leader)) {
      off_the_clock([&] {
        if (writes)
          write_checkpoint(out->claim("checkpoint_" + std::to_string(iteration_) + ".ckpt"),
                           checkpoint());
      });
    }
    if (timed_checkpoints && iteration_ < total &&
        std::chrono::steady_clock::now() - last_checkpoint >= checkpoint_period) {
      off_the_clock([&] { write_checkpoint(out->claim("checkpoint.ckpt"), checkpoint()); });
      last_checkpoint = std::chrono::steady_clock::now();
    }
    const std::int64_t eval_every = cfg_.train.eval_every;
    if (writes && eval_every > 0 && iteration_ % eval_every == 0 && iteration_ < total &&
        !data_.test.empty()) {
      off_the_clock([&] {
        const EvalResult e = evaluate_now();
        history.add(
            {{"step", iteration_},
             {"elapsed", clock()},
             {"eval", {{"psnr", e.mean_psnr}, {"ssim", e.mean_ssim}, {"views", e.views.size()}}}});
        char line[128];
        std::snprintf(line, sizeof line,
                      "eval at %lld: PSNR %.3f dB, SSIM %.4f over %zu test views",
                      (long long)iteration_, e.mean_psnr, e.mean_ssim, e.views.size());
        progress.note(line);
      });
    }
  }
  collect(true);
  if (leader) progress.finish();
  if (!interrupted_ && digest_every > 0 && total % digest_every != 0)
    check_ranks_identical("at the end of training");
  train_seconds_ = elapsed();
  use_resolution(1);  // a run stopped early leaves the backend no images the trainer owns
}

}  // namespace splat
