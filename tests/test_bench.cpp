// splat bench: SHA-256 against FIPS 180-2 vectors, the ABBA order, the A/B rule on synthetic
// timings, and both subcommands end to end on a tiny demo scene.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "core/sha256.h"
#include "report/bench_stats.h"
#include "test_util.h"

namespace splat {
namespace {

namespace fs = std::filesystem;
using bench::Arm;
using bench::Verdict;

TEST(Sha256, FipsVectors) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  // A million 'a' fed in uneven chunks exercises the buffering across blocks.
  Sha256 s;
  const std::string chunk(997, 'a');
  std::size_t left = 1000000;
  while (left > 0) {
    const std::size_t n = std::min(left, chunk.size());
    s.update(chunk.data(), n);
    left -= n;
  }
  const auto d = s.finish();
  EXPECT_EQ(d[0], 0xcd);
  EXPECT_EQ(d[31], 0xd0);  // cdc76e5c...c7112cd0
}

TEST(Sha256, File) {
  const auto dir = test::temp_dir("sha_file");
  std::ofstream(dir / "f", std::ios::binary) << "abc";
  EXPECT_EQ(sha256_file((dir / "f").string()), sha256_hex("abc"));
  EXPECT_THROW(sha256_file((dir / "missing").string()), std::exception);
}

std::string order_string(int pairs) {
  std::string s;
  for (Arm a : bench::abba_order(pairs)) s += bench::arm_char(a);
  return s;
}

TEST(Bench, AbbaOrder) {
  EXPECT_EQ(order_string(1), "AB");
  EXPECT_EQ(order_string(2), "ABBA");
  EXPECT_EQ(order_string(3), "ABBAAB");
  EXPECT_EQ(order_string(4), "ABBAABBA");
}

TEST(Bench, Summary) {
  std::vector<double> v;
  for (int i = 100; i >= 0; --i) v.push_back(i);
  const auto s = bench::summarize(v);
  EXPECT_DOUBLE_EQ(s.median, 50);
  EXPECT_DOUBLE_EQ(s.p5, 5);
  EXPECT_DOUBLE_EQ(s.p95, 95);
  EXPECT_DOUBLE_EQ(s.mean, 50);
}

std::vector<bench::PairResult> pairs(const std::vector<double>& a,
                                     const std::vector<double>& b,
                                     double psnr_a,
                                     double psnr_b) {
  std::vector<bench::PairResult> out;
  for (std::size_t i = 0; i < a.size(); ++i) out.push_back({a[i], b[i], psnr_a, psnr_b});
  return out;
}

TEST(Bench, RuleClearWin) {
  // B 10% faster, deltas tight (sigma ~0.1 s against a 10 s gain).
  const auto d = bench::decide({}, pairs({100, 101, 99, 100}, {90, 90.9, 89.2, 90.1}, 30.0, 30.01));
  EXPECT_EQ(d.verdict, Verdict::AdoptB) << d.reason;
  EXPECT_TRUE(d.faster);
  EXPECT_LT(d.median_delta, 0);
}

TEST(Bench, RuleWithinNoise) {
  // 0.5% faster: below the 1% floor.
  auto d = bench::decide({}, pairs({100, 100, 100}, {99.5, 99.5, 99.5}, 30, 30));
  EXPECT_EQ(d.verdict, Verdict::Inconclusive) << d.reason;
  // 5% faster on median but the deltas scatter by more than that: 2 sigma wins.
  d = bench::decide({}, pairs({100, 100, 100, 100}, {95, 80, 110, 96}, 30, 30));
  EXPECT_EQ(d.verdict, Verdict::Inconclusive) << d.reason;
  EXPECT_GT(d.threshold, 5.0);
  // One pair cannot estimate sigma.
  d = bench::decide({}, pairs({100}, {50}, 30, 30));
  EXPECT_EQ(d.verdict, Verdict::Inconclusive) << d.reason;
}

TEST(Bench, RulePsnrGuardAndSlower) {
  // Clearly faster, but PSNR drops by 0.1 dB > 0.05 dB.
  auto d = bench::decide({}, pairs({100, 101, 99}, {90, 91, 89}, 30.0, 29.9));
  EXPECT_EQ(d.verdict, Verdict::KeepA) << d.reason;
  EXPECT_TRUE(d.faster);
  EXPECT_FALSE(d.psnr_ok);
  // A 0.04 dB drop is within the tolerance.
  d = bench::decide({}, pairs({100, 101, 99}, {90, 91, 89}, 30.0, 29.96));
  EXPECT_EQ(d.verdict, Verdict::AdoptB) << d.reason;
  // Clearly slower.
  d = bench::decide({}, pairs({100, 101, 99}, {110, 111, 109}, 30, 30));
  EXPECT_EQ(d.verdict, Verdict::KeepA) << d.reason;
}

fs::path write_config(const fs::path& dir, const std::string& name, const std::string& extra) {
  const fs::path p = dir / name;
  std::ofstream(p) << "[model]\ninit_points = 300\n[train]\niterations = 20\n"
                   << extra << "[backend]\ntype = \"cpu\"\n[output]\nsave_renders = false\n";
  return p;
}

TEST(BenchSlow, AbEndToEnd) {
  const auto dir = test::temp_dir("bench_ab");
  const auto a = write_config(dir, "a.toml", "");
  const auto b = write_config(dir, "b.toml", "ssim_lambda = 0.0\n");
  const auto out = dir / "ab";
  const auto r = test::run_splat("bench ab --a " + a.string() + " --b " + b.string() + " " +
                                 test::small_demo_scene() + " --pairs 2 --load-factor 1000 --out " +
                                 out.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ASSERT_TRUE(fs::exists(out / "report.md"));
  const auto j = nlohmann::json::parse(std::ifstream(out / "report.json"));
  EXPECT_EQ(j["status"], "done");
  ASSERT_EQ(j["runs"].size(), 4u);
  std::string order;
  for (const auto& run : j["runs"]) order += run["arm"].get<std::string>();
  EXPECT_EQ(order, "ABBA");
  std::map<std::string, std::set<std::string>> models;
  for (const auto& run : j["runs"]) {
    EXPECT_GT(run["train_seconds"].get<double>(), 0);
    EXPECT_GT(run["psnr"].get<double>(), 0);
    EXPECT_GE(run["load_samples"].get<int>(), 1);
    EXPECT_EQ(run["model_sha256"].get<std::string>().size(), 64u);
    models[run["arm"].get<std::string>()].insert(run["model_sha256"].get<std::string>());
  }
  // Deterministic runs: one model per arm (the PLY's run stamp aside), and the arms differ.
  EXPECT_EQ(models["A"].size(), 1u);
  EXPECT_EQ(models["B"].size(), 1u);
  EXPECT_NE(*models["A"].begin(), *models["B"].begin());
  EXPECT_EQ(j["models"],
            "A and B differ; the same bits in every A run; the same bits in every B run");
  const auto& pv = j["provenance"];
  EXPECT_TRUE(pv["git_commit"].is_string());
  // The arms name the commit their binaries were built from (this test's binary for both).
  const std::string version = test::run_splat("--version").output;
  EXPECT_EQ(version.rfind("splat ", 0), 0u) << version;
  EXPECT_EQ(pv["a"]["version"].get<std::string>() + "\n", version);
  EXPECT_EQ(pv["a"]["binary_sha256"].get<std::string>().size(), 64u);
  EXPECT_EQ(pv["a"]["binary_sha256"], pv["b"]["binary_sha256"]);
  EXPECT_NE(pv["a"]["config_sha256"], pv["b"]["config_sha256"]);
  EXPECT_NE(j["resolved_configs"]["B"].get<std::string>().find("ssim_lambda = 0"),
            std::string::npos);
  EXPECT_FALSE(j["rule"]["text"].get<std::string>().empty());
  const std::string v = j["verdict"];
  EXPECT_TRUE(v == "adopt B" || v == "keep A" || v == "inconclusive") << v;
}

// A gate longer than one sitting: --stop-after leaves a partial report after the first pair,
// --resume keeps those runs and adds the rest, and refuses other arms, another pair count, a
// finished gate or a missing report.
TEST(BenchSlow, AbStopsAndResumes) {
  const auto dir = test::temp_dir("bench_ab_resume");
  const auto a = write_config(dir, "a.toml", "");
  const auto b = write_config(dir, "b.toml", "ssim_lambda = 0.0\n");
  const auto other = write_config(dir, "other.toml", "ssim_lambda = 0.5\n");
  const auto out = dir / "ab";
  const auto ab = [&](const fs::path& config_b, const std::string& extra) {
    return test::run_splat("bench ab --a " + a.string() + " --b " + config_b.string() + " " +
                           test::small_demo_scene() + " --load-factor 1000 --out " + out.string() +
                           " " + extra);
  };
  const auto report = [&] { return nlohmann::json::parse(std::ifstream(out / "report.json")); };

  const auto missing = ab(b, "--pairs 2 --resume");
  EXPECT_NE(missing.exit_code, 0);
  test::expect_contains(missing.output, {"report.json", "no report to resume"});

  const auto first = ab(b, "--pairs 2 --stop-after 0.001");
  ASSERT_EQ(first.exit_code, 0) << first.output;
  test::expect_contains(first.output, {"stopped after 1 of 2 pairs", "--resume"});
  const auto partial = report();
  EXPECT_EQ(partial["status"], "partial");
  ASSERT_EQ(partial["runs"].size(), 2u);
  EXPECT_FALSE(partial.contains("verdict"));
  std::ifstream md(out / "report.md");
  const std::string text((std::istreambuf_iterator<char>(md)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("partial: continue with --resume"), std::string::npos) << text;

  const auto wrong_b = ab(other, "--pairs 2 --resume");
  EXPECT_NE(wrong_b.exit_code, 0);
  test::expect_contains(wrong_b.output, {"report.json", "provenance/b/config_sha256"});
  const auto wrong_pairs = ab(b, "--pairs 3 --resume");
  EXPECT_NE(wrong_pairs.exit_code, 0);
  test::expect_contains(wrong_pairs.output, {"provenance/pairs is 2", "is 3"});
  EXPECT_EQ(report(), partial) << "a refused resume changed the report";

  const auto rest = ab(b, "--pairs 2 --resume");
  ASSERT_EQ(rest.exit_code, 0) << rest.output;
  const auto done = report();
  EXPECT_EQ(done["status"], "done");
  ASSERT_EQ(done["runs"].size(), 4u);
  std::string order;
  for (const auto& run : done["runs"]) order += run["arm"].get<std::string>();
  EXPECT_EQ(order, "ABBA");
  for (int i = 0; i < 2; ++i) EXPECT_EQ(done["runs"][i], partial["runs"][i]) << "run " << i;
  EXPECT_EQ(done["rule"]["written_at"], partial["rule"]["written_at"]);
  EXPECT_EQ(done["resumed_at"].size(), 1u);
  const std::string v = done["verdict"];
  EXPECT_TRUE(v == "adopt B" || v == "keep A" || v == "inconclusive") << v;

  const auto again = ab(b, "--pairs 2 --resume");
  EXPECT_NE(again.exit_code, 0);
  test::expect_contains(again.output, {"status is \"done\""});
}

TEST(BenchSlow, ReplayEndToEnd) {
  const auto dir = test::temp_dir("bench_replay");
  const auto t = test::run_splat(
      "train " + test::small_demo_scene() + " --out " + (dir / "run").string() +
      " --set train.iterations=10 --set model.init_points=300 --set backend.type=cpu"
      " --set output.save_renders=false");
  ASSERT_EQ(t.exit_code, 0) << t.output;
  const auto json_path = dir / "replay.json";
  const auto r = test::run_splat(
      "bench replay --checkpoint " + (dir / "run" / "checkpoint.ckpt").string() + " " +
      test::small_demo_scene() + " --iters 8 --warmup 2 --out " + json_path.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("median"), std::string::npos) << r.output;
  const auto j = nlohmann::json::parse(std::ifstream(json_path));
  EXPECT_EQ(j["iters"], 8);
  EXPECT_EQ(j["step_ms"].size(), 8u);
  EXPECT_EQ(j["start_iteration"], 10);
  for (const char* k : {"median_ms", "p5_ms", "p95_ms"}) EXPECT_GT(j[k].get<double>(), 0) << k;
  EXPECT_LE(j["p5_ms"].get<double>(), j["median_ms"].get<double>());
  EXPECT_LE(j["median_ms"].get<double>(), j["p95_ms"].get<double>());
  EXPECT_EQ(j["factor"], 1);
  EXPECT_EQ(j["view_size"], nlohmann::json::array({64, 64}));

  // --factor: the steps of a coarse-to-fine phase, on the views at 1/F size.
  const auto coarse = dir / "replay_coarse.json";
  const std::string common = "bench replay --checkpoint " +
                             (dir / "run" / "checkpoint.ckpt").string() + " " +
                             test::small_demo_scene() + " --iters 3 --warmup 1";
  const auto c = test::run_splat(common + " --factor 4 --out " + coarse.string());
  ASSERT_EQ(c.exit_code, 0) << c.output;
  test::expect_contains(c.output, {"at 1/4 size"});
  const auto jc = nlohmann::json::parse(std::ifstream(coarse));
  EXPECT_EQ(jc["factor"], 4);
  EXPECT_EQ(jc["view_size"], nlohmann::json::array({16, 16}));
  const auto big = test::run_splat(common + " --factor 256");
  EXPECT_NE(big.exit_code, 0);
  test::expect_contains(big.output, {"--factor = 256 is larger than", "64x64"});
}

// Without a GPU the parity bench cannot run: a clear error, nonzero exit. A bad view index is named
// before any backend starts. (On the H200 it runs for real; docs/benchmarks.md has its output.)
TEST(Bench, ParityErrors) {
  const auto dir = test::temp_dir("bench_parity");
  const auto t =
      test::run_splat("train " + test::small_demo_scene() + " --out " + (dir / "run").string() +
                      " --set train.iterations=2 --set model.init_points=100 --set backend.type=cpu"
                      " --set output.save_renders=false");
  ASSERT_EQ(t.exit_code, 0) << t.output;
  const std::string ckpt = (dir / "run" / "checkpoint.ckpt").string();
  const auto bad_view = test::run_splat("bench parity --checkpoint " + ckpt + " " +
                                        test::small_demo_scene() + " --view 99");
  EXPECT_NE(bad_view.exit_code, 0);
  test::expect_contains(bad_view.output, {"--view 99", "24 training views"});
  const auto r =
      test::run_splat("bench parity --checkpoint " + ckpt + " " + test::small_demo_scene());
  if (r.exit_code == 0) GTEST_SKIP() << "a GPU is present: parity ran\n" << r.output;
  test::expect_contains(r.output, {"backend.type = \"cuda\""});
}

}  // namespace
}  // namespace splat
