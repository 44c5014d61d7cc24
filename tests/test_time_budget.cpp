// train.time_budget: the compressed recipe, the plan that fills the budget and no more, the
// re-plans of a simulated run whose steps slow down as splats grow, and a real CPU run that
// stops within its budget.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <functional>

#include "io/demo_scene.h"
#include "test_util.h"
#include "train/backend_factory.h"
#include "train/densify.h"
#include "train/resolution.h"
#include "train/time_budget.h"
#include "train/trainer.h"

namespace splat {
namespace {

Config lego_like_recipe() {
  Config c;
  c.train.iterations = 12500;
  c.densify.cap_max = 400000;
  c.densify.refine_stop = 25000;
  return c;
}

CountProjection mcmc_projection() {
  return [](const Config& c, std::int64_t done, std::size_t n) {
    return make_densifier(c, 1.0)->projected_counts(done, c.train.iterations, n);
  };
}

// A step cost of a + b * splats seconds, as the H200 measures Lego (0.65 ms + 1.33 ms per
// million splats), given to StepCost as two measurements at different counts.
constexpr double kA = 0.65e-3, kB = 1.33e-9;
StepCost linear_cost() {
  StepCost cost;
  cost.add(100000, kA + kB * 100000);
  cost.add(300000, kA + kB * 300000);
  return cost;
}

double predicted(const Config& recipe, double s, std::int64_t done, std::size_t splats) {
  const Config c = compressed_recipe(recipe, s);
  return linear_cost().remaining(done, c.train.iterations, splats,
                                 mcmc_projection()(c, done, splats));
}

TEST(TimeBudget, CompressedRecipeScalesEveryStepSchedule) {
  Config recipe = lego_like_recipe();
  recipe.densify.reset_every = 3000;
  const Config half = compressed_recipe(recipe, 0.5);
  EXPECT_EQ(half.train.iterations, 6250);
  EXPECT_EQ(half.train.sh_increase_every, 500);
  EXPECT_EQ(half.densify.refine_start, 250);
  EXPECT_EQ(half.densify.refine_stop, 12500);
  EXPECT_EQ(half.densify.reset_every, 1500);
  EXPECT_EQ(half.densify.fastgs_final_every, 1500);
  EXPECT_EQ(half.densify.fastgs_final_stop, 15000);
  // What is not a step count stays.
  EXPECT_EQ(half.densify.refine_every, recipe.densify.refine_every);
  EXPECT_EQ(half.densify.cap_max, recipe.densify.cap_max);
  EXPECT_EQ(half.train.lr_means, recipe.train.lr_means);
  const Config tiny = compressed_recipe(recipe, 1e-9);
  EXPECT_EQ(tiny.train.iterations, 1);
  EXPECT_EQ(tiny.train.sh_increase_every, 1);
  recipe.densify.reset_every = 0;  // never stays never
  EXPECT_EQ(compressed_recipe(recipe, 0.5).densify.reset_every, 0);
}

TEST(TimeBudget, AFittingRecipeIsNotCompressed) {
  const Config recipe = lego_like_recipe();
  const double full = predicted(recipe, 1.0, 100, 100000);
  EXPECT_EQ(plan_compression(recipe, linear_cost(), mcmc_projection(), 100, 100000, full + 1.0),
            1.0);
}

TEST(TimeBudget, ThePlanFillsTheBudgetAndNoMore) {
  const Config recipe = lego_like_recipe();
  const double full = predicted(recipe, 1.0, 100, 100000);
  for (double fraction : {0.8, 0.5, 0.2, 0.05}) {
    const double budget = fraction * full;
    const double s =
        plan_compression(recipe, linear_cost(), mcmc_projection(), 100, 100000, budget);
    EXPECT_LT(s, 1.0);
    EXPECT_LE(predicted(recipe, s, 100, 100000), budget) << fraction;
    // Maximal: a recipe one percent longer would not fit.
    EXPECT_GT(predicted(recipe, s * 1.01, 100, 100000), budget) << fraction;
  }
}

TEST(TimeBudget, ABudgetTooSmallForAnyRecipeLeavesOneStep) {
  const Config recipe = lego_like_recipe();
  const double s = plan_compression(recipe, linear_cost(), mcmc_projection(), 100, 100000, 0.0);
  EXPECT_EQ(compressed_recipe(recipe, s).train.iterations, 101);
}

// Seconds of one step at a count and a resolution factor.
using TrueCost = std::function<double(std::size_t splats, int factor)>;

struct SimulatedRun {
  std::int64_t steps = 0, planned = 0;  // steps run; the last plan's iterations
  double elapsed = 0;
  int plans = 0, factor = 0;
  double compression = 0;
};

// A run simulated step by step, as Trainer::train runs it: the count grows as MCMC grows it, the
// resolution only rises, each change of it costs `switch_seconds` (the backend drains, the next
// step is captured anew). The planner sees only the elapsed times and each step's factor.
SimulatedRun simulate(const Config& recipe,
                      double budget,
                      const TrueCost& cost,
                      double switch_seconds = 0) {
  TimeBudget tb(recipe, budget, mcmc_projection());
  Config cfg = recipe;
  std::size_t splats = std::size_t(recipe.model.init_points);
  SimulatedRun run;
  run.factor = std::max(1, int(recipe.train.coarse_factor));
  while (run.steps < cfg.train.iterations && !tb.spent(run.elapsed)) {
    const int factor = std::min(run.factor, resolution_factor(cfg.train, run.steps));
    if (factor != run.factor) run.elapsed += switch_seconds;
    run.factor = factor;
    run.elapsed += cost(splats, factor);
    ++run.steps;
    const auto next = mcmc_projection()(cfg, run.steps - 1, splats);
    if (!next.empty() && next.front().first == run.steps) splats = next.front().second;
    if (auto planned = tb.after_step(run.steps, splats, run.elapsed, factor))
      cfg = *planned, ++run.plans;
  }
  run.planned = cfg.train.iterations;
  run.compression = tb.compression();
  return run;
}

// The same recipe's time, every step at its true cost and the schedule fixed.
double true_seconds(const Config& recipe, const TrueCost& cost) {
  return simulate(recipe, 1e30, cost).elapsed;
}

// Each step costs a + b * splats; with coarse-to-fine, 70% of that cost is per pixel (a factor f
// step costs 0.3 + 0.7 / f^2 of a full one). The plan must end the run near the budget.
TEST(TimeBudget, ASimulatedRunEndsNearItsBudget) {
  const TrueCost cost = [](std::size_t splats, int f) {
    return (kA + kB * double(splats)) * (0.3 + 0.7 / double(f * f));
  };
  for (const int coarse : {1, 4}) {
    Config recipe = lego_like_recipe();
    recipe.train.coarse_factor = coarse;
    recipe.train.coarse_until = coarse > 1 ? recipe.train.iterations / 3 : 0;
    const double full = predicted(recipe, 1.0, 0, 100000);
    for (double fraction : {0.3, 0.6}) {
      SCOPED_TRACE("coarse factor " + std::to_string(coarse) + ", budget " +
                   std::to_string(fraction) + " of the full recipe's time");
      const double budget = fraction * full;
      const SimulatedRun run = simulate(recipe, budget, cost);
      EXPECT_GE(run.plans, 2) << "a first plan and at least one re-plan";
      EXPECT_EQ(run.steps, run.planned) << "the plan, not the hard stop, ended the run";
      EXPECT_EQ(run.factor, 1) << "the run reached full resolution";
      EXPECT_LE(run.elapsed, budget);
      EXPECT_GT(run.elapsed, 0.97 * budget) << "the plan wasted budget";
      EXPECT_NEAR(run.compression, double(run.planned) / 12500.0, 1e-3);
    }
  }
}

// Fox at full size on an H100 (10,000 steps, coarse from 1/4 size to step 5,000, MCMC to 590k):
// a step costs (0.10 + 2.48 x) ms + (2.05 + 1.81 x) ms per million splats, x the pixels relative
// to full size (fitted to the 2026-12-06 run's step rates at 1/4, 1/2 and full size), and a change
// of resolution 30 ms. The first 1/2-size measurements (one count) must not read as a cost that
// ends the coarse steps: the run takes about the steps of the best fixed compression that fits.
TEST(TimeBudget, AFoxLikeRunKeepsItsCoarseSteps) {
  const TrueCost cost = [](std::size_t splats, int f) {
    const double x = 1.0 / double(f * f);
    return (0.10e-3 + 2.48e-3 * x) + (2.05e-9 + 1.81e-9 * x) * double(splats);
  };
  Config recipe;
  recipe.train.iterations = 10000;
  recipe.train.coarse_factor = 4;
  recipe.train.coarse_until = 5000;
  recipe.densify.cap_max = 590000;
  recipe.densify.refine_start = 167;
  recipe.densify.refine_stop = 8333;
  const double full = true_seconds(recipe, cost);
  for (double fraction : {0.95, 0.5}) {
    SCOPED_TRACE("budget " + std::to_string(fraction) + " of the recipe's time");
    const double budget = fraction * full;
    // The best fixed compression: the largest whose true time fits (bisection).
    double lo = 0, hi = 1;
    for (int i = 0; i < 40; ++i) {
      const double mid = 0.5 * (lo + hi);
      (true_seconds(compressed_recipe(recipe, mid), cost) <= budget ? lo : hi) = mid;
    }
    const std::int64_t best = compressed_recipe(recipe, lo).train.iterations;
    const SimulatedRun run = simulate(recipe, budget, cost, 0.030);
    EXPECT_EQ(run.steps, run.planned) << "the plan, not the hard stop, ended the run";
    EXPECT_LE(run.elapsed, budget);
    EXPECT_GE(double(run.steps), 0.97 * double(best)) << "best fixed compression: " << best;
  }
}

TEST(TimeBudget, ACpuRunStopsWithinItsBudget) {
  Config cfg;
  cfg.model.init_points = 2000;
  cfg.train.iterations = 1000000;  // a recipe far longer than the budget
  cfg.train.time_budget = 1.5;
  cfg.train.log_every = 0;
  cfg.backend.type = BackendKind::Cpu;
  const Dataset data = load_blender(test::small_demo_scene(), LoadOptions{});
  auto backend = make_backend(cfg.backend);
  Trainer t(cfg, data, *backend);
  t.initialize();
  // The wall time of every step boundary, through the per-step snapshot hook (it never asks for a
  // snapshot): a run can only stop at a boundary, so the overshoot is bounded by the longest step.
  std::vector<std::chrono::steady_clock::time_point> ends{std::chrono::steady_clock::now()};
  t.set_snapshots(
      [&](std::int64_t) {
        ends.push_back(std::chrono::steady_clock::now());
        return false;
      },
      [](std::int64_t, Gaussians) {});
  t.train(nullptr);
  EXPECT_FALSE(t.interrupted());
  EXPECT_EQ(t.config().train.iterations, t.iteration()) << "the config holds what the run did";
  EXPECT_LT(t.iteration(), 1000000);
  ASSERT_EQ(ends.size(), std::size_t(t.iteration()) + 1);
  double longest = 0;
  for (std::size_t i = 1; i < ends.size(); ++i)
    longest = std::max(longest, std::chrono::duration<double>(ends[i] - ends[i - 1]).count());
  // It ends by its plan, or at the first step boundary past the budget: at most one step (the
  // longest seen, as a loaded 2-core machine can stall any of them) past it, plus the final sync.
  EXPECT_LE(t.train_seconds(), 1.5 + longest + 0.1) << "longest step " << longest << " s";
  EXPECT_GT(t.train_seconds(), 0.5 * 1.5);
}

}  // namespace
}  // namespace splat
