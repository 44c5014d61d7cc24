// splat export on the command line, the compact formats wherever a model is read (eval, render),
// and output.formats / output.save_checkpoint at the end of training.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>

#include "core/gaussians.h"
#include "engine/filter3d_host.h"
#include "io/checkpoint.h"
#include "io/model_file.h"
#include "io/ply.h"
#include "io/quantize.h"
#include "test_util.h"

namespace splat {
namespace {

namespace fs = std::filesystem;

// A small model of SH degree 2 inside the demo scene's unit cube.
std::string small_model(const fs::path& dir) {
  Gaussians g;
  g.sh_degree = 2;
  g.resize(400);
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (float& v : g.means) v = 0.8f * u(rng);
  for (float& v : g.log_scales) v = -3.5f + 0.5f * u(rng);
  for (float& v : g.quats) v = u(rng);
  for (float& v : g.raw_opacity) v = u(rng);
  for (float& v : g.sh) v = 0.3f * u(rng);
  const std::string path = (dir / "model.ply").string();
  write_ply(path, g);
  return path;
}

// A checkpoint of model.antialiased holds the raw parameters and the 3D filter; what `splat export`
// writes for viewers has the filter baked in (filter3d::bake), in every format.
TEST(ExportCli, AntialiasedCheckpointIsExportedBaked) {
  const fs::path dir = test::temp_dir("export_cli_aa");
  Checkpoint c;
  c.params = read_ply(small_model(dir));
  c.adam_m = c.adam_v = c.params;
  for (std::size_t i = 0; i < c.params.size(); ++i) c.filter3d.push_back(1e-3f * float(i % 5));
  const std::string ckpt = (dir / "aa.ckpt").string();
  write_checkpoint(ckpt, c);
  const Gaussians want = filter3d::bake(c.params, c.filter3d);
  for (const char* name : {"aa.ply", "aa.spz"}) {
    const auto r = test::run_splat("export " + ckpt + " --out " + (dir / name).string());
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const Gaussians got = read_model((dir / name).string());
    ASSERT_EQ(got.size(), want.size());
    double worst_scale = 0, worst_opacity = 0, moved = 0;
    for (std::size_t i = 0; i < got.size(); ++i) {
      auto sigmoid = [](double x) { return 1 / (1 + std::exp(-x)); };
      worst_opacity = std::max(
          worst_opacity, std::abs(sigmoid(got.raw_opacity[i]) - sigmoid(want.raw_opacity[i])));
      moved = std::max(moved, double(std::abs(want.raw_opacity[i] - c.params.raw_opacity[i])));
      for (int k = 0; k < 3; ++k)
        worst_scale = std::max(
            worst_scale, double(std::abs(got.log_scales[i * 3 + k] - want.log_scales[i * 3 + k])));
    }
    // .ply keeps floats; .spz rounds log-scales to 1/16 and opacity to 8 bits. The bake moves
    // the logits by more than 0.5 here.
    const bool exact = std::string(name) == "aa.ply";
    EXPECT_LE(worst_scale, exact ? 0.0 : 1.0 / 32 + 1e-6) << name;
    EXPECT_LE(worst_opacity, exact ? 0.0 : 0.5 / 255 + 1e-6) << name;
    EXPECT_GT(moved, 0.5);
  }
}

TEST(ExportCli, EveryFormatByFlagAndByName) {
  const fs::path dir = test::temp_dir("export_cli");
  const std::string model = small_model(dir);
  for (const char* format : {"ply", "splat", "spz", "compressed-ply"}) {
    const std::string out = (dir / (std::string("flag_") + format)).string();
    const auto r = test::run_splat("export " + model + " --format " + format + " --out " + out);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("400 splats"), std::string::npos) << r.output;
  }
  for (const char* name : {"m.ply", "m.splat", "m.spz", "m.compressed.ply"}) {
    const auto r = test::run_splat("export " + model + " --out " + (dir / name).string());
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const Gaussians g = read_model((dir / name).string());
    EXPECT_EQ(g.size(), 400u) << name;
    EXPECT_EQ(g.sh_degree, std::string(name) == "m.splat" ? 0 : 2) << name;
  }
  // The compressed .ply is told apart from the float one by its header, not by its name.
  EXPECT_EQ(fs::file_size(dir / "flag_compressed-ply"), fs::file_size(dir / "m.compressed.ply"));
  const auto r = test::run_splat("export " + (dir / "m.spz").string() + " --sh-degree 1 --out " +
                                 (dir / "d1.ply").string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(read_ply((dir / "d1.ply").string()).sh_degree, 1);
}

TEST(ExportCli, BadRequestsAreRefused) {
  const fs::path dir = test::temp_dir("export_cli_bad");
  const std::string model = small_model(dir);
  auto r = test::run_splat("export " + model + " --out " + (dir / "m.xyz").string());
  EXPECT_NE(r.exit_code, 0);
  test::expect_contains(r.output, {"m.xyz", "--format"});
  r = test::run_splat("export " + model + " --format splat --sh-degree 1 --out " +
                      (dir / "m.splat").string());
  EXPECT_NE(r.exit_code, 0);
  test::expect_contains(r.output, {"--sh-degree 1", "degree 0"});
  r = test::run_splat("export " + model + " --sh-degree 3 --out " + (dir / "m.spz").string());
  EXPECT_NE(r.exit_code, 0);
  test::expect_contains(r.output, {"--sh-degree 3", "degree 2"});
  EXPECT_FALSE(fs::exists(dir / "m.spz"));
  r = test::run_splat("export " + model + " --format jpeg --out " + (dir / "m.jpg").string());
  EXPECT_NE(r.exit_code, 0);
  // A broken input names the file.
  const fs::path broken = dir / "broken.spz";
  std::ofstream(broken) << "not gzip";
  r = test::run_splat("export " + broken.string() + " --out " + (dir / "x.ply").string());
  EXPECT_NE(r.exit_code, 0);
  test::expect_contains(r.output, {broken.string(), "gzip"});
}

TEST(ExportCliSlow, EvalAndRenderReadEveryFormat) {
  const fs::path dir = test::temp_dir("export_cli_eval");
  const std::string model = small_model(dir);
  const std::string scene = test::small_demo_scene();
  for (const char* name : {"m.splat", "m.spz", "m.compressed.ply"}) {
    ASSERT_EQ(test::run_splat("export " + model + " --out " + (dir / name).string()).exit_code, 0);
    const auto e =
        test::run_splat("eval " + (dir / name).string() + " " + scene + " --set backend.type=cpu");
    EXPECT_EQ(e.exit_code, 0) << e.output;
    EXPECT_NE(e.output.find("mean over 4 test views"), std::string::npos) << e.output;
  }
  const auto r = test::run_splat("render " + (dir / "m.spz").string() + " " + scene +
                                 " --set backend.type=cpu --out " + (dir / "renders").string());
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(fs::exists(dir / "renders" / "r_0.png")) << r.output;
}

TEST(ExportCli, TrainingWritesTheListedFormatsAndNoCheckpoint) {
  const fs::path out = test::temp_dir("export_cli_train") / "run";
  const auto r =
      test::run_splat("train " + test::small_demo_scene() + " --out " + out.string() +
                      " --set backend.type=cpu --set train.iterations=3 --set model.init_points=300"
                      " --set 'output.formats=[\"spz\", \"splat\", \"compressed-ply\"]'"
                      " --set output.save_checkpoint=false --set output.save_renders=false");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const char* f : {"model.spz", "model.splat", "model.compressed.ply"}) {
    EXPECT_TRUE(fs::exists(out / f)) << f;
    EXPECT_EQ(read_model((out / f).string()).size(), 300u) << f;
  }
  EXPECT_FALSE(fs::exists(out / "model.ply"));
  EXPECT_FALSE(fs::exists(out / "checkpoint.ckpt"));
  // A rerun into the same directory sees those files as a previous run.
  const auto again =
      test::run_splat("train " + test::small_demo_scene() + " --out " + out.string() +
                      " --set backend.type=cpu --set train.iterations=3");
  EXPECT_NE(again.exit_code, 0);
  EXPECT_NE(again.output.find("previous run"), std::string::npos) << again.output;
}

TEST(ExportCli, TrainingStartsFromAnyFormat) {
  const fs::path dir = test::temp_dir("export_cli_init");
  const std::string model = small_model(dir);
  ASSERT_EQ(test::run_splat("export " + model + " --out " + (dir / "m.splat").string()).exit_code,
            0);
  const auto r = test::run_splat(
      "train " + test::small_demo_scene() + " --out " + (dir / "run").string() + " --init-from " +
      (dir / "m.splat").string() +
      " --set backend.type=cpu --set train.iterations=2 --set output.save_renders=false");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("initialized from " + (dir / "m.splat").string() + ": 400 splats"),
            std::string::npos)
      << r.output;
  const Gaussians trained = read_model((dir / "run" / "model.ply").string());
  EXPECT_EQ(trained.size(), 400u);
  EXPECT_EQ(trained.sh_degree, 3);  // the degree-0 file padded to model.sh_degree
  // Starting over and continuing are different things.
  const auto both = test::run_splat("train " + test::small_demo_scene() + " --init-from " + model +
                                    " --resume " + (dir / "run" / "checkpoint.ckpt").string());
  EXPECT_NE(both.exit_code, 0);
  EXPECT_NE(both.output.find("excludes"), std::string::npos) << both.output;
}

}  // namespace
}  // namespace splat
