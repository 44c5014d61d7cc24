// Mip-Splatting on both backends (model.antialiased): the 3D filter's variances from the training
// cameras, and a whole training step with the 3D filter and the 2D mip filter, against the CPU
// reference.
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "cuda/filter3d_cuda.h"
#include "engine/backend.h"
#include "engine/filter3d_host.h"
#include "io/checkpoint.h"
#include "io/demo_scene.h"
#include "parity_util.h"
#include "test_util.h"
#include "train/backend_factory.h"
#include "train/config.h"
#include "train/trainer.h"

namespace splat {
namespace {

using namespace test;

// The scene's camera and copies of it moved back and sideways: other depths, other frusta.
std::vector<Camera> training_cameras(const Camera& base) {
  std::vector<Camera> cams;
  for (int k = 0; k < 8; ++k) {
    Camera c = base;
    c.t[0] += 0.3 * (k % 3 - 1);
    c.t[1] += 0.2 * (k % 2);
    c.t[2] += 0.5 * k;
    if (k == 5) c.fx *= 1.5;  // a longer lens samples more densely
    cams.push_back(c);
  }
  return cams;
}

TEST(ParityFilter3d, VariancesMatchTheReference) {
  const Scene scene = random_scene(5000, 160, 120, 77);
  const std::vector<Camera> cams = training_cameras(scene.camera);
  const std::vector<float> want = filter3d::variances(scene.gaussians.means, cams);

  std::vector<cuda::CameraParams> host;
  for (const Camera& c : cams) host.push_back(cuda::CameraParams::from(c));
  auto d_cams = to_device(host);
  auto d_means = to_device(scene.gaussians.means);
  auto d_var = poisoned<float>(want.size());
  cuda::DeviceBuffer<unsigned> fallback(1);
  cuda::filter3d_variances(int(want.size()), d_means.data(), d_cams.data(), int(cams.size()),
                           d_var.data(), fallback.data(), nullptr);
  SPLAT_CUDA_CHECK(cudaDeviceSynchronize());
  const std::vector<float> got = d_var.download();
  // The random scene puts a few splats behind the camera: they take the widest filter of a seen
  // splat, so that value occurs more than once (the fallback path ran).
  const float widest = *std::max_element(want.begin(), want.end());
  EXPECT_GT(std::count(want.begin(), want.end(), widest), 1);
  // Float R m + t in another order (FMA): the rate moves by ~1e-7 relative, the variance by twice
  // that. Variances are 1e-7..1e-3.
  expect_agree("filter3d variances", got, want, {2e-6, 1 - 1e-12, 1e-8, "float focal / depth"});
}

// One training step on both backends with the filters of model.antialiased: the 3D filter from
// the backends' own update_filter3d (compared too) scaled up so that it rivals the splats' scales,
// then set on both, and the 2D mip filter.
TEST(ParityFilter3d, OneTrainingStepWithBothFilters) {
  const int n = 3000, w = 160, h = 120;
  const Scene scene = random_scene(n, w, h, 4321u);
  Image8 target(w, h, 3);
  const auto noise = random_vector(target.data.size(), 98);
  for (std::size_t i = 0; i < noise.size(); ++i)
    target.data[i] = std::uint8_t(std::lround(127.5f + 127.5f * noise[i]));

  TrainState st;
  st.params = scene.gaussians;
  st.adam_m = st.params;
  st.adam_v = st.params;
  for (Gaussians* g : {&st.adam_m, &st.adam_v})
    g->for_each_group(
        [](const char*, std::vector<float>& v) { std::fill(v.begin(), v.end(), 0.f); });

  StepSettings s;
  s.raster.sh_degree = 3;
  s.raster.antialiased = true;
  s.ssim_lambda = 0.2;
  s.lr = {1e-3, 5e-3, 1e-3, 5e-2, 2.5e-3, 1.25e-4};

  BackendConfig cpu_cfg, cuda_cfg;
  cpu_cfg.type = BackendKind::Cpu;
  cuda_cfg.type = BackendKind::Cuda;
  std::vector<std::unique_ptr<Backend>> backends;
  backends.push_back(make_backend(cpu_cfg));
  backends.push_back(make_backend(cuda_cfg));
  const std::vector<Camera> cams = training_cameras(scene.camera);

  // update_filter3d on the backends' own state.
  std::vector<std::vector<float>> updated;
  for (auto& b : backends) {
    b->set_state(st);
    b->update_filter3d(cams);
    updated.push_back(b->state().filter3d);
  }
  ASSERT_EQ(updated[0].size(), std::size_t(n));
  expect_agree("update_filter3d", updated[1], updated[0], {2e-6, 1 - 1e-12, 1e-8, "as above"});

  // A filter as wide as the splats (the update's is tiny at this camera distance): variance =
  // (0.7 * geometric mean scale)^2 per splat.
  st.filter3d.resize(n);
  for (int i = 0; i < n; ++i) {
    const float* ls = &st.params.log_scales[i * 3];
    st.filter3d[i] = 0.49f * std::exp(2.0f * (ls[0] + ls[1] + ls[2]) / 3.0f);
  }
  std::vector<Image> renders;
  std::vector<TrainState> after;
  std::vector<StepResult> losses;
  for (auto& b : backends) {
    b->set_images({&target});
    b->set_state(st);
    renders.push_back(b->render(scene.camera, s.raster));
    b->step(scene.camera, 0, s);
    b->collect_losses(losses, true);
    after.push_back(b->state());
  }
  ASSERT_EQ(losses.size(), 2u);
  // The golden vectors' image bounds (golden_util.h): a contribution right at the 1/255 alpha
  // threshold may be kept by one backend only.
  expect_agree("render", renders[1].data, renders[0].data,
               {1e-4, 1 - 1e-8, 1.0 / 255 + 1e-5, "float projection and blending"});
  EXPECT_NEAR(losses[1].loss, losses[0].loss, 1e-5 * std::abs(losses[0].loss));
  // From zero moments, adam_m = (1 - beta1) * gradient: the gradients of every group agree.
  const char* names[] = {"means", "log_scales", "quats", "raw_opacity", "sh"};
  std::vector<const std::vector<float>*> m_cpu, m_gpu;
  after[0].adam_m.for_each_group(
      [&](const char*, const std::vector<float>& v) { m_cpu.push_back(&v); });
  after[1].adam_m.for_each_group(
      [&](const char*, const std::vector<float>& v) { m_gpu.push_back(&v); });
  for (int g = 0; g < 5; ++g)
    expect_agree(std::string("gradient ") + names[g], *m_gpu[g], *m_cpu[g],
                 {1e-3, 0.99999, 1e-4, "float gradients summed in another order"});
  // The filter stays with the state.
  EXPECT_EQ(after[1].filter3d, st.filter3d);
}

// model.antialiased on the CUDA backend's default engine (graph + depth2): MCMC ticks grow the
// model and the filter follows it on the device; a resume between ticks restores the filter from
// the checkpoint and ends bit-identical to the uninterrupted run.
TEST(ParityFilter3d, AntialiasedTrainingResumesExactlyOnTheGpu) {
  const auto dir = temp_dir("filter3d_gpu") / "scene";
  DemoSceneOptions o;
  o.width = o.height = 96;
  o.train_views = 16;
  o.test_views = 3;
  write_demo_scene(dir.string(), o);
  const Dataset data = load_blender(dir.string(), LoadOptions{});
  Config cfg;
  cfg.model.init_points = 3000;
  cfg.model.init_extent = 1.1;
  cfg.model.antialiased = true;
  cfg.train.iterations = 100;
  cfg.train.log_every = 0;
  cfg.densify.refine_start = 20;
  cfg.densify.refine_every = 20;
  cfg.densify.cap_max = 6000;
  cfg.backend.type = BackendKind::Cuda;
  cfg.output.checkpoint_every = 50;
  const Checkpoint c = expect_resume_exact(cfg, data, 50);
  EXPECT_GT(c.params.size(), 3000u);
  ASSERT_EQ(c.filter3d.size(), c.params.size());
  // The checkpoint at 50 holds the filter of the tick at 40, from the means of step 40: not those
  // of step 50, but close to them.
  std::vector<Camera> cams;
  for (const View& v : data.train) cams.push_back(v.camera);
  expect_agree("filter at the checkpoint", c.filter3d, filter3d::variances(c.params.means, cams),
               {5e-2, 0.99, 1e-3, "the means moved for 10 steps since the update"});
}

}  // namespace
}  // namespace splat
