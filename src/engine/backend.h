#pragma once
// The one interface between the trainer and a compute backend. The backend owns the model, the
// optimizer state and the training images (on the GPU for cuda), and runs a whole training step:
// render, loss, backward, Adam. The trainer never knows which backend it drives.
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/camera.h"
#include "core/finite.h"
#include "core/gaussians.h"
#include "core/image.h"
#include "engine/appearance.h"
#include "engine/loss.h"
#include "engine/pose.h"
#include "engine/refine.h"
#include "engine/settings.h"

namespace splat::dist {
class Communicator;
}

namespace splat {

// Parameters and Adam moments: what a checkpoint needs from the backend.
namespace adc {
// ADC's running statistics between refine ticks (gsplat's grad2d and count), one entry per splat.
struct Stats {
  std::vector<float> grad2d;        // [N] sum over steps of |d loss / d mean2d| in half-image units
  std::vector<std::int32_t> count;  // [N] steps in which the splat was visible (radii > 0)
  // [N] sum over steps of AbsGS's statistic (StepPlan::accumulate_grad2d_abs), or empty: no step
  // since set_state accumulated it. A reset keeps it in use.
  std::vector<float> grad2d_abs;
  std::size_t size() const { return count.size(); }
  void reset(std::size_t n) {
    grad2d.assign(n, 0.0f);
    count.assign(n, 0);
    if (!grad2d_abs.empty()) grad2d_abs.assign(n, 0.0f);
  }
};
}  // namespace adc

struct TrainState {
  Gaussians params;
  Gaussians adam_m;  // first moments, shapes of params
  Gaussians adam_v;  // second moments
  std::int64_t adam_step = 0;
  // ADC statistics since the last refine tick, so that a resume between ticks is exact; empty
  // when the backend gathers none (MCMC, or no ADC step since the last tick or set_state).
  adc::Stats adc;
  // Mip-Splatting's 3D filter variance per splat (engine/filter3d.h), applied by every step and
  // render; empty: no 3D filter. Not a parameter: update_filter3d recomputes it.
  std::vector<float> filter3d;
  // train.appearance = affine: one colour transform per training image (set_images' order) with
  // its Adam moments (engine/appearance.h); empty: off. Steps apply and train them; render()
  // never applies them.
  AppearanceState appearance;
  // train.pose_opt: one camera pose correction per training image (set_images' order) with its
  // Adam state (engine/pose.h); empty: off. Steps apply and train them; render() never applies
  // them.
  PoseState pose;
};

// Throws unless s.grad2d_abs is empty (not in use) or holds one sum per entry of s.
void check_adc_stats(const adc::Stats& s, const std::string& backend);

// Throws unless `a` is empty or holds transforms and moments of one size, 12 floats each per
// image, and (once the backend has its training images, images > 0) one transform per image.
void check_appearance(const AppearanceState& a, std::size_t images, const std::string& backend);
// The second half: `transforms` (0: off) fit `images` (0: not set yet).
void check_appearance_images(std::size_t transforms,
                             std::size_t images,
                             const std::string& backend);

// Throws unless `p` is empty or holds corrections, moments and step counts of one size (9 floats
// and one count per image) and (once the backend has its training images, images > 0) one
// correction per image.
void check_pose(const PoseState& p, std::size_t images, const std::string& backend);
// The second half: `corrections` (0: off) fit `images` (0: not set yet).
void check_pose_images(std::size_t corrections, std::size_t images, const std::string& backend);

// The five groups of params, m and v side by side: f(param, m, v, floats per Gaussian).
template <class F>
void for_each_group3(TrainState& st, F&& f) {
  std::vector<std::vector<float>*> p, m, v;
  st.params.for_each_group([&](const char*, std::vector<float>& a) { p.push_back(&a); });
  st.adam_m.for_each_group([&](const char*, std::vector<float>& a) { m.push_back(&a); });
  st.adam_v.for_each_group([&](const char*, std::vector<float>& a) { v.push_back(&a); });
  const auto widths = st.params.widths();
  for (std::size_t g = 0; g < p.size(); ++g) f(*p[g], *m[g], *v[g], widths[g]);
}

struct LearningRates {
  double means = 0, log_scales = 0, quats = 0, opacity = 0, sh0 = 0, shN = 0;
  double appearance = 0;  // the per-image transforms (TrainState::appearance)
  double pose = 0;        // the per-image pose corrections (TrainState::pose)
};

// What a step does, apart from the values it does it with (StepSettings adds those). A GPU backend
// captures the work of a step once and replays it while the plan and the model's shape stay the
// same, so the whole plan is the replay's key (cuda/step_engine.h): a setting that changes which
// kernels run or what they bake in belongs here, and cannot be left out of the key.
struct StepPlan {
  RasterSettings raster;
  LossKind loss = LossKind::L1Ssim;  // engine/loss.h
  double ssim_lambda = 0.2;          // the weight of (1 - SSIM) in a loss with it
  // MCMC (0 = off). L1 regularizers, added to the gradients before Adam:
  //   opacity_reg * mean(sigmoid(raw_opacity)) and scale_reg * mean(exp(log_scales)).
  double opacity_reg = 0, scale_reg = 0;
  // MCMC position noise after Adam (StepSettings::noise_scale and noise_seed say how much).
  bool noise = false;
  // Sparse Adam on the SH coefficients: an element whose gradient in this step is exactly zero
  // (every coefficient of a splat the view culled or did not blend) keeps its value and both
  // moments, as if the step had not happened for it; the others get the usual update at the
  // step's bias corrections. Off: every element's update, zero gradient or not (torch's Adam).
  bool sparse_sh_adam = false;
  // ADC: after the backward, every splat visible in this step adds the norm of its screen-space
  // mean gradient (adc::grad2d_norm) and one visible count to the statistics of ADC's refine tick.
  bool accumulate_grad2d = false;
  // With accumulate_grad2d (ignored without): every visible splat also adds, per view, AbsGS's
  // "homodirectional" statistic to adc::Stats::grad2d_abs: adc::grad2d_norm of (sum_p |v_x|_p,
  // sum_p |v_y|_p), the absolute values of its per-pixel mean gradients summed over the pixels
  // per axis, so that gradients of opposite sign do not cancel (Ye et al. 2024; FastGS splits by
  // it).
  bool accumulate_grad2d_abs = false;
  // With per-image transforms (TrainState::appearance), each view adds the gradient of
  // appearance_reg * ||[A | b] - [I | 0]||^2 (Frobenius) to its image's transform: a pull toward
  // the identity, which keeps the transforms from drifting together with the splats' colours.
  double appearance_reg = 0;
  // With per-image pose corrections (TrainState::pose): the gradient of (pose_reg / 2) ||d||^2
  // is added to the correction d of each view's image before its Adam update (engine/pose.h).
  double pose_reg = 0;
  // Views in the step's global batch, over all ranks: the gradients of the views are summed
  // (all-reduced across ranks), divided by batch_size, then regularized and given to Adam once.
  int batch_size = 1;
  bool operator==(const StepPlan&) const = default;
};

// A step's plan and the values that change from step to step without changing its work: a GPU
// backend's replay reads these from memory it fills before each step (cuda/step_engine.h
// StepScalars; tests/gpu/test_engine.cpp varies every one of them between replays).
struct StepSettings : StepPlan {
  LearningRates lr;
  // With noise: means += noise_scale * gate(opacity) * Sigma * z (paper eq. 10), z ~ N(0, I) from
  // mcmc::normal(noise_seed, mcmc::kNoise, 3 * splat + axis), Sigma = R S^2 R^T.
  double noise_scale = 0;
  std::uint64_t noise_seed = 0;
};

// One view of a step: a camera and the index of its training image (see set_images).
struct BatchView {
  const Camera* camera = nullptr;
  int image = 0;
};

// The step's loss (the one StepSettings::loss selects), and the means of its terms: l1 = mean
// |r - t| (a loss whose data term it is: l1, l1_ssim), ssim = mean SSIM (a loss with the SSIM
// term); 0 where the loss does not compute them.
struct StepResult {
  double loss = 0, l1 = 0, ssim = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;

  // Training images, 8-bit (engine/target.h forms the loss target and weights from them), indexed
  // by the `image` argument of step(). They must outlive the backend's use of them.
  virtual void set_images(const std::vector<const Image8*>& images) = 0;
  virtual void set_state(const TrainState& state) = 0;
  virtual TrainState state() const = 0;
  // The parameters alone (state().params without the optimizer's moments): a viewer's snapshot.
  virtual Gaussians params() const { return state().params; }
  // engine/state_digest.h's digest of state(); a GPU backend computes it where the state is.
  virtual std::uint64_t state_digest() const;
  // The parameter groups (for_each_group order, then "appearance", "pose") that have diverged by
  // `limits` (DivergenceLimits::diverged); none when training is sane: the trainer's periodic
  // divergence check. A GPU backend counts on the device, so that the check costs two passes over
  // the parameters and a download of the counts.
  virtual std::vector<std::string> diverged_groups(const DivergenceLimits& limits = {}) const;
  virtual std::size_t num_splats() const = 0;

  // One optimization step on this rank's views of the batch (settings.batch_size views over all
  // ranks): render, loss and backward per view, gradients summed over the views and the ranks and
  // divided by batch_size, regularizers, one Adam update. It may return before the step has run
  // (GPU backends queue it); its loss arrives later through collect_losses.
  virtual void step(std::span<const BatchView> views, const StepSettings& settings) = 0;
  // A step on a single view (batch_size 1, one rank).
  void step(const Camera& camera, int image, const StepSettings& settings) {
    const BatchView view{&camera, image};
    step(std::span(&view, 1), settings);
  }
  // The ranks this backend's steps reduce gradients, losses and densification statistics over
  // (size 1 until set). A backend that cannot reduce over `comm` throws splat::Error saying why.
  virtual void set_communicator(dist::Communicator& comm) = 0;
  // Appends the losses of finished steps, one per step (the mean over its batch, all ranks), in
  // step order. With wait, blocks until every step submitted so far has finished.
  virtual void collect_losses(std::vector<StepResult>& out, bool wait) = 0;
  // Runs a densification strategy's refine tick (engine/refine.h) on this backend's refine
  // context; it may change the count and replace the model's buffers. Nothing is in flight while
  // it runs (the backend drains first), and the ADC statistics of the steps since the last tick
  // are the tick's to read and reset.
  virtual RefineStats refine(RefineTick& tick) = 0;
  // A tick made for the call: backend.refine(McmcTick(settings)).
  RefineStats refine(RefineTick&& tick) { return refine(tick); }
  // Recomputes the 3D filter of every splat from its mean and the training cameras
  // (filter3d::variances); steps and renders apply it from then on. A refine tick changes the
  // splats, so the trainer calls this after every tick (a step with a filter of another size is
  // an error). A backend without the 3D filter throws splat::Error saying so.
  virtual void update_filter3d(std::span<const Camera> cameras);

  // Renders the current model (RGB, background included).
  virtual Image render(const Camera& camera, const RasterSettings& settings) = 0;
  // Peak memory the backend used, bytes (device memory for GPUs, resident set for the CPU).
  virtual std::uint64_t peak_memory_bytes() const = 0;
  // Named figures for the end-of-run report (host synchronizations, per-stage times, ...), in
  // display order. Empty when the backend has none.
  virtual std::vector<std::pair<std::string, double>> report() const { return {}; }
};

}  // namespace splat
