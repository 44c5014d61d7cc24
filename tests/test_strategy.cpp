// Densification strategies as a family (strategy/strategy.h): a strategy defined and registered
// here, outside the library, is chosen by its densify.strategy name and runs its tick on the CPU
// backend through Backend::refine, with no edit of Backend; an unknown name is an error that names
// the key and the registered strategies.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>

#include "core/error.h"
#include "core/math.h"
#include "cpu/refine_cpu.h"
#include "strategy/strategy.h"
#include "train/backend_factory.h"
#include "train/config.h"
#include "train/densify.h"

namespace splat {
namespace {

// A tick with a CPU implementation only: every opacity halves.
class HalveOpacityTick final : public RefineTick {
 public:
  RefineStats run_cpu(cpu::RefineContext& ctx) override {
    for (float& raw : ctx.state.params.raw_opacity) {
      const float o = sigmoid(raw) / 2;
      raw = std::log(o / (1 - o));
    }
    return {.count = ctx.state.params.size()};
  }
};

// Halves the opacities every densify.refine_every steps.
class HalveOpacity final : public Densifier {
 public:
  explicit HalveOpacity(std::int64_t every) : every_(every) {}
  void step_settings(std::int64_t, StepSettings&) const override {}
  std::optional<RefineStats> after_step(std::int64_t completed, Backend& b) override {
    if (completed % every_ != 0) return std::nullopt;
    return b.refine(HalveOpacityTick());
  }

 private:
  std::int64_t every_;
};

// Registered on first use (the registry outlives the test; a second registration is an error).
void register_halve_opacity() {
  static const bool once = [] {
    register_strategy("halve_opacity", [](const StrategyContext& ctx) {
      return std::make_unique<HalveOpacity>(ctx.cfg.refine_every);
    });
    return true;
  }();
  (void)once;
}

#define EXPECT_HAS(haystack, needle)                    \
  EXPECT_NE((haystack).find(needle), std::string::npos) \
      << "missing '" << (needle) << "' in: " << (haystack)

std::string error_of(auto&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(StrategyFamily, ARegisteredStrategyRunsByNameOnTheBackend) {
  register_halve_opacity();
  Config cfg;
  cfg.backend.type = BackendKind::Cpu;
  apply_override(cfg, "densify.strategy=halve_opacity");  // the config knows the new name
  apply_override(cfg, "densify.refine_every=2");
  cfg.validate();
  const auto densifier = make_densifier(cfg, 1.0);
  const auto backend = make_backend(cfg.backend);
  TrainState st;
  for (Gaussians* g : {&st.params, &st.adam_m, &st.adam_v}) g->resize(3);
  st.params.raw_opacity = {-1.0f, 0.0f, 2.0f};
  backend->set_state(st);

  EXPECT_FALSE(densifier->after_step(1, *backend));
  const std::optional<RefineStats> tick = densifier->after_step(2, *backend);
  ASSERT_TRUE(tick);
  EXPECT_EQ(tick->count, 3u);
  const TrainState got = backend->state();
  for (std::size_t i = 0; i < 3; ++i)
    EXPECT_NEAR(sigmoid(got.params.raw_opacity[i]), sigmoid(st.params.raw_opacity[i]) / 2, 1e-6)
        << i;
  EXPECT_HAS(error_of([] { register_halve_opacity(), register_strategy("halve_opacity", {}); }),
             "a strategy named 'halve_opacity' exists");
}

// MCMC's regularizers are weights against the photometric loss, a mean over every pixel: where the
// subject covers only a share of the pixels (alpha composited on the background), they are scaled
// by that share; photographs (and masked images, whose loss counts only the mask) keep them as set.
TEST(StrategyFamily, McmcScalesItsRegularizersByTheSubjectsShareOfThePixels) {
  View photo_view, cut_view;
  photo_view.image = Image8(4, 2, 3);  // 8 pixels, all subject
  cut_view.image = Image8(4, 4, 3);    // 16 pixels, 0.35 of them subject (View::coverage)
  cut_view.coverage = 0.35;
  EXPECT_EQ(training_coverage({photo_view}), 1.0);
  EXPECT_EQ(training_coverage({cut_view}), 0.35);
  EXPECT_NEAR(training_coverage({photo_view, cut_view}), (8 + 16 * 0.35) / 24, 1e-15);

  Config cfg;
  cfg.densify.opacity_reg = 0.01;
  cfg.densify.scale_reg = 0.02;
  StepSettings photo, cut_out;
  make_densifier(cfg, 1.0, nullptr, 1.0)->step_settings(0, photo);
  make_densifier(cfg, 1.0, nullptr, 0.35)->step_settings(0, cut_out);
  EXPECT_EQ(photo.opacity_reg, 0.01);
  EXPECT_EQ(photo.scale_reg, 0.02);
  EXPECT_NEAR(cut_out.opacity_reg, 0.0035, 1e-15);
  EXPECT_NEAR(cut_out.scale_reg, 0.007, 1e-15);
}

TEST(StrategyFamily, AnUnknownNameListsTheRegisteredOnes) {
  Config cfg;
  cfg.densify.strategy = "mcmcc";
  const std::string made = error_of([&] { make_densifier(cfg, 1.0); });
  EXPECT_HAS(made, "densify.strategy = \"mcmcc\" is not a strategy");
  EXPECT_HAS(made, "did you mean \"mcmc\"?");
  EXPECT_HAS(made, "registered: none, mcmc, adc");
  EXPECT_HAS(error_of([&] { cfg.validate(); }), "config: densify.strategy = \"mcmcc\"");
  Config file;
  const std::string read =
      error_of([&] { apply_config_text(file, "[densify]\nstrategy = \"splats\"\n", "run.toml"); });
  EXPECT_HAS(read, "run.toml:2");
  EXPECT_HAS(read, "densify.strategy = \"splats\" is not a strategy (registered: none, mcmc, adc");
  EXPECT_EQ(file.densify.strategy, "mcmc");  // the bad value did not land
}

}  // namespace
}  // namespace splat
