// `splat train` as a user meets it: the command line parses as written, mistakes are caught before
// any work, a previous run is never silently replaced, Ctrl-C saves the run, and the history of a
// run is written as it trains.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "io/checkpoint.h"
#include "report/history.h"
#include "test_util.h"

namespace splat {
namespace {

namespace fs = std::filesystem;

// A short CPU run on the small demo scene; `extra` goes last.
std::string train_args(const fs::path& out, const std::string& extra = "") {
  return test::short_train_args(test::small_demo_scene(), out, extra);
}

TEST(TrainCli, SetTakesOneValueSoDataMayFollow) {
  const auto dir = test::temp_dir("cli_set_order");
  const auto r = test::run_splat(
      "train --set train.iterations=5 --set backend.type=cpu --set model.init_points=300 --out " +
      (dir / "o").string() + " " + test::small_demo_scene());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(fs::exists(dir / "o" / "model.ply"));
}

TEST(TrainCli, UnknownCommandSuggestsTheNearest) {
  const auto r = test::run_splat("trian x");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_MENTIONS(r.output, "did you mean 'train'");
}

TEST(TrainCli, DownscaleOutOfRangeSaysTheRange) {
  const auto r = test::run_splat("train x --downscale 0");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_MENTIONS(r.output, "1 to 64");
  EXPECT_LT(r.output.size(), 200u) << r.output;  // not a 309-digit bound
}

TEST(TrainCli, MissingDataFailsBeforeAnyOutput) {
  const auto dir = test::temp_dir("cli_missing");
  const auto r = test::run_splat("train " + (dir / "no_such_scene").string() + " --out " +
                                 (dir / "o").string());
  EXPECT_NE(r.exit_code, 0);
  EXPECT_MENTIONS(r.output, "no_such_scene");
  EXPECT_EQ(r.output.find("resolved config"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(dir / "o"));
}

TEST(TrainCli, ConflictingOptionsNameBoth) {
  const auto dir = test::temp_dir("cli_conflict");
  auto r = test::run_splat(train_args(dir / "a", "--downscale 2 --set data.downscale=4"));
  EXPECT_NE(r.exit_code, 0);
  test::expect_contains(r.output, {"--downscale 2", "data.downscale=4"});
  r = test::run_splat(train_args(dir / "b", "--gpus 1"));
  EXPECT_NE(r.exit_code, 0);
  test::expect_contains(r.output, {"--gpus 1", "backend.type"});
  EXPECT_FALSE(fs::exists(dir / "b" / "model.ply"));
}

TEST(TrainCliSlow, PreviousRunIsKeptUnlessOverwritten) {
  const auto dir = test::temp_dir("cli_outdir");
  const auto out = dir / "o";
  ASSERT_EQ(test::run_splat(train_args(out, "--set output.checkpoint_every=10")).exit_code, 0);
  ASSERT_TRUE(fs::exists(out / "checkpoint_10.ckpt"));
  const auto first = fs::last_write_time(out / "model.ply");
  auto r = test::run_splat(train_args(out));
  EXPECT_NE(r.exit_code, 0);
  test::expect_contains(r.output, {"previous run", "--overwrite", "--resume"});
  EXPECT_EQ(r.output.find("loaded"), std::string::npos) << "refused only after loading:\n"
                                                        << r.output;
  EXPECT_EQ(fs::last_write_time(out / "model.ply"), first);
  // --overwrite replaces it, leaving no file of the old run behind.
  r = test::run_splat(train_args(out, "--overwrite --set output.save_checkpoint=false"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_FALSE(fs::exists(out / "checkpoint_10.ckpt"));
  EXPECT_FALSE(fs::exists(out / "checkpoint.ckpt"));
  for (const auto& e : fs::directory_iterator(out))
    EXPECT_NE(e.path().extension(), ".tmp") << e.path();
}

TEST(TrainCli, UnusableOutDirFailsBeforeLoading) {
  const auto dir = test::temp_dir("cli_outfile");
  std::ofstream(dir / "file") << "x";
  auto r = test::run_splat(train_args(dir / "file"));
  EXPECT_NE(r.exit_code, 0);
  test::expect_contains(r.output, {"file", "not a directory"});
  r = test::run_splat(train_args("/proc/splat_cannot_write_here"));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_MENTIONS(r.output, "/proc/splat_cannot_write_here");
  EXPECT_EQ(r.output.find("loaded"), std::string::npos) << r.output;
}

TEST(TrainCli, InterruptSavesCheckpointAndModelThenResumes) {
  const auto dir = test::temp_dir("cli_sigint");
  const auto out = dir / "o";
  // Starts a long run, waits for its first history record (training has begun), sends SIGINT.
  const std::string run = std::string(SPLAT_BINARY) + " " +
                          train_args(out, "--set train.iterations=100000 --set train.log_every=1") +
                          " > " + (dir / "log").string() + " 2>&1 & pid=$!; " +
                          "for i in $(seq 600); do [ -s " + (out / "metrics.jsonl").string() +
                          " ] && break; sleep 0.1; done; kill -INT $pid; wait $pid";
  const auto r = test::run_command(run);
  std::ifstream log_file(dir / "log");
  const std::string log((std::istreambuf_iterator<char>(log_file)), {});
  EXPECT_EQ(r.exit_code, 130) << log;
  test::expect_contains(
      log, {"stopped by SIGINT", "resume with:", "--resume " + (out / "checkpoint.ckpt").string()});
  ASSERT_TRUE(fs::exists(out / "model.ply"));
  const Checkpoint c = read_checkpoint((out / "checkpoint.ckpt").string());
  EXPECT_GT(c.iteration, 0);
  EXPECT_LT(c.iteration, 100000);
  // The resume command it printed continues the run (to a shorter end here).
  const auto resumed = test::run_splat(
      "train " + test::small_demo_scene() + " --resume " + (out / "checkpoint.ckpt").string() +
      " --out " + out.string() + " --set train.iterations=" + std::to_string(c.iteration + 5));
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  nlohmann::json m = nlohmann::json::parse(std::ifstream(out / "metrics.json"));
  EXPECT_EQ(m["iterations"], c.iteration + 5);
}

TEST(TrainCliSlow, HistoryRecordsLossesAndEvaluations) {
  const auto dir = test::temp_dir("cli_history");
  const auto out = dir / "o";
  const auto r =
      test::run_splat(train_args(out, "--set train.log_every=5 --set train.eval_every=10"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_MENTIONS(r.output, "eval at 10: PSNR");
  const auto h = read_history((out / "metrics.jsonl").string());
  std::vector<std::int64_t> loss_steps, eval_steps;
  for (const auto& j : h) {
    if (j.contains("eval")) {
      eval_steps.push_back(j["step"]);
      EXPECT_GT(j["eval"]["psnr"].get<double>(), 5.0);
      EXPECT_EQ(j["eval"]["views"], 4);
    } else {
      loss_steps.push_back(j["step"]);
      for (const char* k : {"elapsed", "loss", "loss_smoothed", "splats", "its_per_s"})
        EXPECT_TRUE(j.contains(k)) << k;
    }
  }
  EXPECT_EQ(loss_steps, (std::vector<std::int64_t>{5, 10, 15, 20}));
  EXPECT_EQ(eval_steps, (std::vector<std::int64_t>{10}));  // the final evaluation is metrics.json's
}

TEST(TrainCli, ResumedHistoryDropsRecordsPastTheCheckpoint) {
  const auto dir = test::temp_dir("cli_history_resume");
  const auto path = (dir / "metrics.jsonl").string();
  {
    std::ofstream f(path);
    for (int s : {5, 10, 15}) f << nlohmann::json{{"step", s}, {"elapsed", s * 0.5}}.dump() << "\n";
    f << "{\"step\": 20, \"ela";  // torn by a kill
  }
  {
    History h(path, 10);
    EXPECT_DOUBLE_EQ(h.resumed_elapsed(), 5.0);
    h.add({{"step", 11}});
  }
  std::vector<std::int64_t> steps;
  for (const auto& j : read_history(path)) steps.push_back(j["step"]);
  EXPECT_EQ(steps, (std::vector<std::int64_t>{5, 10, 11}));
}

TEST(TrainCli, EvalOfCheckpointUsesItsDownscale) {
  const auto dir = test::temp_dir("cli_eval_downscale");
  const auto out = dir / "o";
  ASSERT_EQ(test::run_splat(train_args(out, "--downscale 2")).exit_code, 0);
  const auto e = test::run_splat("eval " + (out / "checkpoint.ckpt").string() + " " +
                                 test::small_demo_scene() + " --set backend.type=cpu --out " +
                                 (dir / "e").string());
  ASSERT_EQ(e.exit_code, 0) << e.output;
  const auto trained = nlohmann::json::parse(std::ifstream(out / "metrics.json"));
  const auto evaluated = nlohmann::json::parse(std::ifstream(dir / "e" / "metrics.json"));
  EXPECT_NEAR(evaluated["psnr"].get<double>(), trained["psnr"].get<double>(), 1e-6);
  EXPECT_NEAR(evaluated["cc_psnr"].get<double>(), trained["cc_psnr"].get<double>(), 1e-6);
}

}  // namespace
}  // namespace splat
