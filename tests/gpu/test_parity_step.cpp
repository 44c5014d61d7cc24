// One whole training step (render, loss, backward, Adam) on both backends from the same state:
// the parameters, the Adam moments and the loss agree, for RGB, composited RGBA and masked targets
// (the CUDA backend's default graph mode stages each target, its format and mask norm), for every
// train.loss and with backend.fast_math on and off.
#include <cmath>
#include <cstdint>
#include <string>

#include "parity_util.h"
#include "render/backend.h"
#include "train/backend_factory.h"
#include "train/config.h"

namespace splat {
namespace {

using namespace test;

// The kinds of training image: RGB; RGBA whose alpha the loss composites (on a background other
// than the render's); RGB with a loss mask over the left third.
enum class TargetKind { Rgb, Composite, Masked };

// A target the model does not already match: the scene rendered with other colors is not
// needed; random noise in [0, 1] gives large, well-defined gradients.
Image8 step_target(int w, int h, TargetKind kind) {
  Image8 target(w, h, kind == TargetKind::Rgb ? 3 : 4);
  const auto noise = random_vector(target.data.size(), 99);
  for (std::size_t i = 0; i < noise.size(); ++i)
    target.data[i] = std::uint8_t(std::lround(127.5f + 127.5f * noise[i]));
  target.background = {1.0f, 0.5f, 0.0f};
  if (kind == TargetKind::Masked) {
    target.alpha = AlphaUse::mask;
    for (std::size_t i = 0; i < target.pixels(); ++i)
      target.data[4 * i + 3] = i % std::size_t(w) < std::size_t(w) / 3 ? 0 : 255;
  }
  return target;
}

void check_step(LossKind loss, bool fast_math, TargetKind kind) {
  SCOPED_TRACE(std::string(to_string(loss)) + (fast_math ? "" : ", fast_math = false"));
  for (const auto& [n, w, h] : {std::tuple{600, 97, 61}, std::tuple{3000, 160, 120}}) {
    const Scene scene = random_scene(n, w, h, 1234u + n);
    const Image8 target = step_target(w, h, kind);

    TrainState st;
    st.params = scene.gaussians;
    st.adam_m = st.params;
    st.adam_v = st.params;
    // Nonzero moments as after some training, so the update uses all of Adam's terms.
    const auto m0 = random_vector(st.params.sh.size() * 4, 5);
    int k = 0;
    for (Gaussians* g : {&st.adam_m, &st.adam_v})
      g->for_each_group([&](const char*, std::vector<float>& v) {
        for (float& x : v)
          x = g == &st.adam_v ? 1e-4f * (0.5f + 0.5f * m0[k++ % m0.size()])
                              : 1e-3f * m0[k++ % m0.size()];
      });
    st.adam_step = 7;

    StepSettings s;
    s.raster.sh_degree = 3;
    s.raster.background = {1.0f, 1.0f, 1.0f};
    s.loss = loss;
    s.ssim_lambda = 0.2;
    s.lr = {1e-3, 5e-3, 1e-3, 5e-2, 2.5e-3, 1.25e-4};

    BackendConfig cpu_cfg, cuda_cfg;
    cpu_cfg.type = BackendKind::Cpu;
    cuda_cfg.type = BackendKind::Cuda;
    cuda_cfg.fast_math = fast_math;
    std::vector<std::unique_ptr<Backend>> backends;
    backends.push_back(make_backend(cpu_cfg));
    backends.push_back(make_backend(cuda_cfg));
    std::vector<TrainState> after;
    std::vector<StepResult> losses;
    for (auto& b : backends) {
      b->set_images({&target});
      b->set_state(st);
      b->step(scene.camera, 0, s);
      b->collect_losses(losses, true);
      after.push_back(b->state());
    }
    ASSERT_EQ(losses.size(), 2u);
    const std::string tag = std::to_string(n) + " splats " + std::to_string(w) + "x" +
                            std::to_string(h) + " target " + std::to_string(int(kind));
    // Loss sums 3*H*W terms in float on the GPU (atomics reorder them).
    EXPECT_NEAR(losses[1].loss, losses[0].loss, 1e-5 * std::abs(losses[0].loss)) << tag << " loss";
    EXPECT_NEAR(losses[1].ssim, losses[0].ssim, 1e-5) << tag << " ssim";
    EXPECT_NEAR(losses[1].l1, losses[0].l1, 1e-5 * std::abs(losses[0].l1)) << tag << " l1";
    if (loss != LossKind::L1Ssim) {  // no SSIM computed, and l2 reports no L1 term
      EXPECT_EQ(losses[1].ssim, 0.0) << tag;
      EXPECT_EQ(losses[1].l1, loss == LossKind::L1 ? losses[1].loss : 0.0) << tag;
    }
    EXPECT_EQ(after[1].adam_step, after[0].adam_step);
    // After one step params differ from the start by lr-sized moves; compare the moves
    // (param - start) so the tolerance is about the update, not the unchanged bulk.
    auto deltas = [&](const Gaussians& a, const Gaussians& start) {
      std::vector<std::vector<float>> out;
      std::vector<const std::vector<float>*> sg;
      start.for_each_group([&](const char*, const std::vector<float>& v) { sg.push_back(&v); });
      int i = 0;
      a.for_each_group([&](const char*, const std::vector<float>& v) {
        std::vector<float> d(v.size());
        for (std::size_t j = 0; j < v.size(); ++j) d[j] = v[j] - (*sg[i])[j];
        out.push_back(d);
        ++i;
      });
      return out;
    };
    const char* names[] = {"means", "log_scales", "quats", "raw_opacity", "sh"};
    const auto d_cpu = deltas(after[0].params, st.params),
               d_gpu = deltas(after[1].params, st.params);
    const auto m_cpu = deltas(after[0].adam_m, st.adam_m),
               m_gpu = deltas(after[1].adam_m, st.adam_m);
    for (int g = 0; g < 5; ++g) {
      // Adam normalizes by sqrt(v): where a gradient is tiny, the float GPU sum and the CPU sum
      // can differ in relative terms, so single elements may move differently; the bulk agrees.
      expect_agree(tag + " update " + names[g], d_gpu[g], d_cpu[g],
                   {2e-2, 0.999, 1e-3, "Adam on float gradients summed in another order"});
      expect_agree(tag + " adam_m " + names[g], m_gpu[g], m_cpu[g],
                   {1e-3, 0.99999, 1e-4, "first moment moves by (1-beta1) * gradient"});
    }
  }
}

TEST(ParityStep, OneTrainingStepOnBothBackends) {
  for (const TargetKind kind : {TargetKind::Rgb, TargetKind::Composite, TargetKind::Masked})
    check_step(LossKind::L1Ssim, true, kind);
}
TEST(ParityStep, L1Loss) {
  for (const TargetKind kind : {TargetKind::Rgb, TargetKind::Masked})
    check_step(LossKind::L1, true, kind);
}
TEST(ParityStep, L2Loss) {
  for (const TargetKind kind : {TargetKind::Rgb, TargetKind::Masked})
    check_step(LossKind::L2, true, kind);
}
TEST(ParityStep, AccurateMath) {
  check_step(LossKind::L1Ssim, false, TargetKind::Rgb);
}

}  // namespace
}  // namespace splat
