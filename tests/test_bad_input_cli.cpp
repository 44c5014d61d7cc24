// Bad input and faults as a user meets them through the command line: arguments, data paths,
// output directories, resumes that do not fit, divergence, kills during writes. Every failure is
// a non-zero exit with a message naming the input and the cause, and loses no earlier output.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>

#include "bad_input_util.h"
#include "io/checkpoint.h"
#include "io/ply.h"
#include "test_util.h"

namespace splat {
namespace {

namespace fs = std::filesystem;

// A short CPU run on the small demo scene; `extra` goes last.
std::string train_args(const std::string& data,
                       const fs::path& out,
                       const std::string& extra = "") {
  return test::short_train_args(data, out, extra);
}

const char* kPlyHeader =
    "ply\nformat ascii 1.0\nelement vertex 2\nproperty float x\nproperty float y\nproperty float "
    "z\n"
    "property float f_dc_0\nproperty float f_dc_1\nproperty float f_dc_2\nproperty float opacity\n"
    "property float scale_0\nproperty float scale_1\nproperty float scale_2\nproperty float rot_0\n"
    "property float rot_1\nproperty float rot_2\nproperty float rot_3\nend_header\n";

std::string write_ply_rows(const fs::path& dir, const std::string& rows) {
  test::write_text(dir / "m.ply", kPlyHeader + rows);
  return (dir / "m.ply").string();
}

const std::string kGoodRow = "0 0 0 0.5 0.5 0.5 2 -2 -2 -2 1 0 0 0\n";
const std::string kInvisibleRow = "0 0 0 0.5 0.5 0.5 -30 -2 -2 -2 1 0 0 0\n";  // alpha < 1/255
const std::string kZeroQuatRow = "0 0 0 0.5 0.5 0.5 2 -2 -2 -2 0 0 0 0\n";
const std::string kHugeScaleRow = "0 0 0 0.5 0.5 0.5 2 -2 60 -2 1 0 0 0\n";

struct CliCase {
  std::string name;
  std::function<std::string(const fs::path& dir)> args;  // the arguments, given a fresh directory
  std::vector<std::string> expect;
};

std::string scene() {
  return test::small_demo_scene();
}

// A NeRF-synthetic scene without a test split.
std::string scene_without_tests(const fs::path& dir) {
  test::write_blender_scene(dir / "notest");
  fs::remove(dir / "notest" / "transforms_test.json");
  return (dir / "notest").string();
}

// A NeRF-synthetic scene whose `rel` is replaced by what `make` puts there (a directory, a FIFO).
std::string scene_with(const fs::path& dir,
                       const std::string& rel,
                       const std::function<void(const fs::path&)>& make) {
  test::write_blender_scene(dir / "s");
  fs::remove(dir / "s" / rel);
  make(dir / "s" / rel);
  return (dir / "s").string();
}
void make_dir(const fs::path& p) {
  fs::create_directories(p);
}
void make_fifo(const fs::path& p) {
  mkfifo(p.c_str(), 0600);
}

const std::vector<CliCase> kCliCases = {
    {"DataMissing",
     [](const fs::path& d) { return train_args((d / "none").string(), d / "o"); },
     {"none", "dataset not found"}},
    {"DataIsAFile",
     [](const fs::path& d) {
       test::write_text(d / "f", "x");
       return train_args((d / "f").string(), d / "o");
     },
     {"f", "not a directory"}},
    {"DataSymlinkLoop",
     [](const fs::path& d) {
       fs::create_symlink(d / "b", d / "a");
       fs::create_symlink(d / "a", d / "b");
       return train_args((d / "a").string(), d / "o");
     },
     {"/a", "symbolic links"}},
    {"DataEmptyDirectory",
     [](const fs::path& d) {
       fs::create_directories(d / "empty");
       return train_args((d / "empty").string(), d / "o");
     },
     {"empty", "unrecognized dataset layout"}},
    {"ConfigDevZero",
     [](const fs::path& d) { return train_args(scene(), d / "o", "--config /dev/zero"); },
     {"/dev/zero", "not a regular file"}},
    {"ConfigFifo",
     [](const fs::path& d) {
       mkfifo((d / "fifo").c_str(), 0600);
       return train_args(scene(), d / "o", "--config " + (d / "fifo").string());
     },
     {"fifo", "not a regular file"}},
    {"ConfigUnknownKey",
     [](const fs::path& d) {
       test::write_text(d / "c.toml", "[train]\nitrations = 3\n");
       return train_args(scene(), d / "o", "--config " + (d / "c.toml").string());
     },
     {"c.toml", "itrations"}},
    {"DownscaleDisagreesWithSet",
     [](const fs::path& d) {
       return train_args(scene(), d / "o", "--downscale 2 --set data.downscale=4");
     },
     {"--downscale 2", "data.downscale=4"}},
    {"GpusWithCpuBackend",
     [](const fs::path& d) { return train_args(scene(), d / "o", "--gpus 1"); },
     {"--gpus 1", "backend.type"}},
    {"InitPointsHuge",
     [](const fs::path& d) {
       return train_args(scene(), d / "o",
                         "--set model.init=random --set model.init_points=4000000000");
     },
     {"model.init_points", "100000000"}},
    {"OutIsAFile",
     [](const fs::path& d) {
       test::write_text(d / "file", "x");
       return train_args(scene(), d / "file");
     },
     {"--out", "file", "not a directory"}},
    {"OutUnwritable",
     [](const fs::path&) { return train_args(scene(), "/proc/splat_no_write"); },
     {"--out", "/proc/splat_no_write"}},
    {"OutHoldsAModelSplatDidNotWrite",
     [](const fs::path& d) {
       test::write_text(d / "o" / "model.ply", "old");
       return train_args(scene(), d / "o", "--overwrite");
     },
     {"--out", "model.ply", "not one of the files splat wrote"}},
    {"ResumeNotACheckpoint",
     [](const fs::path& d) {
       test::write_text(d / "x.ckpt", "not a checkpoint");
       return train_args(scene(), d / "o", "--resume " + (d / "x.ckpt").string());
     },
     {"x.ckpt", "not a splat checkpoint"}},
    {"ResumeDevZero",
     [](const fs::path& d) { return train_args(scene(), d / "o", "--resume /dev/zero"); },
     {"/dev/zero", "not a regular file"}},
    {"EvalNoTestViews",
     [](const fs::path& d) {
       return "eval " + write_ply_rows(d, kGoodRow + kGoodRow) + " " + scene_without_tests(d);
     },
     {"notest", "no test views"}},
    {"EvalAllZeroQuaternions",
     [](const fs::path& d) {
       return "eval " + write_ply_rows(d, kZeroQuatRow + kZeroQuatRow) + " " + scene();
     },
     {"m.ply", "none of the 2 splats", "all-zero quaternion"}},
    {"EvalAllHugeScales",
     [](const fs::path& d) {
       return "eval " + write_ply_rows(d, kHugeScaleRow + kHugeScaleRow) + " " + scene();
     },
     {"m.ply", "none of the 2 splats", "log-scale above 44"}},
    {"RenderAllZeroQuaternions",
     [](const fs::path& d) {
       return "render " + write_ply_rows(d, kZeroQuatRow + kZeroQuatRow) + " " + scene() +
              " --out " + (d / "r").string();
     },
     {"m.ply", "all-zero quaternion"}},
    {"EvalNanModel",
     [](const fs::path& d) {
       return "eval " + write_ply_rows(d, kGoodRow + "0 nan 0 0 0 0 0 0 0 0 1 0 0 0\n") + " " +
              scene();
     },
     {"m.ply", "vertex 1", "y"}},
    {"EvalModelDataMissing",
     [](const fs::path& d) {
       return "eval " + write_ply_rows(d, kGoodRow + kGoodRow) + " " + (d / "nope").string();
     },
     {"nope", "dataset not found"}},
    {"EvalModelIsFifo",
     [](const fs::path& d) {
       mkfifo((d / "m.ply").c_str(), 0600);
       return "eval " + (d / "m.ply").string() + " " + scene();
     },
     {"m.ply", "not a regular file (a FIFO)"}},
    // ---- results that look fine and are not (issue 45 item 7) ----
    {"EvalDrawsNothing",
     [](const fs::path& d) {
       return "eval " + write_ply_rows(d, kInvisibleRow + kInvisibleRow) + " " + scene();
     },
     {"m.ply", "draws nothing", "background alone"}},
    {"RenderDrawsNothing",
     [](const fs::path& d) {
       return "render " + write_ply_rows(d, kInvisibleRow + kInvisibleRow) + " " + scene() +
              " --out " + (d / "r").string();
     },
     {"m.ply", "draws nothing"}},
    {"RenderNoTestViews",
     [](const fs::path& d) {
       return "render " + write_ply_rows(d, kGoodRow + kGoodRow) + " " + scene_without_tests(d) +
              " --out " + (d / "r").string();
     },
     {"notest", "no test views"}},
    {"ExportFormatDisagreesWithName",
     [](const fs::path& d) {
       return "export " + write_ply_rows(d, kGoodRow + kGoodRow) + " --format splat --out " +
              (d / "x.spz").string();
     },
     {"--out", "x.spz", "--format splat", "disagree"}},
    {"TimeBudgetTooShort",
     [](const fs::path& d) { return train_args(scene(), d / "o", "--set train.time_budget=1e-9"); },
     {"train.time_budget", "too short", "at least 1 s"}},
    {"NoModelFormatAndNoCheckpoint",
     [](const fs::path& d) {
       return train_args(scene(), d / "o",
                         "--set 'output.formats=[]' --set output.save_checkpoint=false");
     },
     {"output.formats", "output.save_checkpoint", "no model"}},
    // ---- messages that say what is wrong (issue 45 item 9) ----
    {"EvalOutIsAFile",
     [](const fs::path& d) {
       test::write_text(d / "file", "x");
       return "eval " + write_ply_rows(d, kGoodRow + kGoodRow) + " " + scene() + " --out " +
              (d / "file").string();
     },
     {"--out", "file", "not a directory"}},
    {"RenderOutIsAFile",
     [](const fs::path& d) {
       test::write_text(d / "file", "x");
       return "render " + write_ply_rows(d, kGoodRow + kGoodRow) + " " + scene() + " --out " +
              (d / "file").string();
     },
     {"--out", "file", "not a directory"}},
    {"DataEmpty", [](const fs::path& d) { return train_args("''", d / "o"); }, {"DATA is empty"}},
    {"IterationsBeyondInt64",
     [](const fs::path& d) {
       return train_args(scene(), d / "o", "--set train.iterations=99999999999999999999");
     },
     {"train.iterations", "99999999999999999999", "out of range"}},
    {"EvalModelIsADirectory",
     [](const fs::path& d) {
       fs::create_directories(d / "m.ply");
       return "eval " + (d / "m.ply").string() + " " + scene();
     },
     {"m.ply", "not a regular file (a directory)", "model"}},
    {"ExportModelIsADirectory",
     [](const fs::path& d) {
       fs::create_directories(d / "m.ply");
       return "export " + (d / "m.ply").string() + " --out " + (d / "x.splat").string();
     },
     {"m.ply", "not a regular file (a directory)"}},
    {"ConfigIsADirectory",
     [](const fs::path& d) {
       fs::create_directories(d / "c.toml");
       return train_args(scene(), d / "o", "--config " + (d / "c.toml").string());
     },
     {"--config", "c.toml", "not a regular file (a directory)", "config file"}},
    {"ResumeIsADirectory",
     [](const fs::path& d) {
       fs::create_directories(d / "x.ckpt");
       return train_args(scene(), d / "o", "--resume " + (d / "x.ckpt").string());
     },
     {"--resume", "x.ckpt", "not a regular file (a directory)", "checkpoint"}},
    {"InitFromIsAFifo",
     [](const fs::path& d) {
       mkfifo((d / "m.ply").c_str(), 0600);
       return train_args(scene(), d / "o", "--init-from " + (d / "m.ply").string());
     },
     {"--init-from", "m.ply", "not a regular file (a FIFO)"}},
    {"ImageIsADirectory",
     [](const fs::path& d) {
       return train_args(scene_with(d, "train/r_1.png", make_dir), d / "o");
     },
     {"r_1.png", "not a regular file (a directory)", "image"}},
    {"ImageIsAFifo",
     [](const fs::path& d) {
       return train_args(scene_with(d, "train/r_1.png", make_fifo), d / "o");
     },
     {"r_1.png", "not a regular file (a FIFO)", "image"}},
    {"TransformsIsADirectory",
     [](const fs::path& d) {
       return train_args(scene_with(d, "transforms_train.json", make_dir), d / "o");
     },
     {"transforms_train.json", "not a regular file (a directory)"}},
};

void PrintTo(const CliCase& c, std::ostream* os) {
  *os << c.name;
}

class BadInputCli : public ::testing::TestWithParam<CliCase> {};

TEST_P(BadInputCli, FailsNamingInputAndCause) {
  const auto dir = test::temp_dir("bad_cli_" + GetParam().name);
  const auto r = test::run_splat(GetParam().args(dir), 60);
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.exit_code, 124) << "timed out:\n" << r.output;
  for (const std::string& p : GetParam().expect) EXPECT_MENTIONS(r.output, p);
  EXPECT_EQ(r.output.find("internal"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(dir / "o" / "config.toml")) << "it started a run";
}

INSTANTIATE_TEST_SUITE_P(Cases,
                         BadInputCli,
                         ::testing::ValuesIn(kCliCases),
                         [](const ::testing::TestParamInfo<CliCase>& info) {
                           return info.param.name;
                         });

// ---- models that render partly ----------------------------------------------------------------

TEST(BadInputModel, SomeUndrawableSplatsAreCountedInAWarning) {
  const auto dir = test::temp_dir("bad_model_partly");
  const auto r =
      test::run_splat("eval " + write_ply_rows(dir, kGoodRow + kZeroQuatRow) + " " + scene());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  test::expect_contains(r.output,
                        {"warning", "m.ply", "1 of 2 splats render as nothing", "splat 1"});
}

TEST(BadInputModel, ThreadsFarAboveTheHardwareGetAWarning) {
  const auto dir = test::temp_dir("bad_model_threads");
  const auto r = test::run_splat("eval " + write_ply_rows(dir, kGoodRow + kGoodRow) + " " +
                                 scene() + " --set backend.type=cpu --set backend.threads=5000");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  test::expect_contains(r.output, {"warning: backend.threads = 5000", "hardware threads"});
}

// Unreadable inputs: root reads anything, so as root the command runs without the capabilities
// that bypass file permissions.
test::RunResult run_splat_unprivileged(const std::string& args) {
  const std::string drop =
      geteuid() == 0 ? "setpriv --bounding-set=-dac_override,-dac_read_search " : "";
  return test::run_command(drop + SPLAT_BINARY + " " + args);
}

TEST(BadInputUnreadable, DatasetDirectoryAndFilesSayPermissionDenied) {
  if (geteuid() == 0 &&
      test::run_command("setpriv --bounding-set=-dac_override,-dac_read_search true").exit_code !=
          0)
    GTEST_SKIP() << "root, and setpriv cannot drop the capabilities that bypass permissions";
  const auto dir = test::temp_dir("bad_unreadable");
  test::write_blender_scene(dir / "s");
  fs::permissions(dir / "s", fs::perms::none);
  auto r = run_splat_unprivileged(train_args((dir / "s").string(), dir / "o"));
  fs::permissions(dir / "s", fs::perms::owner_all);
  EXPECT_NE(r.exit_code, 0) << r.output;
  test::expect_contains(r.output, {"s: dataset directory cannot be read", "Permission denied"});
  EXPECT_EQ(r.output.find("unrecognized dataset layout"), std::string::npos) << r.output;

  const std::string model = write_ply_rows(dir, kGoodRow + kGoodRow);
  fs::permissions(model, fs::perms::none);
  r = run_splat_unprivileged("eval " + model + " " + (dir / "s").string());
  EXPECT_NE(r.exit_code, 0) << r.output;
  test::expect_contains(r.output, {"m.ply", "cannot open the model", "Permission denied"});
}

// ---- runs: empty test split, divergence --------------------------------------------------------

TEST(BadInputRunSlow, EmptyTestSplitSaysNoTestViewsNotPsnrZero) {
  const auto dir = test::temp_dir("bad_run_notest");
  const auto r = test::run_splat(train_args(scene_without_tests(dir), dir / "o"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_MENTIONS(r.output, "no test views");
  EXPECT_EQ(r.output.find("PSNR 0.00"), std::string::npos) << r.output;
  const nlohmann::json m = nlohmann::json::parse(std::ifstream(dir / "o" / "metrics.json"));
  EXPECT_TRUE(m["psnr"].is_null()) << m.dump();
  EXPECT_TRUE(m["cc_psnr"].is_null()) << m.dump();
}

TEST(BadInputRunSlow, DivergenceStopsAtOnceNamingStepAndGroup) {
  const auto dir = test::temp_dir("bad_run_diverge");
  const auto r = test::run_splat(
      train_args(scene(), dir / "o", "--set train.lr_means=1e38 --set train.lr_means_final=1e38"));
  EXPECT_NE(r.exit_code, 0) << r.output;
  test::expect_contains(r.output, {"training diverged", "means", "iteration", "train.lr_means"});
  EXPECT_FALSE(fs::exists(dir / "o" / "checkpoint.ckpt"));
  EXPECT_FALSE(fs::exists(dir / "o" / "model.ply"));
}

// A learning rate far too large throws values to 1e30 in a step, finite all the same.
TEST(BadInputRunSlow, FiniteButAbsurdMeansStopNamingGroupStepAndKey) {
  const auto dir = test::temp_dir("bad_run_absurd_means");
  const auto r = test::run_splat(train_args(scene(), dir / "o", "--set train.lr_means=1e30"));
  EXPECT_NE(r.exit_code, 0) << r.output;
  test::expect_contains(
      r.output, {"training diverged", "means holds", "at iteration 1", "Lower train.lr_means"});
  EXPECT_FALSE(fs::exists(dir / "o" / "model.ply"));
}

TEST(BadInputRunSlow, DivergedLogScalesAreBlamedOnTheirOwnRate) {
  const auto dir = test::temp_dir("bad_run_absurd_scales");
  const auto r = test::run_splat(train_args(scene(), dir / "o", "--set train.lr_log_scales=1e30"));
  EXPECT_NE(r.exit_code, 0) << r.output;
  test::expect_contains(r.output,
                        {"training diverged", "log_scales holds", "Lower train.lr_log_scales"});
  EXPECT_EQ(r.output.find("Lower train.lr_means"), std::string::npos) << r.output;
}

// ---- resumes that do not fit, and a run's outputs as one set -----------------------------------

// One finished 20-iteration run in dir/o, shared by the resume cases of this process.
const fs::path& finished_run() {
  static const fs::path out = [] {
    const auto dir = test::temp_dir("bad_resume_base");
    const auto r = test::run_splat(train_args(scene(), dir / "o"));
    EXPECT_EQ(r.exit_code, 0) << r.output;
    return dir / "o";
  }();
  return out;
}

// A copy of the finished run's directory, to change.
fs::path copy_of_run(const std::string& name) {
  const auto dir = test::temp_dir(name);
  fs::copy(finished_run(), dir / "o", fs::copy_options::recursive);
  return dir / "o";
}

std::string resume_args(const fs::path& out,
                        const std::string& extra = "",
                        const std::string& data = scene()) {
  return "train " + data + " --resume " + (out / "checkpoint.ckpt").string() + " --out " +
         out.string() + " " + extra;
}

TEST(BadInputResumeSlow, EveryOutputCarriesTheRunId) {
  const fs::path& out = finished_run();
  const Checkpoint c = read_checkpoint((out / "checkpoint.ckpt").string());
  ASSERT_EQ(c.run_id.size(), 16u);
  const nlohmann::json m = nlohmann::json::parse(std::ifstream(out / "metrics.json"));
  EXPECT_EQ(m["run_id"], c.run_id);
  EXPECT_EQ(read_ply_comments((out / "model.ply").string()),
            std::vector<std::string>{"splat_run " + c.run_id + " iteration 20"});
}

TEST(BadInputResumeSlow, FewerIterationsThanTheCheckpointIsRefused) {
  const fs::path out = copy_of_run("bad_resume_fewer");
  const auto r = test::run_splat(resume_args(out, "--set train.iterations=10"));
  EXPECT_NE(r.exit_code, 0) << r.output;
  test::expect_contains(r.output, {"checkpoint.ckpt", "iteration 20", "train.iterations = 10"});
}

TEST(BadInputResumeSlow, AnotherDatasetIsRefusedNamingBoth) {
  const fs::path out = copy_of_run("bad_resume_other_data");
  const auto r = test::run_splat(resume_args(out, "", scene_without_tests(out.parent_path())));
  EXPECT_NE(r.exit_code, 0) << r.output;
  test::expect_contains(r.output, {"checkpoint.ckpt", "24 training views", "this dataset has 3"});
  EXPECT_EQ(r.output.find("_M_range_check"), std::string::npos) << r.output;
}

// The demo scene from other camera positions: the same 24 names at the same 64x64 size.
std::string other_scene() {
  return test::small_demo_scene(8);
}

TEST(BadInputResumeSlow, AnotherDatasetWithTheSameViewsIsRefusedNamingTheImage) {
  const fs::path out = copy_of_run("bad_resume_same_views");
  const auto before = fs::last_write_time(out / "checkpoint.ckpt");
  const auto r = test::run_splat(resume_args(out, "--set train.iterations=30", other_scene()));
  EXPECT_NE(r.exit_code, 0) << r.output;
  test::expect_contains(r.output, {"checkpoint.ckpt", "training image", "of 24", "r_",
                                   "file size differs", "--init-from"});
  EXPECT_EQ(fs::last_write_time(out / "checkpoint.ckpt"), before);
}

TEST(BadInputResumeSlow, ADamagedCheckpointIsRefusedNamingTheChecksum) {
  const fs::path out = copy_of_run("bad_resume_bit_flip");
  std::ifstream in(out / "checkpoint.ckpt", std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), {});
  in.close();
  bytes[bytes.size() / 2] ^= 0x10;  // a float's bit: every section stays well-formed
  test::write_text(out / "checkpoint.ckpt", bytes);
  const auto r = test::run_splat(resume_args(out, "--set train.iterations=30"));
  EXPECT_NE(r.exit_code, 0) << r.output;
  test::expect_contains(r.output, {"checkpoint.ckpt", "checksum", "damaged"});
}

TEST(BadInputResumeSlow, BenchReplayOnAnotherDatasetIsRefused) {
  const fs::path& out = finished_run();
  const std::string replay =
      "bench replay --checkpoint " + (out / "checkpoint.ckpt").string() + " --iters 2 --warmup 0 ";
  auto r = test::run_splat(replay + other_scene());
  EXPECT_NE(r.exit_code, 0) << r.output;
  test::expect_contains(r.output, {"checkpoint.ckpt", "training image", "file size differs"});
  r = test::run_splat(replay + scene());  // its own dataset replays
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

// MCMC never removes splats: a cap below the checkpoint's count only stops growth, so the resume
// goes on, with a warning naming the setting and both counts.
TEST(BadInputResumeSlow, CapMaxBelowTheSplatCountWarns) {
  const fs::path out = copy_of_run("bad_resume_cap_max");
  const std::size_t splats = read_checkpoint((out / "checkpoint.ckpt").string()).params.size();
  // model.init_points is lowered with it: the config refuses a cap below a random init's count.
  const auto r = test::run_splat(resume_args(
      out, "--set train.iterations=22 --set model.init_points=50 --set densify.cap_max=100"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  test::expect_contains(r.output, {"warning: densify.cap_max = 100", std::to_string(splats)});
}

TEST(BadInputResumeSlow, CheckpointWithInfIsRefusedByResumeAndEval) {
  const fs::path out = copy_of_run("bad_resume_inf");
  Checkpoint c = read_checkpoint((out / "checkpoint.ckpt").string());
  std::ifstream in(out / "checkpoint.ckpt", std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), {});
  in.close();
  const std::string name = "params.log_scales";
  const float inf = std::numeric_limits<float>::infinity();
  std::memcpy(&bytes[bytes.find(name) + name.size() + 20 + 4 * 7], &inf, 4);  // splat 2
  test::write_text(out / "checkpoint.ckpt", bytes);
  auto r = test::run_splat(resume_args(out, "--set train.iterations=30"));
  EXPECT_NE(r.exit_code, 0) << r.output;
  test::expect_contains(r.output, {"checkpoint.ckpt", "params.log_scales", "splat 2", "inf"});
  r = test::run_splat("eval " + (out / "checkpoint.ckpt").string() + " " + scene());
  EXPECT_NE(r.exit_code, 0) << r.output;
  test::expect_contains(r.output, {"checkpoint.ckpt", "params.log_scales"});
}

TEST(BadInputResumeSlow, ModelNewerThanTheCheckpointIsReplacedWithAWarning) {
  // The outputs of iteration 30 beside the checkpoint of iteration 20: what a run that stopped
  // between its final writes (model.ply first, then checkpoint.ckpt) leaves. Training on from the
  // checkpoint replaces model.ply with the same run's later state, and says so first.
  const fs::path out = copy_of_run("bad_resume_mixed");
  fs::copy_file(out / "checkpoint.ckpt", out.parent_path() / "at20.ckpt");
  auto r = test::run_splat(resume_args(out, "--set train.iterations=30"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  fs::copy_file(out.parent_path() / "at20.ckpt", out / "checkpoint.ckpt",
                fs::copy_options::overwrite_existing);
  r = test::run_splat(resume_args(out, "--set train.iterations=40"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  test::expect_contains(r.output,
                        {"warning", "model.ply", "iteration 30", "iteration 20", "replaces it"});
  EXPECT_EQ(read_ply_comments((out / "model.ply").string()),
            std::vector<std::string>{"splat_run " +
                                     read_checkpoint((out / "checkpoint.ckpt").string()).run_id +
                                     " iteration 40"});
}

TEST(BadInputResumeSlow, FilesOfAnotherRunAreAMixedSet) {
  const fs::path out = copy_of_run("bad_resume_two_runs");
  const auto other = out.parent_path() / "other";
  ASSERT_EQ(test::run_splat(train_args(scene(), other, "--set train.iterations=5")).exit_code, 0);
  fs::copy_file(other / "metrics.json", out / "metrics.json", fs::copy_options::overwrite_existing);
  const auto r = test::run_splat(resume_args(out, "--set train.iterations=30"));
  EXPECT_NE(r.exit_code, 0) << r.output;
  test::expect_contains(r.output, {"metrics.json", "belongs to run", "two runs"});
}

// SIGKILL at any moment of a run that rewrites checkpoint.ckpt every step: whatever it leaves is
// whole, and resumes.
TEST(BadInputResumeSlow, KillDuringWritesLeavesAResumableSet) {
  const auto dir = test::temp_dir("bad_resume_kill");
  const auto out = dir / "o";
  const std::string run =
      std::string(SPLAT_BINARY) + " " +
      train_args(scene(), out,
                 "--set train.iterations=100000 --set output.checkpoint_minutes=0.0001 "
                 "--set train.log_every=1") +
      " > " + (dir / "log").string() + " 2>&1 & pid=$!; " + "for i in $(seq 600); do [ -s " +
      (out / "checkpoint.ckpt").string() +
      " ] && break; sleep 0.05; done; sleep 0.3; kill -KILL $pid; wait $pid";
  test::run_command(run);
  ASSERT_TRUE(fs::exists(out / "checkpoint.ckpt"));
  const Checkpoint c = read_checkpoint((out / "checkpoint.ckpt").string());  // whole, not torn
  const auto r =
      test::run_splat(resume_args(out, "--set train.iterations=" + std::to_string(c.iteration + 3) +
                                           " --set output.checkpoint_minutes=10"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const auto& e : fs::directory_iterator(out))
    EXPECT_NE(e.path().extension(), ".tmp") << e.path();
}

}  // namespace
}  // namespace splat
