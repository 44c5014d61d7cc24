// The CPU reference backend: the naive pipeline of src/cpu behind the Backend interface.
#include <omp.h>
#include <sys/resource.h>

#include "core/error.h"
#include "cpu/adam.h"
#include "cpu/adc.h"
#include "cpu/loss.h"
#include "cpu/mcmc.h"
#include "cpu/pipeline.h"
#include "render/backend.h"

namespace splat {
namespace cpu {

void adam_step(TrainState& st, const Gaussians& grads, const LearningRates& lr) {
  const std::int64_t t = ++st.adam_step;
  const int K = st.params.K();
  auto constant = [](double v) { return [v](std::size_t) { return v; }; };
  adam_update(st.params.means, grads.means, st.adam_m.means, st.adam_v.means, t, constant(lr.means));
  adam_update(st.params.log_scales, grads.log_scales, st.adam_m.log_scales, st.adam_v.log_scales, t,
              constant(lr.log_scales));
  adam_update(st.params.quats, grads.quats, st.adam_m.quats, st.adam_v.quats, t, constant(lr.quats));
  adam_update(st.params.raw_opacity, grads.raw_opacity, st.adam_m.raw_opacity,
              st.adam_v.raw_opacity, t, constant(lr.opacity));
  // sh is [N, K, 3]: coefficient k = (i / 3) % K; k = 0 is the DC term.
  adam_update(st.params.sh, grads.sh, st.adam_m.sh, st.adam_v.sh, t,
              [&](std::size_t i) { return (i / 3) % K == 0 ? lr.sh0 : lr.shN; });
}

namespace {

class CpuBackend final : public Backend {
 public:
  std::string name() const override { return "cpu"; }

  void set_images(const std::vector<const Image*>& images) override {
    for (const Image* img : images)
      if (img->channels != 3) throw Error("cpu backend: training images must be RGB");
    images_ = images;
  }
  void set_state(const TrainState& s) override {
    state_ = s;
    stats_.reset(state_.params.size());
  }
  TrainState state() const override { return state_; }
  std::size_t num_splats() const override { return state_.params.size(); }

  void step(const Camera& cam, int image, const StepSettings& s) override {
    const Image& target = *images_.at(image);
    if (target.width != cam.width || target.height != cam.height)
      throw Error("cpu backend: image " + std::to_string(image) + " is " +
                  std::to_string(target.width) + "x" + std::to_string(target.height) +
                  " but its camera is " + std::to_string(cam.width) + "x" + std::to_string(cam.height));
    const RenderState<float> fwd = render_fwd(state_.params, cam, s.raster);
    const LossResult<float> loss = photometric_loss(fwd.raster.image, target.data, cam.width,
                                                    cam.height, float(s.ssim_lambda), true);
    // render_bwd's two stages, so ADC can read the projected gradients in between.
    const ProjectedGrad<float> v =
        rasterize_bwd(fwd.projected, fwd.isect, cam.width, cam.height, s.raster, loss.v_image, {});
    Gaussians grads;
    project_bwd(state_.params, cam, s.raster, fwd.projected, v, grads);
    if (s.accumulate_grad2d) {
      if (stats_.size() != state_.params.size()) stats_.reset(state_.params.size());
      adc_accumulate(stats_, fwd.projected.radii, v.means2d, cam.width, cam.height);
    }
    add_regularizer_grads(state_.params, grads, s.opacity_reg, s.scale_reg);
    adam_step(state_, grads, s.lr);
    if (s.noise_scale > 0) inject_noise(state_.params, s.noise_scale, s.noise_seed);
    finished_.push_back({loss.loss, loss.l1, loss.ssim});
  }

  void collect_losses(std::vector<StepResult>& out, bool) override {
    out.insert(out.end(), finished_.begin(), finished_.end());
    finished_.clear();
  }

  RefineStats mcmc_refine(const McmcRefineSettings& s) override {
    const RefineStats r = cpu::mcmc_refine(state_, s);
    stats_.reset(state_.params.size());
    return r;
  }

  RefineStats adc_refine(const AdcRefineSettings& s) override {
    if (stats_.size() != state_.params.size()) stats_.reset(state_.params.size());
    return cpu::adc_refine(state_, stats_, s);
  }
  void adc_reset_opacity(float max_opacity) override { cpu::adc_reset_opacity(state_, max_opacity); }

  adc::Stats& stats() { return stats_; }

  Image render(const Camera& cam, const RasterSettings& rs) override {
    const RenderState<float> fwd = render_fwd(state_.params, cam, rs);
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
  std::vector<const Image*> images_;
  TrainState state_;
  adc::Stats stats_;  // ADC statistics since the last refine tick, one entry per splat
  std::vector<StepResult> finished_;
};

}  // namespace

adc::Stats& adc_stats(Backend& backend) {
  auto* cpu = dynamic_cast<CpuBackend*>(&backend);
  if (!cpu) throw Error("adc_stats: the backend is " + backend.name() + ", not cpu");
  return cpu->stats();
}

}  // namespace cpu

std::unique_ptr<Backend> make_cpu_backend(int threads) {
  if (threads > 0) omp_set_num_threads(threads);
  return std::make_unique<cpu::CpuBackend>();
}

}  // namespace splat
