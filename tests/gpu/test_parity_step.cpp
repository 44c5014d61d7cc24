// One whole training step (render, loss, backward, Adam) on both backends from the same state:
// the parameters, the Adam moments and the loss agree, for RGB, composited RGBA and masked targets
// (the CUDA backend's default graph mode stages each target, its format and mask norm), for every
// train.loss and with backend.fast_math on and off.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "engine/backend.h"
#include "parity_util.h"
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

// Moments as after some training, so that an update uses all of Adam's terms: m in
// [-1e-3, 1e-3], v in [0, 1e-4].
float first_moment(float r) {
  return 1e-3f * r;
}
float second_moment(float r) {
  return 1e-4f * (0.5f + 0.5f * r);
}

// The splats at step 7 of a run, with nonzero moments.
TrainState state_of(const Gaussians& params) {
  TrainState st;
  st.params = params;
  st.adam_m = st.params;
  st.adam_v = st.params;
  const auto m0 = random_vector(st.params.sh.size() * 4, 5);
  int k = 0;
  for (Gaussians* g : {&st.adam_m, &st.adam_v})
    g->for_each_group([&](const char*, std::vector<float>& v) {
      for (float& x : v)
        x = g == &st.adam_v ? second_moment(m0[k++ % m0.size()])
                            : first_moment(m0[k++ % m0.size()]);
    });
  st.adam_step = 7;
  return st;
}

StepSettings step_settings(LossKind loss) {
  StepSettings s;
  s.raster.sh_degree = 3;
  s.raster.background = {1.0f, 1.0f, 1.0f};
  s.loss = loss;
  s.ssim_lambda = 0.2;
  s.lr = {1e-3, 5e-3, 1e-3, 5e-2, 2.5e-3, 1.25e-4, 1e-3};
  return s;
}

// After one step params differ from the start by lr-sized moves; comparing the moves
// (param - start) puts the tolerance on the update, not on the unchanged bulk.
std::vector<float> moves(const std::vector<float>& a, const std::vector<float>& start) {
  std::vector<float> d(a.size());
  for (std::size_t j = 0; j < a.size(); ++j) d[j] = a[j] - start[j];
  return d;
}
std::vector<std::vector<float>> moves(const Gaussians& a, const Gaussians& start) {
  std::vector<const std::vector<float>*> sg;
  start.for_each_group([&](const char*, const std::vector<float>& v) { sg.push_back(&v); });
  std::vector<std::vector<float>> out;
  a.for_each_group(
      [&](const char*, const std::vector<float>& v) { out.push_back(moves(v, *sg[out.size()])); });
  return out;
}

// The five groups' updates and first moments agree between the CPU (after[0]) and GPU (after[1]).
void expect_model_updates_agree(const std::string& tag,
                                const std::vector<TrainState>& after,
                                const TrainState& st) {
  const char* names[] = {"means", "log_scales", "quats", "raw_opacity", "sh"};
  const auto d_cpu = moves(after[0].params, st.params), d_gpu = moves(after[1].params, st.params);
  const auto m_cpu = moves(after[0].adam_m, st.adam_m), m_gpu = moves(after[1].adam_m, st.adam_m);
  for (int g = 0; g < 5; ++g) {
    // Adam normalizes by sqrt(v): where a gradient is tiny, the float GPU sum and the CPU sum
    // can differ in relative terms, so single elements may move differently; the bulk agrees.
    expect_agree(tag + " update " + names[g], d_gpu[g], d_cpu[g],
                 {2e-2, 0.999, 1e-3, "Adam on float gradients summed in another order"});
    expect_agree(tag + " adam_m " + names[g], m_gpu[g], m_cpu[g],
                 {1e-3, 0.99999, 1e-4, "first moment moves by (1-beta1) * gradient"});
  }
}

// Steps from `st` on the cpu backend and on the cuda backend of cuda_cfg, each step's views a
// batch: the states after them (cpu first) and the losses (cpu's, then cuda's).
struct BothSteps {
  std::vector<TrainState> after;
  std::vector<StepResult> losses;
};
BothSteps steps_on_both(BackendConfig cuda_cfg,
                        const std::vector<const Image8*>& images,
                        const TrainState& st,
                        const std::vector<std::vector<BatchView>>& steps,
                        StepSettings s) {
  BackendConfig cpu_cfg;
  cpu_cfg.type = BackendKind::Cpu;
  cuda_cfg.type = BackendKind::Cuda;
  BothSteps r;
  for (const BackendConfig& cfg : {cpu_cfg, cuda_cfg}) {
    auto b = make_backend(cfg);
    b->set_images(images);
    b->set_state(st);
    for (const std::vector<BatchView>& views : steps) {
      s.batch_size = int(views.size());
      b->step(views, s);
    }
    b->collect_losses(r.losses, true);
    r.after.push_back(b->state());
  }
  EXPECT_EQ(r.losses.size(), 2 * steps.size());
  return r;
}
BothSteps step_on_both(const BackendConfig& cuda_cfg,
                       const std::vector<const Image8*>& images,
                       const TrainState& st,
                       const std::vector<BatchView>& views,
                       const StepSettings& s) {
  return steps_on_both(cuda_cfg, images, st, {views}, s);
}

void check_step(LossKind loss, bool fast_math, TargetKind kind) {
  SCOPED_TRACE(std::string(to_string(loss)) + (fast_math ? "" : ", fast_math = false"));
  for (const auto& [n, w, h] : {std::tuple{600, 97, 61}, std::tuple{3000, 160, 120}}) {
    const Scene scene = random_scene(n, w, h, 1234u + n);
    const Image8 target = step_target(w, h, kind);
    const TrainState st = state_of(scene.gaussians);
    const StepSettings s = step_settings(loss);

    BackendConfig cuda_cfg;
    cuda_cfg.fast_math = fast_math;
    const auto [after, losses] = step_on_both(cuda_cfg, {&target}, st, {{&scene.camera, 0}}, s);
    ASSERT_EQ(losses.size(), 2u);
    const std::string tag = std::to_string(n) + " splats " + std::to_string(w) + "x" +
                            std::to_string(h) + " target " + std::to_string(int(kind));
    // Loss sums 3*H*W terms in float on the GPU (atomics reorder them).
    EXPECT_NEAR(losses[1].loss, losses[0].loss, 1e-5 * std::abs(losses[0].loss)) << tag << " loss";
    EXPECT_NEAR(losses[1].ssim, losses[0].ssim, 1e-5) << tag << " ssim";
    EXPECT_NEAR(losses[1].l1, losses[0].l1, 1e-5 * std::abs(losses[0].l1)) << tag << " l1";
    // Only mean |d| is an L1 to report, and no SSIM is computed without its term.
    const LossTerms& terms = loss_terms(loss);
    if (terms.data == DataTerm::Squared) {
      EXPECT_EQ(losses[1].l1, 0.0) << tag;
    }
    if (!terms.ssim) {
      EXPECT_EQ(losses[1].ssim, 0.0) << tag;
      if (terms.data == DataTerm::Abs) {
        EXPECT_EQ(losses[1].l1, losses[1].loss) << tag;
      }
    }
    EXPECT_EQ(after[1].adam_step, after[0].adam_step);
    expect_model_updates_agree(tag, after, st);
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
TEST(ParityStep, L2SsimLoss) {
  for (const TargetKind kind : {TargetKind::Rgb, TargetKind::Masked})
    check_step(LossKind::L2Ssim, true, kind);
}
TEST(ParityStep, AccurateMath) {
  check_step(LossKind::L1Ssim, false, TargetKind::Rgb);
}

// train.appearance = affine: the step sees the render through its image's colour transform and
// trains it; Adam moves every image's transform (those of images outside the step on their
// moments alone). One view in each submission mode (graph reads the image index from device
// memory), and a batch of two views on two images (chained).
TEST(ParityStep, AppearanceTransformsTrainAsOnTheCpu) {
  const int n = 3000, w = 160, h = 120;
  const Scene scene = random_scene(n, w, h, 4321u);
  const Image8 first = step_target(w, h, TargetKind::Masked);
  const Image8 second = step_target(w, h, TargetKind::Rgb);
  TrainState st = state_of(scene.gaussians);
  st.appearance = AppearanceState::identity(2);
  const auto r = random_vector(3 * st.appearance.params.size(), 17);
  for (std::size_t i = 0; i < st.appearance.params.size(); ++i) {
    st.appearance.params[i] += 0.1f * r[i];  // an exposure and colour cast away from identity
    st.appearance.m[i] = first_moment(r[i + st.appearance.params.size()]);
    st.appearance.v[i] = second_moment(r[i + 2 * st.appearance.params.size()]);
  }
  StepSettings s = step_settings(LossKind::L1Ssim);
  s.appearance_reg = 0.01;
  const std::vector<BatchView> one{{&scene.camera, 1}}, two{{&scene.camera, 1}, {&scene.camera, 0}};
  for (const auto& [views, submission] :
       {std::pair{one, Submission::Graph}, std::pair{one, Submission::Chained},
        std::pair{one, Submission::PerKernel}, std::pair{two, Submission::Chained}}) {
    const std::string tag =
        std::to_string(views.size()) + " views, " + std::string(to_string(submission));
    SCOPED_TRACE(tag);
    s.batch_size = int(views.size());
    BackendConfig cuda_cfg;
    cuda_cfg.submission = submission;
    const auto [after, losses] = step_on_both(cuda_cfg, {&first, &second}, st, views, s);
    ASSERT_EQ(losses.size(), 2u);
    EXPECT_NEAR(losses[1].loss, losses[0].loss, 1e-5 * std::abs(losses[0].loss));
    expect_model_updates_agree(tag, after, st);
    const AppearanceState &cpu = after[0].appearance, &gpu = after[1].appearance;
    ASSERT_EQ(gpu.params.size(), st.appearance.params.size());
    // The transforms' gradients are pixel sums in double on both backends, of renders that agree
    // to float rounding.
    expect_agree(tag + " appearance update", moves(gpu.params, st.appearance.params),
                 moves(cpu.params, st.appearance.params),
                 {1e-3, 0.9999, 1e-5, "Adam on 12 pixel sums of renders that agree"});
    expect_agree(tag + " appearance adam_m", moves(gpu.m, st.appearance.m),
                 moves(cpu.m, st.appearance.m),
                 {1e-4, 0.99999, 1e-6, "first moment moves by (1-beta1) * gradient"});
    expect_agree(tag + " appearance adam_v", gpu.v, cpu.v,
                 {1e-4, 0.99999, 1e-7, "second moments of gradients that agree"});
  }
}

// 3000 random splats at 160x120, two noise targets (RGB, then masked) and the state at step 7,
// with the views of a step on the first target and of a batch of both.
struct TwoTargets {
  static constexpr int kN = 3000, kW = 160, kH = 120;
  Scene scene;
  Image8 first = step_target(kW, kH, TargetKind::Rgb);
  Image8 second = step_target(kW, kH, TargetKind::Masked);
  TrainState st = state_of(scene.gaussians);
  std::vector<BatchView> one{{&scene.camera, 0}}, two{{&scene.camera, 0}, {&scene.camera, 1}};
  explicit TwoTargets(std::uint32_t seed) : scene(random_scene(kN, kW, kH, seed)) {}
  TwoTargets(const TwoTargets&) = delete;  // the views point into the scene
};

// A run whose first steps show one view (the SH coefficients updated inside the backward, no SH
// gradient array on the GPU) and whose later steps a batch (the array allocated then, summed,
// and Adam's launch taking the SH group): the same model as the CPU's after every kind of step.
TEST(ParityStep, ABatchAfterOneViewStepsTrainsAsOnTheCpu) {
  const TwoTargets t(2468u);
  const TrainState& st = t.st;
  for (const Submission submission : {Submission::Chained, Submission::PerKernel}) {
    const std::string tag = std::string(to_string(submission)) + ": one, two, one view";
    SCOPED_TRACE(tag);
    BackendConfig cuda_cfg;
    cuda_cfg.submission = submission;
    const auto [after, losses] =
        steps_on_both(cuda_cfg, {&t.first, &t.second}, st, {t.one, t.two, t.one},
                      step_settings(LossKind::L1Ssim));
    ASSERT_EQ(losses.size(), 6u);
    for (std::size_t k = 0; k < 3; ++k)
      EXPECT_NEAR(losses[3 + k].loss, losses[k].loss, 1e-5 * std::abs(losses[k].loss)) << k;
    expect_model_updates_agree(tag, after, st);
  }
}

// train.sparse_sh_adam: both backends leave the same SH coefficients (those of the splats the
// view culled or did not blend, and those above the active degree) with their moments exactly as
// they were, and update the rest as the dense step does. One view in graph mode (Adam inside the
// projection backward), then a batch of two (Adam's own launch on summed gradients).
TEST(ParityStep, SparseShAdamLeavesTheSameCoefficientsAsTheCpu) {
  const TwoTargets t(1357u);
  const TrainState& st = t.st;
  StepSettings s = step_settings(LossKind::L1Ssim);
  s.raster.sh_degree = 2;  // the degree-3 coefficients get no gradient
  s.sparse_sh_adam = true;
  using Steps = std::vector<std::vector<BatchView>>;
  for (const Steps& steps : {Steps{t.one}, Steps{t.two}}) {
    const std::string tag = steps[0].size() == 1 ? "one view" : "a batch of two";
    SCOPED_TRACE(tag);
    const auto [after, losses] =
        steps_on_both(BackendConfig{}, {&t.first, &t.second}, st, steps, s);
    expect_model_updates_agree(tag, after, st);
    // Unchanged: the coefficient and both moments keep their bits.
    const auto kept = [&](const TrainState& a, std::size_t e) {
      return std::memcmp(&a.params.sh[e], &st.params.sh[e], 4) == 0 &&
             std::memcmp(&a.adam_m.sh[e], &st.adam_m.sh[e], 4) == 0 &&
             std::memcmp(&a.adam_v.sh[e], &st.adam_v.sh[e], 4) == 0;
    };
    std::size_t kept_cpu = 0, differ = 0;
    for (std::size_t e = 0; e < st.params.sh.size(); ++e) {
      kept_cpu += kept(after[0], e);
      differ += kept(after[0], e) != kept(after[1], e);
    }
    EXPECT_EQ(differ, 0u) << "elements kept by one backend and updated by the other";
    // Degree 3 is 7 of the 16 coefficients; the 61 splats culled (behind the camera or far
    // outside the view) and those unseen add their 27 below it.
    EXPECT_GT(kept_cpu, st.params.sh.size() * 7 / 16 + 27 * 50)
        << "the scene must have unseen splats, or the test proves little";
    EXPECT_LT(kept_cpu, st.params.sh.size() * 3 / 4) << "most seen splats must move";
  }
}

// train.pose_opt: the step renders from its image's corrected camera and updates that correction
// alone. Each correction starts off the identity with zero moments, so that after one step its
// first moment is 0.1 times its gradient: the CUDA backend's per-splat terms of d loss /
// d [R' | t'] (float, summed in double in a fixed order) against the CPU's (double). One view in
// every submission mode and in deterministic mode, then three steps on alternating images.
TEST(ParityStep, PoseCorrectionsTrainAsOnTheCpu) {
  const TwoTargets t(8642u);
  TrainState st = t.st;
  st.pose = PoseState::identity(2);
  const auto r = random_vector(st.pose.params.size(), 23);
  for (std::size_t i = 0; i < st.pose.params.size(); ++i)
    st.pose.params[i] = 0.01f * r[i];  // a few hundredths of a unit and of a radian
  StepSettings s = step_settings(LossKind::L1Ssim);
  s.lr.pose = 1e-3;
  s.pose_reg = 1e-6;
  const std::vector<BatchView> other{{&t.scene.camera, 1}};
  const std::vector<BatchView>& one = t.one;
  struct Case {
    Submission submission;
    bool deterministic;
    std::vector<std::vector<BatchView>> steps;
  };
  for (const Case& c :
       {Case{Submission::Graph, false, {one}}, Case{Submission::Chained, false, {one}},
        Case{Submission::PerKernel, false, {one}}, Case{Submission::Chained, true, {one}},
        Case{Submission::Chained, false, {one, other, one}}}) {
    const std::string tag = std::string(to_string(c.submission)) +
                            (c.deterministic ? "/deterministic" : "") + ", " +
                            std::to_string(c.steps.size()) + " steps";
    SCOPED_TRACE(tag);
    BackendConfig cuda_cfg;
    cuda_cfg.submission = c.submission;
    cuda_cfg.deterministic = c.deterministic;
    const auto [after, losses] = steps_on_both(cuda_cfg, {&t.first, &t.second}, st, c.steps, s);
    for (std::size_t k = 0; k < c.steps.size(); ++k)
      EXPECT_NEAR(losses[c.steps.size() + k].loss, losses[k].loss, 1e-5 * std::abs(losses[k].loss))
          << k;
    expect_model_updates_agree(tag, after, st);
    const PoseState &cpu = after[0].pose, &gpu = after[1].pose;
    ASSERT_EQ(gpu.params.size(), st.pose.params.size());
    EXPECT_EQ(gpu.steps, cpu.steps);
    // The gradient (0.1 of the first moment after one step): sums over 3000 splats of float terms
    // from a float camera, against double terms from a double camera.
    expect_agree(tag + " pose adam_m", gpu.m, cpu.m,
                 {1e-3, 0.99999, 1e-5, "per-splat float terms of renders that agree, summed"});
    // After three steps the models the later gradients come from differ as float and double
    // updates do: measured on the H200, 1.2e-6 at most of moves of ~2e-3 (one step: under 1e-6).
    const double max_abs = c.steps.size() > 1 ? 1e-5 : 1e-6;
    expect_agree(tag + " pose update", moves(gpu.params, st.pose.params),
                 moves(cpu.params, st.pose.params),
                 {1e-3, 0.9999, max_abs, "Adam on gradients that agree"});
  }
}

}  // namespace
}  // namespace splat
