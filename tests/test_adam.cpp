// Adam on the CPU backend: train.sparse_sh_adam leaves the SH coefficients that got no gradient,
// and their moments, as they were, and updates every other element as the dense step does.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "cpu/adam_cpu.h"
#include "engine/backend.h"
#include "io/demo_scene.h"
#include "test_util.h"
#include "train/backend_factory.h"
#include "train/init.h"
#include "train/trainer.h"

namespace splat {
namespace {

bool same_bits(float a, float b) {
  return std::memcmp(&a, &b, sizeof(float)) == 0;
}

TEST(Adam, SparseShLeavesCoefficientsWithoutGradientAndUpdatesTheRestAsDense) {
  const Dataset data = load_blender(test::small_demo_scene(), LoadOptions{});
  Config cfg;
  cfg.model.init_points = 2000;
  cfg.model.init_extent = 1.6;  // some splats outside the view
  cfg.backend.type = BackendKind::Cpu;
  TrainState st;
  st.params = initialize_model(cfg.model, data, 7);
  // Moments as after some steps, so that a zero gradient still moves a dense update.
  st.adam_m = st.adam_v = st.params;
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  st.adam_m.for_each_group([&](const char*, std::vector<float>& v) {
    for (float& x : v) x = 1e-3f * u(rng);
  });
  st.adam_v.for_each_group([&](const char*, std::vector<float>& v) {
    for (float& x : v) x = 1e-4f * (0.5f + 0.5f * u(rng));
  });
  st.adam_step = 7;

  StepSettings s;
  s.raster = final_raster_settings(cfg);
  s.raster.sh_degree = 1;  // degrees 2 and 3 get no gradient
  s.lr = {1e-3, 5e-3, 1e-3, 5e-2, 2.5e-3, 1.25e-4, 0};
  const View& view = data.train[5];
  std::vector<const Image8*> images;
  for (const View& v : data.train) images.push_back(&v.image);
  const BatchView views[1] = {{&view.camera, 5}};
  const auto step = [&](bool sparse) {
    s.sparse_sh_adam = sparse;
    auto backend = make_backend(cfg.backend);
    backend->set_images(images);
    backend->set_state(st);
    backend->step(views, s);
    std::vector<StepResult> losses;
    backend->collect_losses(losses, true);
    return backend->state();
  };
  const TrainState dense = step(false), sparse = step(true);

  // The step's SH gradient, from the reference pipeline as the backend forms it.
  const Gaussians grad = test::view_grad(st.params, view, s.raster, s.ssim_lambda).grad;
  std::size_t kept = 0, updated = 0, dense_moved_zero = 0;
  for (std::size_t e = 0; e < st.params.sh.size(); ++e) {
    if (grad.sh[e] == 0.0f) {
      ++kept;
      ASSERT_TRUE(same_bits(sparse.params.sh[e], st.params.sh[e]) &&
                  same_bits(sparse.adam_m.sh[e], st.adam_m.sh[e]) &&
                  same_bits(sparse.adam_v.sh[e], st.adam_v.sh[e]))
          << "element " << e << " had no gradient";
      dense_moved_zero += dense.params.sh[e] != st.params.sh[e];
    } else {
      ++updated;
      ASSERT_TRUE(same_bits(sparse.params.sh[e], dense.params.sh[e]) &&
                  same_bits(sparse.adam_m.sh[e], dense.adam_m.sh[e]) &&
                  same_bits(sparse.adam_v.sh[e], dense.adam_v.sh[e]))
          << "element " << e;
    }
  }
  // Degrees 2 and 3 are 12 of the 16 coefficients; splats outside the view add theirs.
  const std::size_t n = st.params.size();
  EXPECT_GT(kept, n * 12 * 3 + 100 * 4 * 3) << "the view must miss some splats";
  EXPECT_GT(updated, n * 4 * 3 / 4);
  EXPECT_GT(dense_moved_zero, kept * 9 / 10) << "the dense step moves them on their moments";
  // The other groups do not depend on the setting.
  EXPECT_EQ(sparse.params.means, dense.params.means);
  EXPECT_EQ(sparse.params.raw_opacity, dense.params.raw_opacity);
  EXPECT_EQ(sparse.adam_m.log_scales, dense.adam_m.log_scales);
  EXPECT_EQ(sparse.adam_v.quats, dense.adam_v.quats);
}

}  // namespace
}  // namespace splat
