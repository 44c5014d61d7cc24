// The command line end to end: a short demo run produces every output, and bad input gives a
// non-zero exit with a message naming the file and the field.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "io/demo_scene.h"
#include "io/ply.h"
#include "test_util.h"

namespace splat {
namespace {

namespace fs = std::filesystem;

TEST(CliSlow, DemoWritesEveryOutput) {
  const auto out = test::temp_dir("cli_demo");
  const auto r = test::run_splat("demo --out " + out.string() +
                                 " --set train.iterations=30 --set model.init_points=1000");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const char* f : {"model.ply", "checkpoint.ckpt", "metrics.json", "metrics.jsonl",
                        "config.toml", "report.html", "renders/test/r_0.png"})
    EXPECT_TRUE(fs::exists(out / f)) << f;
  // The report is one page with its pictures inline: nothing it shows lives outside it.
  std::ifstream report(out / "report.html");
  const std::string html((std::istreambuf_iterator<char>(report)),
                         std::istreambuf_iterator<char>());
  EXPECT_NE(html.find("<svg"), std::string::npos);
  EXPECT_NE(html.find("data:image/png;base64,"), std::string::npos);
  EXPECT_EQ(html.find("src=\"http"), std::string::npos);
  // The resolved config is printed at start.
  EXPECT_NE(r.output.find("iterations = 30"), std::string::npos);
  nlohmann::json m = nlohmann::json::parse(std::ifstream(out / "metrics.json"));
  EXPECT_EQ(m["iterations"], 30);
  EXPECT_EQ(m["num_splats"], 1000);
  EXPECT_EQ(m["test_views"].size(), 12u);
  for (const char* key :
       {"psnr", "ssim", "cc_psnr", "train_seconds", "ms_per_iter", "peak_memory_bytes"})
    EXPECT_TRUE(m.contains(key)) << key;
  EXPECT_GE(m["cc_psnr"].get<double>(), m["psnr"].get<double>());
  EXPECT_GE(m["test_views"][0]["cc_psnr"].get<double>(), m["test_views"][0]["psnr"].get<double>());
  EXPECT_EQ(read_ply((out / "model.ply").string()).size(), 1000u);

  // eval and render read the model back.
  const auto e =
      test::run_splat("eval " + (out / "model.ply").string() + " " + (out / "scene").string());
  EXPECT_EQ(e.exit_code, 0) << e.output;
  EXPECT_NE(e.output.find("mean over 12 test views"), std::string::npos) << e.output;
  // --split train scores the views it trained on, named as such in the output and metrics.json.
  const auto t =
      test::run_splat("eval " + (out / "model.ply").string() + " " + (out / "scene").string() +
                      " --split train --out " + (out / "train_eval").string());
  EXPECT_EQ(t.exit_code, 0) << t.output;
  const DemoSceneOptions demo;
  EXPECT_NE(t.output.find("mean over " + std::to_string(demo.train_views) + " train views"),
            std::string::npos)
      << t.output;
  const nlohmann::json te = nlohmann::json::parse(std::ifstream(out / "train_eval/metrics.json"));
  EXPECT_EQ(te["split"], "train");
  EXPECT_EQ(te["train_views"].size(), std::size_t(demo.train_views));
  EXPECT_FALSE(te.contains("test_views"));
  const auto rr = test::run_splat("render " + (out / "checkpoint.ckpt").string() + " " +
                                  (out / "scene").string() + " --out " + (out / "r").string());
  EXPECT_EQ(rr.exit_code, 0) << rr.output;
  EXPECT_TRUE(fs::exists(out / "r" / "r_3.png"));
}

// Runs the CLI expecting failure; the message must contain every needle.
void expect_failure(const std::string& args, const std::vector<std::string>& needles) {
  const auto r = test::run_splat(args);
  EXPECT_NE(r.exit_code, 0) << args << "\n" << r.output;
  for (const auto& n : needles)
    EXPECT_NE(r.output.find(n), std::string::npos) << "missing '" << n << "' in:\n" << r.output;
}

TEST(Cli, MissingDataset) {
  expect_failure("train /nonexistent/scene --out /tmp/x", {"/nonexistent/scene", "not found"});
}

TEST(Cli, UnknownConfigKeyNamesFileLineAndKey) {
  const auto dir = test::temp_dir("cli_cfg");
  std::ofstream(dir / "bad.toml") << "[train]\niterations = 10\niteratons = 5\n";
  expect_failure("demo --out " + (dir / "o").string() + " --config " + (dir / "bad.toml").string(),
                 {"bad.toml", ":3", "iteratons"});
  expect_failure("demo --out " + (dir / "o").string() + " --set train.ssim_lambda=2",
                 {"train.ssim_lambda"});
}

TEST(Cli, MalformedTransformsJson) {
  const auto dir = test::temp_dir("cli_json");
  std::ofstream(dir / "transforms_train.json") << "{\"camera_angle_x\": 0.7, \"frames\": [ {";
  expect_failure("train " + dir.string() + " --out " + (dir / "o").string(),
                 {"transforms_train.json"});
}

TEST(Cli, WrongImageSize) {
  const auto dir = test::temp_dir("cli_size");
  DemoSceneOptions o;
  o.width = o.height = 32;
  o.train_views = 3;
  o.test_views = 1;
  write_demo_scene((dir / "a").string(), o);
  o.width = 40;
  write_demo_scene((dir / "b").string(), o);
  fs::copy_file(dir / "b" / "train" / "r_1.png", dir / "a" / "train" / "r_1.png",
                fs::copy_options::overwrite_existing);
  expect_failure("train " + (dir / "a").string() + " --out " + (dir / "o").string(),
                 {"r_1.png", "40"});
}

TEST(Cli, NanInPly) {
  const auto dir = test::temp_dir("cli_nan");
  std::ofstream(dir / "nan.ply")
      << "ply\nformat ascii 1.0\nelement vertex 1\n"
         "property float x\nproperty float y\nproperty float z\n"
         "property float f_dc_0\nproperty float f_dc_1\nproperty float f_dc_2\n"
         "property float opacity\nproperty float scale_0\nproperty float scale_1\n"
         "property float scale_2\nproperty float rot_0\nproperty float rot_1\n"
         "property float rot_2\nproperty float rot_3\nend_header\n"
         "0 0 0 0 0 0 0 nan 0 0 1 0 0 0\n";
  DemoSceneOptions o;
  o.width = o.height = 32;
  o.train_views = 2;
  o.test_views = 1;
  write_demo_scene((dir / "scene").string(), o);
  expect_failure("eval " + (dir / "nan.ply").string() + " " + (dir / "scene").string(),
                 {"nan.ply", "vertex 0", "scale_0"});
}

TEST(Cli, UnknownSubcommandOrMissingArgument) {
  expect_failure("frobnicate", {});
  expect_failure("train", {"DATA"});
}

}  // namespace
}  // namespace splat
