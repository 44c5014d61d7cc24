// The training loop's observers (train/observer.h), each driven alone by a made-up sequence of
// steps, no training: when the checkpoint schedules write, when the time budget stops on a fake
// clock, what metrics.jsonl gets, when the checks run, what the progress notes say.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "report/history.h"
#include "test_util.h"
#include "train/budget_observer.h"
#include "train/checkpoints.h"
#include "train/loss_log.h"
#include "train/periodic_eval.h"
#include "train/run_checks.h"
#include "train/show_progress.h"
#include "train/snapshots.h"

namespace splat {
namespace {

StepInfo step(std::int64_t completed, std::int64_t total) {
  return {.completed = completed, .total = total, .splats = 100};
}

// The steps of 1..total at which the observer's due() holds, running on_due() there.
std::vector<std::int64_t> due_steps(TrainObserver& o, std::int64_t total) {
  std::vector<std::int64_t> due;
  for (std::int64_t i = 1; i <= total; ++i)
    if (o.due(step(i, total))) {
      due.push_back(i);
      o.on_due(step(i, total));
    }
  return due;
}

TEST(TrainObservers, StepCheckpointsEveryNStepsButNotAtTheLast) {
  std::vector<std::int64_t> written;
  StepCheckpoints every_100(100, [&](std::int64_t s) { written.push_back(s); });
  EXPECT_EQ(due_steps(every_100, 350), (std::vector<std::int64_t>{100, 200, 300}));
  EXPECT_EQ(written, (std::vector<std::int64_t>{100, 200, 300}));
  written.clear();
  EXPECT_EQ(due_steps(every_100, 300), (std::vector<std::int64_t>{100, 200}));  // 300: the final
  // A rank that does not write pauses at the same steps.
  StepCheckpoints silent(100, nullptr);
  EXPECT_EQ(due_steps(silent, 250), (std::vector<std::int64_t>{100, 200}));
  StepCheckpoints off(0, [&](std::int64_t s) { written.push_back(s); });
  EXPECT_TRUE(due_steps(off, 1000).empty());
}

TEST(TrainObservers, TimedCheckpointsFollowTheirClock) {
  double now = 1000;  // seconds
  int written = 0;
  TimedCheckpoints timed(
      1.0, [&] { ++written; }, [&] { return now; });
  std::vector<std::int64_t> due;
  for (std::int64_t i = 1; i <= 10; ++i) {
    now += 25;  // a step takes 25 s: a minute has passed after steps 3, 6 and 9 (since the last)
    if (timed.due(step(i, 10))) {
      due.push_back(i);
      timed.on_due(step(i, 10));
    }
  }
  EXPECT_EQ(due, (std::vector<std::int64_t>{3, 6, 9}));
  EXPECT_EQ(written, 3);
  now += 1000;
  EXPECT_FALSE(timed.due(step(10, 10)));  // never at the last step
}

Config budget_recipe(double seconds) {
  Config c;
  c.train.iterations = 1000;
  c.train.time_budget = seconds;
  c.densify.strategy = "none";
  return c;
}

CountProjection no_growth() {
  return [](const Config&, std::int64_t, std::size_t) { return StepChanges{}; };
}

// Runs steps 1.. until the planned total with `elapsed(step)` seconds after each step; returns
// the steps run, the planned totals and the notes.
struct BudgetRun {
  std::int64_t steps = 0;
  std::vector<std::int64_t> plans;
  std::vector<std::string> notes;
};
BudgetRun run_budget(double seconds, const std::function<double(std::int64_t)>& elapsed_after) {
  BudgetRun r;
  std::int64_t total = 1000, done = 0;
  BudgetObserver budget(
      budget_recipe(seconds), no_growth(), [&] { return elapsed_after(done); },
      [&](const Config& c) {
        total = c.train.iterations;
        r.plans.push_back(total);
      },
      [&](const std::string& line) { r.notes.push_back(line); });
  while (done < total) {
    ++done;
    budget.on_step(step(done, total));
  }
  r.steps = done;
  return r;
}

TEST(TrainObservers, BudgetPlansTheStepsThatFit) {
  // 10 ms a step: a 2 s budget fits about 200 of the recipe's 1000 steps.
  const BudgetRun r = run_budget(2.0, [](std::int64_t s) { return 0.01 * double(s); });
  ASSERT_FALSE(r.plans.empty());
  EXPECT_GT(r.steps, 180);
  EXPECT_LE(r.steps, 200);
  ASSERT_FALSE(r.notes.empty());
  EXPECT_NE(r.notes.front().find("iterations planned"), std::string::npos) << r.notes.front();
  // Re-plans that move the total by a tenth or less are not noted.
  EXPECT_LT(r.notes.size(), r.plans.size());
}

TEST(TrainObservers, BudgetStopsWhenTheClockPassesIt) {
  // Steps of 1 ms, and then a stall at step 50 that spends the 2 s budget at once.
  const BudgetRun r =
      run_budget(2.0, [](std::int64_t s) { return s < 50 ? 0.001 * double(s) : 5.0; });
  EXPECT_EQ(r.steps, 50);
  EXPECT_EQ(r.plans.back(), 50);
  EXPECT_EQ(r.notes.back(), "time budget 2 s spent: stopping at iteration 50");
}

TEST(TrainObservers, LossLogRecordsEveryLogEverySteps) {
  const auto dir = test::temp_dir("observers_loss_log");
  const std::string path = (dir / "metrics.jsonl").string();
  double now = 10;
  std::size_t splats = 500;
  {
    History history(path, 0);
    LossLog log(
        history, 0, 5, [&] { return now; }, [&] { return splats; });
    for (std::int64_t s = 1; s <= 12; ++s) {
      now += 0.5;
      if (s == 8) splats = 700;
      log.on_loss(s, 1.0 / double(s));
    }
  }
  const std::vector<nlohmann::json> records = read_history(path);
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0]["step"], 5);
  EXPECT_DOUBLE_EQ(records[0]["loss"].get<double>(), 0.2);
  EXPECT_DOUBLE_EQ(records[0]["elapsed"].get<double>(), 12.5);
  EXPECT_DOUBLE_EQ(records[0]["its_per_s"].get<double>(), 5 / 2.5);
  EXPECT_EQ(records[0]["splats"], 500);
  EXPECT_EQ(records[1]["step"], 10);
  EXPECT_EQ(records[1]["splats"], 700);
  EXPECT_DOUBLE_EQ(records[1]["its_per_s"].get<double>(), 5 / 2.5);
  // The smoothed loss is a mean of the losses so far, between the first and the last.
  const double smoothed = records[1]["loss_smoothed"].get<double>();
  EXPECT_GT(smoothed, 0.1);
  EXPECT_LT(smoothed, 1.0);
}

TEST(TrainObservers, PeriodicEvalRecordsAndNotes) {
  const auto dir = test::temp_dir("observers_eval");
  const std::string path = (dir / "metrics.jsonl").string();
  std::vector<std::string> notes;
  std::vector<std::int64_t> due;
  {
    History history(path, 0);
    PeriodicEval eval(
        40,
        [] {
          EvalResult e;
          e.views.resize(3);
          e.mean_psnr = 25.5;
          e.mean_ssim = 0.875;
          return e;
        },
        history, [] { return 7.0; }, [&](const std::string& l) { notes.push_back(l); });
    due = due_steps(eval, 120);
  }
  EXPECT_EQ(due, (std::vector<std::int64_t>{40, 80}));
  ASSERT_EQ(notes.size(), 2u);
  EXPECT_EQ(notes[0], "eval at 40: PSNR 25.500 dB, SSIM 0.8750 over 3 test views");
  const std::vector<nlohmann::json> records = read_history(path);
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[1]["step"], 80);
  EXPECT_DOUBLE_EQ(records[1]["elapsed"].get<double>(), 7.0);
  EXPECT_DOUBLE_EQ(records[1]["eval"]["psnr"].get<double>(), 25.5);
  EXPECT_EQ(records[1]["eval"]["views"], 3);
}

TEST(TrainObservers, DivergenceChecksEarlyStepsThenEveryNAndTheLast) {
  std::vector<std::int64_t> checked;
  std::int64_t at = 0;
  DivergenceChecks checks(200, 3, 100, [&] { checked.push_back(at); });
  for (at = 201; at <= 450; ++at) checks.on_step(step(at, 450));
  EXPECT_EQ(checked, (std::vector<std::int64_t>{201, 202, 203, 300, 400, 450}));
}

TEST(TrainObservers, DigestChecksEveryNAndAtAnEndWithout) {
  std::vector<std::string> checked;
  auto run = [&](std::int64_t total, bool stopped) {
    checked.clear();
    DigestChecks digests(30, [&](const std::string& when) { checked.push_back(when); });
    for (std::int64_t i = 1; i <= total; ++i) digests.on_step(step(i, total));
    digests.on_end(step(total, total), stopped);
    return checked;
  };
  EXPECT_EQ(run(100, false),
            (std::vector<std::string>{"at iteration 30", "at iteration 60", "at iteration 90",
                                      "at the end of training"}));
  EXPECT_EQ(run(100, true).size(), 3u);  // a stopped run: its ranks check nothing more
  EXPECT_EQ(run(90, false).back(), "at iteration 90");  // the last step had one
}

TEST(TrainObservers, SnapshotsDrainBeforeTaking) {
  std::vector<std::string> calls;
  Snapshots snapshots(
      [](std::int64_t i) { return i % 3 == 0; },
      [&](std::int64_t i, Gaussians g) {
        calls.push_back("take " + std::to_string(i) + " " + std::to_string(g.size()));
      },
      [&] { calls.push_back("drain"); },
      [] {
        Gaussians g;
        g.resize(4);
        return g;
      });
  for (std::int64_t i = 1; i <= 7; ++i) snapshots.on_step(step(i, 7));
  EXPECT_EQ(calls, (std::vector<std::string>{"drain", "take 3 4", "drain", "take 6 4"}));
}

TEST(TrainObservers, ProgressNotesRefineTicksEveryTenLogIntervals) {
  const auto ahead = [](std::int64_t, std::int64_t, std::size_t) { return Progress::Ahead{}; };
  ShowProgress adc(0, 1000, 10, "adc", ahead);
  ShowProgress mcmc(0, 1000, 10, "mcmc", ahead);
  ShowProgress fastgs(0, 1000, 10, "fastgs", ahead);
  const RefineStats tick{.dead = 4, .added = 5, .cloned = 1, .split = 2, .pruned = 3, .count = 40};
  testing::internal::CaptureStderr();
  adc.on_refine(50, tick);  // not a multiple of 10 x log_every: no note
  adc.on_refine(100, tick);
  mcmc.on_refine(200, tick);
  fastgs.on_refine(300, tick);
  EXPECT_EQ(testing::internal::GetCapturedStderr(),
            "refine at 100: 1 cloned, 2 split, 3 pruned, 40 splats\n"
            "refine at 200: 4 relocated, 5 added, 40 splats\n"
            "refine at 300: 1 cloned, 2 split, 3 pruned, 40 splats\n");
}

}  // namespace
}  // namespace splat
