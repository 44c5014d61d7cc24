// The output-folder rules (io/run_dir.h, app/common.h open_out_dir) as a careless user meets
// them: a folder of their own given as --out, two runs into one folder, a run that failed, a disk
// that cannot take the outputs. splat deletes or replaces only what it wrote, one run writes into
// a folder at a time, and the model is saved before the checkpoint.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

#include "bad_input_util.h"
#include "io/ply.h"
#include "io/run_dir.h"
#include "test_util.h"

namespace splat {
namespace {

namespace fs = std::filesystem;

// A short CPU run on the small demo scene; `extra` goes last.
std::string train_args(const fs::path& out, const std::string& extra = "") {
  return test::short_train_args(test::small_demo_scene(), out, extra);
}

// The demo at the size of the tests (it generates its 256 x 256 scene first).
std::string demo_args(const fs::path& out) {
  return "demo --out " + out.string() +
         " --set model.init_points=300 --set train.iterations=5 --set backend.type=cpu";
}

std::string contents(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

// A folder of the user's with a renders/ of their own and a file beside it.
void write_users_files(const fs::path& out) {
  test::write_text(out / "renders" / "mine.png", "the user's picture");
  test::write_text(out / "renders" / "test" / "notes.txt", "the user's notes");
  test::write_text(out / "thesis.tex", "the user's thesis");
}

void expect_users_files(const fs::path& out) {
  EXPECT_EQ(contents(out / "renders" / "mine.png"), "the user's picture");
  EXPECT_EQ(contents(out / "renders" / "test" / "notes.txt"), "the user's notes");
  EXPECT_EQ(contents(out / "thesis.tex"), "the user's thesis");
}

TEST(BadInputOutDirSlow, OverwriteDeletesNothingSplatDidNotWrite) {
  const auto dir = test::temp_dir("out_overwrite_users");
  write_users_files(dir / "o");
  auto r = test::run_splat(train_args(dir / "o"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = test::run_splat(train_args(dir / "o", "--overwrite"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  expect_users_files(dir / "o");
  EXPECT_TRUE(fs::exists(dir / "o" / "model.ply"));
}

TEST(BadInputOutDirSlow, DemoDeletesNothingSplatDidNotWrite) {
  const auto dir = test::temp_dir("out_demo_users");
  write_users_files(dir / "o");
  const auto r = test::run_splat(demo_args(dir / "o"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  expect_users_files(dir / "o");
}

TEST(BadInputOutDirSlow, DemoReplacesAnEarlierDemoButNotATrainingRun) {
  const auto dir = test::temp_dir("out_demo_run");
  auto r = test::run_splat(demo_args(dir / "demo"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = test::run_splat(demo_args(dir / "demo"));
  EXPECT_EQ(r.exit_code, 0) << r.output;

  r = test::run_splat(train_args(dir / "run"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string model = contents(dir / "run" / "model.ply");
  r = test::run_splat(demo_args(dir / "run"));
  EXPECT_NE(r.exit_code, 0) << r.output;
  test::expect_contains(r.output, {"--out", "holds a train run", "splat demo replaces only"});
  EXPECT_EQ(contents(dir / "run" / "model.ply"), model);
  EXPECT_FALSE(fs::exists(dir / "run" / "scene"));
}

TEST(BadInputOutDirSlow, AFileOfTheUsersAtAnOutputNameIsNeverReplaced) {
  const auto dir = test::temp_dir("out_users_config");
  test::write_text(dir / "o" / "config.toml", "my own config");
  for (const std::string extra : {"", "--overwrite"}) {
    const auto r = test::run_splat(train_args(dir / "o", extra));
    EXPECT_NE(r.exit_code, 0) << r.output;
    test::expect_contains(r.output, {"config.toml", "not one of the files splat wrote"});
    EXPECT_EQ(contents(dir / "o" / "config.toml"), "my own config");
  }
  // A render of the user's where the run would write one is found before training.
  test::write_text(dir / "q" / "renders" / "test" / "r_0.png", "mine");
  const auto q = test::run_splat(train_args(dir / "q"));
  EXPECT_NE(q.exit_code, 0) << q.output;
  test::expect_contains(q.output, {"r_0.png", "not one of the files splat wrote"});
  EXPECT_FALSE(fs::exists(dir / "q" / "metrics.jsonl")) << "it trained";
  EXPECT_EQ(contents(dir / "q" / "renders" / "test" / "r_0.png"), "mine");
}

TEST(BadInputOutDirSlow, ASecondRunIntoTheSameFolderIsRefusedWhileTheFirstWrites) {
  const auto dir = test::temp_dir("out_two_runs");
  const fs::path out = dir / "o";
  // The first run trains until it is stopped; the second starts once the first has begun.
  const std::string first = test::splat_binary() + " " +
                            train_args(out, "--set train.iterations=1000000") + " > " +
                            (dir / "first.log").string() + " 2>&1 & pid=$!; ";
  const std::string wait = "for i in $(seq 600); do [ -s " + (out / "config.toml").string() +
                           " ] && break; sleep 0.05; done; ";
  const std::string second = test::splat_binary() + " " + train_args(out, "--overwrite") + " > " +
                             (dir / "second.log").string() + " 2>&1; echo $? > " +
                             (dir / "second.rc").string() + "; ";
  const auto r = test::run_command(first + wait + second + "kill -INT $pid; wait $pid");
  const std::string second_log = contents(dir / "second.log");
  EXPECT_NE(contents(dir / "second.rc"), "0\n") << second_log;
  test::expect_contains(second_log, {"--out", "another splat process", "pid"});
  // The first run's outputs are one set: its own model and checkpoint, from its interrupt.
  const std::string first_log = contents(dir / "first.log");
  test::expect_contains(first_log, {"stopped by SIGINT"});
  EXPECT_TRUE(fs::exists(out / "checkpoint.ckpt")) << first_log;
  EXPECT_TRUE(fs::exists(out / "model.ply")) << first_log;
}

TEST(BadInputOutDirSlow, AFailedRunDoesNotBlockTheCorrectedCommand) {
  const auto dir = test::temp_dir("out_failed_run");
  auto r = test::run_splat(
      train_args(dir / "o", "--set train.lr_means=1e38 --set train.lr_means_final=1e38"));
  ASSERT_NE(r.exit_code, 0) << r.output;
  ASSERT_TRUE(fs::exists(dir / "o" / "config.toml"));
  r = test::run_splat(train_args(dir / "o"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  test::expect_contains(r.output, {"replacing the files of an earlier run", "saved no model"});
  EXPECT_EQ(r.output.find("--resume"), std::string::npos) << r.output;
}

TEST(BadInputOutDirSlow, APreviousRunWithoutACheckpointIsNotToldToResume) {
  const auto dir = test::temp_dir("out_no_checkpoint");
  auto r = test::run_splat(train_args(dir / "o", "--set output.save_checkpoint=false"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = test::run_splat(train_args(dir / "o"));
  EXPECT_NE(r.exit_code, 0) << r.output;
  test::expect_contains(r.output, {"holds a previous run", "--overwrite"});
  EXPECT_EQ(r.output.find("--resume"), std::string::npos) << r.output;
}

TEST(BadInputOutDirSlow, TheDiskIsCheckedForTheOutputsBeforeTraining) {
  const auto dir = test::temp_dir("out_disk_space");
  // 100M splats at SH degree 3: 24 GiB of model.ply and 70 GiB per checkpoint.
  const fs::space_info space = fs::space(dir);
  if (double(space.available) > 150e9)
    GTEST_SKIP() << "this disk has " << space.available / (1 << 30)
                 << " GiB free: 100M splats' outputs fit";
  const auto r = test::run_splat(train_args(dir / "o", "--set densify.cap_max=100000000"));
  EXPECT_NE(r.exit_code, 0) << r.output;
  test::expect_contains(r.output, {"--out", "densify.cap_max", "GiB free"});
  EXPECT_FALSE(fs::exists(dir / "o" / "metrics.jsonl")) << "it trained";
  EXPECT_FALSE(fs::exists(dir / "o" / "config.toml")) << "a failed start leaves a run behind";
}

TEST(BadInputOutDirSlow, TheModelIsSavedWhenTheCheckpointCannotBe) {
  const auto dir = test::temp_dir("out_checkpoint_fails");
  // A directory where the checkpoint's temporary file goes: its write fails, as on a full disk.
  test::write_text(dir / "o" / "checkpoint.ckpt.tmp" / "x", "");
  const auto r = test::run_splat(train_args(dir / "o"));
  EXPECT_NE(r.exit_code, 0) << r.output;
  test::expect_contains(r.output,
                        {"could not write every output", "checkpoint.ckpt", "written: model.ply"});
  ASSERT_TRUE(fs::exists(dir / "o" / "model.ply"));
  EXPECT_GT(read_ply((dir / "o" / "model.ply").string()).size(), 0u);
}

TEST(BadInputOutDirSlow, TheManifestListsWhatTheRunWrote) {
  const auto dir = test::temp_dir("out_manifest");
  const auto r = test::run_splat(train_args(dir / "o"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string manifest = contents(dir / "o" / kManifestName);
  for (const char* f : {"model.ply", "checkpoint.ckpt", "metrics.json", "metrics.jsonl",
                        "config.toml", "report.html", "renders/test"})
    EXPECT_NE(manifest.find(f), std::string::npos) << f << " in " << manifest;
  // Everything in the folder but the manifest and the lock is listed.
  for (const auto& e : fs::recursive_directory_iterator(dir / "o")) {
    if (e.is_regular_file() && e.path().filename() != kManifestName &&
        e.path().filename() != kLockName) {
      EXPECT_NE(manifest.find(fs::relative(e.path(), dir / "o").generic_string()),
                std::string::npos)
          << e.path();
    }
  }
}

TEST(BadInputOutDirSlow, EvalAndRenderReplaceOnlyTheirOwnResults) {
  const auto dir = test::temp_dir("out_eval_render");
  auto r = test::run_splat(train_args(dir / "run"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string model = (dir / "run" / "model.ply").string();
  const std::string metrics = contents(dir / "run" / "metrics.json");
  // eval into the training run's folder would replace its metrics.json.
  r = test::run_splat("eval " + model + " " + test::small_demo_scene() + " --out " +
                      (dir / "run").string());
  EXPECT_NE(r.exit_code, 0) << r.output;
  test::expect_contains(r.output, {"--out", "splat train", "choose another --out"});
  EXPECT_EQ(contents(dir / "run" / "metrics.json"), metrics);
  // Its own earlier results it replaces.
  for (int i = 0; i < 2; ++i) {
    r = test::run_splat("eval " + model + " " + test::small_demo_scene() + " --out " +
                        (dir / "eval").string());
    EXPECT_EQ(r.exit_code, 0) << r.output;
  }
  EXPECT_TRUE(fs::exists(dir / "eval" / "renders" / "r_0.png"));
  // render never replaces a picture of the user's.
  test::write_text(dir / "pictures" / "r_0.png", "the user's picture");
  r = test::run_splat("render " + model + " " + test::small_demo_scene() + " --out " +
                      (dir / "pictures").string());
  EXPECT_NE(r.exit_code, 0) << r.output;
  test::expect_contains(r.output, {"r_0.png", "not one of the files splat wrote"});
  EXPECT_EQ(contents(dir / "pictures" / "r_0.png"), "the user's picture");
}

}  // namespace
}  // namespace splat
