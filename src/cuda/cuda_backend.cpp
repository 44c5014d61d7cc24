// The CUDA backend (cuda/cuda_backend.h): the Backend interface over its parts, which share one
// stream.
//   DeviceModel (device_model.h): the parameters, gradients, Adam moments, ADC statistics and 3D
//     filter on the device, and their host boundary.
//   TrainingImages (training_images.h): the 8-bit training images.
//   Renderer (renderer.h): the differentiable renderer, forward and backward.
//   StepEngine (step_engine.h): training steps, their submission modes and their losses.
//   RefineScratch (refine_cuda.h): what the strategies' refine ticks keep between ticks.
// Whatever reads or replaces the model from the host drains the step engine first.
#include "cuda/cuda_backend.h"

#include <cuda_runtime.h>

#include <memory>
#include <string>

#include "core/error.h"
#include "cuda/device_model.h"
#include "cuda/refine_cuda.h"
#include "cuda/renderer.h"
#include "cuda/step_engine.h"
#include "cuda/testing.h"
#include "cuda/training_images.h"
#include "distributed/communicator.h"
#include "engine/backend_config.h"

namespace splat::cuda {
namespace {

class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(const BackendConfig& cfg)
      : gpu_image_bytes_(cfg.gpu_images_gb < 0 ? -1 : std::int64_t(cfg.gpu_images_gb * 0x1p30)),
        timer_(cfg.timing),
        renderer_(stream_, syncs_, timer_, cfg.fast_math),
        model_(stream_, syncs_),
        images_(stream_, syncs_),
        engine_(cfg, stream_, syncs_, timer_, renderer_, model_, images_) {}
  ~CudaBackend() override { cudaStreamSynchronize(stream_); }

  std::string name() const override { return "cuda"; }
  void set_communicator(dist::Communicator& comm) override { engine_.set_communicator(comm); }
  std::uint64_t peak_memory_bytes() const override { return memory_stats().peak; }
  std::size_t num_splats() const override { return std::size_t(model_.n); }

  Image render(const Camera& cam, const RasterSettings& rs) override {
    engine_.drain();
    timer_.set_active(false);  // renders are not training steps
    const ForwardState fwd =
        renderer_.forward(model_.params.in(), model_.n, sh_coeffs(model_.sh_degree), cam, rs,
                          Sizing::Exact, nullptr, model_.filter3d());
    timer_.set_active(true);
    Image out(cam.width, cam.height, 3);
    SPLAT_CUDA_CHECK(cudaMemcpyAsync(out.data.data(), fwd.raster.out.image,
                                     out.data.size() * sizeof(float), cudaMemcpyDeviceToHost,
                                     stream_));
    syncs_.stream(stream_, "render_download");
    return out;
  }

  std::vector<std::pair<std::string, double>> report() const override {
    std::vector<std::pair<std::string, double>> r;
    for (const auto& [name, count] : syncs_.counts()) r.push_back({"sync." + name, double(count)});
    r.push_back({"alloc.scratch_growths", double(renderer_.allocations())});
    engine_.report(r);
    // Where the device memory is at the end, and the most it ever held.
    const auto mib = [](std::size_t bytes) { return double(bytes) / double(1 << 20); };
    r.push_back({"memory.model_mib", mib(model_.bytes())});
    r.push_back({"memory.images_mib", mib(images_.bytes())});
    r.push_back({"memory.render_scratch_mib", mib(renderer_.bytes())});
    r.push_back({"memory.refine_scratch_mib", mib(refine_scratch_.bytes())});
    r.push_back({"memory.engine_mib", mib(engine_.bytes())});
    r.push_back({"memory.peak_mib", mib(memory_stats().peak)});
    for (const auto& [name, ms] : timer_.mean_ms()) r.push_back({"ms." + name, ms});
    return r;
  }

  void set_images(const std::vector<const Image8*>& images) override {
    engine_.drain();
    images_.set(images, gpu_image_bytes_);
    check_appearance_images(model_.appearance.params.size() / kAppearanceFloats, images_.count(),
                            name());
    check_pose_images(model_.pose.images(), images_.count(), name());
  }
  void set_state(const TrainState& s) override {
    check_appearance(s.appearance, images_.count(), name());
    check_pose(s.pose, images_.count(), name());
    engine_.drain();
    model_.upload(s);
  }
  TrainState state() const override {
    engine_.drain();
    return model_.download();
  }
  Gaussians params() const override {
    engine_.drain();
    return model_.download_params();
  }
  std::uint64_t state_digest() const override {
    engine_.drain();
    return model_.digest();
  }
  std::vector<std::string> diverged_groups(const DivergenceLimits& limits) const override {
    engine_.drain();
    return model_.diverged_groups(limits);
  }

  void step(std::span<const BatchView> views, const StepSettings& s) override {
    engine_.step(views, s);
  }
  void collect_losses(std::vector<StepResult>& out, bool wait) override {
    engine_.collect_losses(out, wait);
  }

  // Refine ticks change the model's buffers: nothing may be in flight, and a step abandoned for an
  // intersection overflow would otherwise be queued again after the tick.
  RefineStats refine(RefineTick& tick) override {
    idle("a refine tick");
    RefineContext ctx{model_,     stream_, syncs_, refine_scratch_, engine_.communicator(),
                      &renderer_, &images_};
    return tick.run_cuda(ctx);
  }
  // Nothing in flight: a queued step that overflowed its intersection buffers would run again
  // after this update and see variances from the means before it, where the CPU reference
  // computes them after it. One wait every 100 steps.
  void update_filter3d(std::span<const Camera> cameras) override {
    engine_.drain();
    model_.update_filter3d(cameras);
  }

  // Test hooks (cuda/cuda_backend.h).
  std::vector<DeviceArrayView> arrays() const {
    engine_.drain();
    return model_.arrays();
  }
  adc::Stats adc_stats() const {
    engine_.drain();
    return model_.adc_stats();
  }
  void set_adc_stats(const adc::Stats& st) {
    engine_.drain();
    model_.set_adc_stats(st);
  }
  void poison_scratch() {
    engine_.drain();
    renderer_.poison_scratch();
  }

 private:
  void idle(const char* before) {
    engine_.drain();
    engine_.assert_idle(before);
  }

  const std::int64_t gpu_image_bytes_;  // backend.gpu_images_gb; negative: auto
  // Destroyed after every part: they all queue work on it.
  Stream stream_;
  SyncLog syncs_;
  StageTimer timer_;
  Renderer renderer_;
  DeviceModel model_;
  TrainingImages images_;
  // Draining changes no observable state, so the const host reads drain too.
  mutable StepEngine engine_;
  RefineScratch refine_scratch_;
};

template <class Cuda, class Base>
Cuda& cuda_backend(Base& backend, const char* hook) {
  auto* cuda = dynamic_cast<Cuda*>(&backend);
  if (!cuda) throw Error(std::string(hook) + ": the backend is " + backend.name() + ", not cuda");
  return *cuda;
}

}  // namespace

std::unique_ptr<Backend> make_backend(const BackendConfig& cfg) {
  if (!device_available()) throw Error("backend.type = \"cuda\": no CUDA device is available");
  require_supported_device();
  return std::make_unique<CudaBackend>(cfg);
}

std::vector<DeviceArrayView> model_arrays(const Backend& backend) {
  return cuda_backend<const CudaBackend>(backend, "model_arrays").arrays();
}

adc::Stats adc_stats(const Backend& backend) {
  return cuda_backend<const CudaBackend>(backend, "adc_stats").adc_stats();
}

void set_adc_stats(Backend& backend, const adc::Stats& stats) {
  cuda_backend<CudaBackend>(backend, "set_adc_stats").set_adc_stats(stats);
}

void poison_scratch(Backend& backend) {
  cuda_backend<CudaBackend>(backend, "poison_scratch").poison_scratch();
}

}  // namespace splat::cuda
