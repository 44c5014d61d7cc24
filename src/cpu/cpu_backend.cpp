// The CPU reference backend: the naive pipeline of src/cpu behind the Backend interface.
#include "cpu/cpu_backend.h"

#include <omp.h>
#include <sys/resource.h>

#include <cstdint>
#include <cstdio>

#include "core/error.h"
#include "cpu/adam_cpu.h"
#include "cpu/adc_cpu.h"
#include "cpu/appearance_cpu.h"
#include "cpu/loss_cpu.h"
#include "cpu/mcmc_cpu.h"
#include "cpu/pipeline.h"
#include "cpu/refine_cpu.h"
#include "cpu/testing.h"
#include "distributed/communicator.h"
#include "distributed/sync.h"
#include "engine/backend.h"
#include "engine/filter3d_host.h"
#include "engine/target.h"

namespace splat {
namespace cpu {

void adam_step(TrainState& st, const Gaussians& grads, const LearningRates& lr, bool sparse_sh) {
  const std::int64_t t = ++st.adam_step;
  const int K = st.params.K();
  auto constant = [](double v) { return [v](std::size_t) { return v; }; };
  adam_update(st.params.means, grads.means, st.adam_m.means, st.adam_v.means, t,
              constant(lr.means));
  adam_update(st.params.log_scales, grads.log_scales, st.adam_m.log_scales, st.adam_v.log_scales, t,
              constant(lr.log_scales));
  adam_update(st.params.quats, grads.quats, st.adam_m.quats, st.adam_v.quats, t,
              constant(lr.quats));
  adam_update(st.params.raw_opacity, grads.raw_opacity, st.adam_m.raw_opacity,
              st.adam_v.raw_opacity, t, constant(lr.opacity));
  // sh is [N, K, 3]: coefficient k = (i / 3) % K; k = 0 is the DC term.
  adam_update(st.params.sh, grads.sh, st.adam_m.sh, st.adam_v.sh, t,
              [&](std::size_t i) { return (i / 3) % K == 0 ? lr.sh0 : lr.shN; },
              {.sparse = sparse_sh});
}

namespace {

void add_in_place(Gaussians& sum, const Gaussians& term);

class CpuBackend final : public Backend {
 public:
  std::string name() const override { return "cpu"; }

  void set_images(const std::vector<const Image8*>& images) override {
    for (const Image8* img : images)
      if (img->channels != 3 && img->channels != 4)
        throw Error("cpu backend: training images must be RGB or RGBA");
    images_ = images;
    check_appearance(state_.appearance, images_.size(), name());
    check_pose(state_.pose, images_.size(), name());
  }
  void set_state(const TrainState& s) override {
    if (!s.filter3d.empty() && s.filter3d.size() != s.params.size())
      throw Error("cpu backend: " + std::to_string(s.filter3d.size()) +
                  " 3D filter variances for " + std::to_string(s.params.size()) + " splats");
    check_appearance(s.appearance, images_.size(), name());
    check_pose(s.pose, images_.size(), name());
    check_adc_stats(s.adc, name());
    state_ = s;
    stats_ = std::move(state_.adc);
    if (stats_.size() != state_.params.size()) stats_.reset(state_.params.size());
  }
  TrainState state() const override {
    TrainState s = state_;
    s.adc = stats_;
    return s;
  }
  Gaussians params() const override { return state_.params; }
  std::size_t num_splats() const override { return state_.params.size(); }

  void set_communicator(dist::Communicator& comm) override { comm_ = &comm; }

  void step(std::span<const BatchView> views, const StepSettings& s) override {
    if (views.empty()) throw Error("cpu backend: a step needs at least one view");
    const std::span<const float> filter = checked_filter3d();
    AppearanceState& app = state_.appearance;
    const bool appearance = !app.empty();
    PoseState& pose = state_.pose;
    if (!pose.empty() && (views.size() > 1 || comm_->size() > 1))
      throw Error("cpu backend: train.pose_opt trains one view per step in one process, not " +
                  std::to_string(views.size()) + " views on " + std::to_string(comm_->size()) +
                  " ranks");
    std::vector<double> v_view;  // train.pose_opt: d loss / d [R' | t'] of the step's one view
    // d loss / d transform of every image; only the step's images get nonzero entries.
    std::vector<float> app_grads(app.params.size(), 0.0f);
    Gaussians grads, view_grads;
    double sums[3] = {0, 0, 0};  // loss, l1, ssim over this rank's views
    for (std::size_t k = 0; k < views.size(); ++k) {
      // train.pose_opt: the view renders from its image's corrected pose.
      const Camera cam =
          pose.empty() ? *views[k].camera : posed_camera(*views[k].camera, pose_of(views[k].image));
      const Image8& target = *images_.at(views[k].image);
      if (target.width != cam.width || target.height != cam.height)
        throw Error("cpu backend: image " + std::to_string(views[k].image) + " is " +
                    std::to_string(target.width) + "x" + std::to_string(target.height) +
                    " but its camera is " + std::to_string(cam.width) + "x" +
                    std::to_string(cam.height));
      const RenderState<float> fwd = render_fwd(state_.params, cam, s.raster, filter);
      // The float target (and the mask's weights) formed per step from the stored bytes.
      const std::vector<float> weights =
          target.masked() ? target_weights(target) : std::vector<float>{};
      // train.appearance: the loss sees the render through the image's transform.
      const float* transform =
          appearance ? &app.params[kAppearanceFloats * std::size_t(views[k].image)] : nullptr;
      std::vector<float> compensated;
      if (transform) compensated = appearance_fwd(transform, fwd.raster.image);
      LossResult<float> loss =
          photometric_loss(transform ? compensated : fwd.raster.image, target_image(target).data,
                           cam.width, cam.height, float(s.ssim_lambda), true, s.loss,
                           weights.empty() ? nullptr : weights.data());
      if (transform) {
        float* v_transform = &app_grads[kAppearanceFloats * std::size_t(views[k].image)];
        std::vector<float> v_render;
        appearance_bwd(transform, fwd.raster.image, loss.v_image, v_render, v_transform);
        loss.v_image = std::move(v_render);
        for (std::size_t j = 0; j < kAppearanceFloats; ++j)
          v_transform[j] += float(2 * s.appearance_reg) * (transform[j] - appearance_identity(j));
      }
      // render_bwd's two stages, so ADC can read the projected gradients in between.
      const bool abs = s.accumulate_grad2d && s.accumulate_grad2d_abs;
      const ProjectedGrad<float> v = rasterize_bwd(fwd.projected, fwd.isect, cam.width, cam.height,
                                                   s.raster, loss.v_image, {}, abs);
      project_bwd(state_.params, cam, s.raster, fwd.projected, v, k == 0 ? grads : view_grads,
                  filter, pose.empty() ? nullptr : &v_view);
      if (k > 0) add_in_place(grads, view_grads);
      if (s.accumulate_grad2d) {
        if (stats_.size() != state_.params.size()) stats_.reset(state_.params.size());
        adc_accumulate(stats_, fwd.projected.radii, v.means2d, cam.width, cam.height,
                       v.means2d_abs);
      }
      sums[0] += loss.loss;
      sums[1] += loss.l1;
      sums[2] += loss.ssim;
    }
    if (comm_->size() > 1) {
      dist::allreduce_sum(*comm_, grads, "gradient all-reduce");
      if (appearance) comm_->allreduce_sum(std::span(app_grads), "appearance gradient all-reduce");
      comm_->allreduce_sum(std::span(sums), "loss all-reduce");
    }
    const int batch = s.batch_size;
    if (batch > 1) {
      const float inv = 1.0f / float(batch);
      grads.for_each_group([&](const char*, std::vector<float>& g) {
        for (float& x : g) x *= inv;
      });
      for (float& x : app_grads) x *= inv;
    }
    add_regularizer_grads(state_.params, grads, s.opacity_reg, s.scale_reg);
    adam_step(state_, grads, s.lr, s.sparse_sh_adam);
    // The transforms take the same Adam step as the model (its count and bias correction).
    if (appearance) {
      adam_update(app.params, app_grads, app.m, app.v, state_.adam_step,
                  [&](std::size_t) { return s.lr.appearance; });
      appearance_recenter(app.params.data(), app.images());
    }
    // The one view's image's correction takes its own Adam step (engine/pose.h).
    if (!pose.empty()) {
      const std::size_t i = std::size_t(views[0].image);
      double R[9], t[3];
      camera_pose(*views[0].camera, R, t);
      pose_update(R, t, v_view.data(), s.lr.pose, s.pose_reg, &pose.params[i * kPoseFloats],
                  &pose.m[i * kPoseFloats], &pose.v[i * kPoseFloats], &pose.steps[i]);
    }
    if (s.noise) inject_noise(state_.params, s.noise_scale, s.noise_seed);
    finished_.push_back({sums[0] / batch, sums[1] / batch, sums[2] / batch});
  }

  void collect_losses(std::vector<StepResult>& out, bool) override {
    out.insert(out.end(), finished_.begin(), finished_.end());
    finished_.clear();
  }

  RefineStats refine(RefineTick& tick) override {
    RefineContext ctx{state_, stats_, *comm_, images_};
    return tick.run_cpu(ctx);
  }

  void update_filter3d(std::span<const Camera> cameras) override {
    state_.filter3d = filter3d::variances(state_.params.means, cameras);
  }

  adc::Stats& stats() { return stats_; }

  Image render(const Camera& cam, const RasterSettings& rs) override {
    const RenderState<float> fwd = render_fwd(state_.params, cam, rs, checked_filter3d());
    Image out(cam.width, cam.height, 3);
    out.data = fwd.raster.image;
    return out;
  }

  std::uint64_t peak_memory_bytes() const override {
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    return std::uint64_t(ru.ru_maxrss) * 1024;  // Linux reports KiB
  }

 private:
  const float* pose_of(int image) const {
    return &state_.pose.params.at(kPoseFloats * std::size_t(image));
  }
  // The 3D filter, which a refine tick leaves stale until the trainer's update_filter3d.
  std::span<const float> checked_filter3d() const {
    const std::vector<float>& f = state_.filter3d;
    if (!f.empty() && f.size() != state_.params.size())
      throw Error("cpu backend: the 3D filter has " + std::to_string(f.size()) + " entries for " +
                  std::to_string(state_.params.size()) +
                  " splats (update_filter3d after every refine tick)");
    return f;
  }

  std::vector<const Image8*> images_;
  TrainState state_;
  adc::Stats stats_;  // ADC statistics since the last refine tick, one entry per splat
  std::vector<StepResult> finished_;
  dist::Communicator* comm_ = &dist::single_process();
};

void add_in_place(Gaussians& sum, const Gaussians& term) {
  std::vector<const std::vector<float>*> terms;
  term.for_each_group([&](const char*, const std::vector<float>& v) { terms.push_back(&v); });
  std::size_t g = 0;
  sum.for_each_group([&](const char*, std::vector<float>& v) {
    const std::vector<float>& t = *terms[g++];
    for (std::size_t i = 0; i < v.size(); ++i) v[i] += t[i];
  });
}

}  // namespace

adc::Stats& adc_stats(Backend& backend) {
  auto* cpu = dynamic_cast<CpuBackend*>(&backend);
  if (!cpu) throw Error("adc_stats: the backend is " + backend.name() + ", not cpu");
  return cpu->stats();
}

}  // namespace cpu

std::unique_ptr<Backend> make_cpu_backend(std::int64_t threads) {
  // Threads far beyond the hardware's add only overhead, and thousands may not start at all.
  constexpr int kMostPerHardwareThread = 4;
  const int hardware = omp_get_num_procs();
  if (threads > std::int64_t(kMostPerHardwareThread) * hardware) {
    std::fprintf(stderr,
                 "warning: backend.threads = %lld is far above the %d hardware threads of this "
                 "machine; using %d (0 = all cores)\n",
                 (long long)threads, hardware, hardware);
    threads = hardware;
  }
  if (threads > 0) omp_set_num_threads(int(threads));
  return std::make_unique<cpu::CpuBackend>();
}

}  // namespace splat
