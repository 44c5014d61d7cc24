// The config system: defaults, the round trip through to_toml(), --set, and every error kind.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "test_util.h"
#include "train/config.h"

namespace splat {
namespace {

const std::filesystem::path kConfigs = std::filesystem::path(SPLAT_SOURCE_DIR) / "configs";

// Every field moved away from its default, with doubles that only survive an exact round trip.
Config changed_everywhere() {
  Config c;
  c.data.background = {0.1 + 0.2, 1.0 / 3.0, 0.0};
  c.data.downscale = 4;
  c.data.test_every = 8;
  c.data.max_train_views = 50;
  c.data.holdout_every = 5;
  c.data.crop_undistorted = false;
  c.data.alpha_mask = true;
  c.data.max_image_size = 1600;
  c.data.max_image_width = 1200;
  c.model.sh_degree = 1;
  c.model.init = InitKind::Points;
  c.model.init_points = 123457;
  c.model.init_extent = 2.0 / 3.0;
  c.model.init_opacity = 0.123456789012345678;
  c.model.init_scale = 0.25;
  c.model.antialiased = true;
  c.train.iterations = 7;
  c.train.time_budget = 90;
  c.train.seed = 9007199254740993ull;  // 2^53 + 1: would be rounded if it went through a double
  c.train.loss = LossKind::L2;
  c.train.ssim_lambda = 1.0 / 7.0;
  c.train.sh_increase_every = 500;
  c.train.coarse_factor = 8;
  c.train.coarse_until = 2500;
  c.train.lr_means = 3e-4;
  c.train.lr_means_final = 1e-300;
  c.train.lr_log_scales = 5e-3 * 3.0;
  c.train.lr_quats = 1e20;
  c.train.lr_opacity = 0.05 + 1e-17;
  c.train.lr_sh0 = 2.5e-3 * 1.1;
  c.train.lr_shN = 4e-320;  // subnormal
  c.train.sparse_sh_adam = false;
  c.train.appearance = AppearanceKind::Affine;
  c.train.lr_appearance = 2e-3 / 3.0;
  c.train.appearance_reg = 0.125;
  c.train.pose_opt = true;
  c.train.lr_pose = 3e-5 / 7.0;
  c.train.pose_reg = 0.0;
  c.train.log_every = 10;
  c.train.eval_every = 250;
  c.train.batch_size = 3;
  c.train.lr_batch_scaling = LrBatchScaling::Linear;
  c.train.digest_every = 7;
  c.train.collective_timeout = 12.5;
  c.backend.type = BackendKind::Cpu;
  c.backend.threads = 2;
  c.backend.timing = true;
  c.backend.submission = Submission::Graph;
  c.backend.pipelining = Pipelining::Depth2;
  c.backend.deterministic = false;
  c.backend.fast_math = false;
  c.backend.gpu_images_gb = 1.0 / 3.0;
  c.densify.strategy = "adc";
  c.densify.refine_every = 77;
  c.densify.refine_start = 333;
  c.densify.refine_stop = 4444;
  c.densify.min_opacity = 0.0123;
  c.densify.cap_max = 234567;
  c.densify.growth = 0.07;
  c.densify.noise_lr = 4.5e5;
  c.densify.opacity_reg = 0.015;
  c.densify.scale_reg = 0.025;
  c.densify.mcmc_grad_power = 0.5;
  c.densify.grow_grad2d = 3e-4;
  c.densify.grow_scale3d = 0.02;
  c.densify.prune_opacity = 0.0055;
  c.densify.prune_scale3d = 0.15;
  c.densify.reset_every = 2999;
  c.densify.grow_grad2d_abs = 0.0011;
  c.densify.fastgs_views = 7;
  c.densify.fastgs_loss_thresh = 0.06;
  c.densify.fastgs_min_importance = 4;
  c.densify.fastgs_opacity_cap = 0.75;
  c.densify.fastgs_final_every = 2500;
  c.densify.fastgs_final_stop = 29000;
  c.densify.fastgs_final_opacity = 0.12;
  c.densify.fastgs_final_score = 0.85;
  c.output.save_renders = false;
  c.output.save_checkpoint = false;
  c.output.checkpoint_every = 2500;  // with save_checkpoint = false validate() objects; no matter
  c.output.checkpoint_minutes = 2.5;
  c.output.formats = {ModelFormat::Spz, ModelFormat::CompressedPly};
  c.prepare.max_image_size = 1200;
  c.prepare.frames = 300;
  c.prepare.camera = PrepareCamera::Pinhole;
  c.prepare.sharing = PrepareSharing::PerImage;
  c.prepare.matcher = PrepareMatcher::Sequential;
  c.prepare.exhaustive_max = 60;
  c.prepare.threads = 2;
  return c;
}

std::vector<std::string> value_lines(const std::string& toml) {
  std::vector<std::string> out;
  std::istringstream in(toml);
  for (std::string line; std::getline(in, line);)
    if (line.find(" = ") != std::string::npos) out.push_back(line);
  return out;
}

// Writes `text` to a file named x.toml and returns the error message that applying it gives.
std::string file_error(const std::string& text) {
  const auto path = test::temp_dir("config_errors") / "x.toml";
  std::ofstream(path) << text;
  Config cfg;
  try {
    apply_config_file(cfg, path.string());
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "no error for:\n" << text;
  return {};
}

std::string override_error(const std::string& assignment) {
  Config cfg;
  try {
    apply_override(cfg, assignment);
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "no error for --set " << assignment;
  return {};
}

std::string validate_error(const Config& cfg) {
  try {
    cfg.validate();
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "validate() accepted:\n" << cfg.to_toml();
  return {};
}

#define EXPECT_HAS(haystack, needle)                    \
  EXPECT_NE((haystack).find(needle), std::string::npos) \
      << "missing '" << (needle) << "' in: " << (haystack)

TEST(Config, EmptyFileIsDefaultAndDefaultTomlMatches) {
  Config from_empty;
  apply_config_text(from_empty, "", "empty");
  EXPECT_EQ(from_empty.to_toml(), Config{}.to_toml());

  Config from_file;
  apply_config_file(from_file, (kConfigs / "default.toml").string());
  EXPECT_EQ(from_file.to_toml(), Config{}.to_toml());
  EXPECT_NO_THROW(Config{}.validate());

  // The commented reference (default.toml's body) is valid TOML for the same values.
  Config from_reference;
  apply_config_text(from_reference, config_reference(), "reference");
  EXPECT_EQ(from_reference.to_toml(), Config{}.to_toml());
}

TEST(Config, IntegerAcceptedForFloat) {
  Config c;
  apply_config_text(c, "[model]\ninit_extent = 2\n[data]\nbackground = [0, 1, 0]\n", "t");
  EXPECT_EQ(c.model.init_extent, 2.0);
  EXPECT_EQ(c.data.background, (std::array<double, 3>{0.0, 1.0, 0.0}));
}

TEST(Config, DefaultTomlIsTheReference) {
  // Comparing values alone would pass if default.toml left a key out or kept a stale comment:
  // below its header, the file is `splat config`'s reference, word for word.
  std::ifstream in(kConfigs / "default.toml");
  std::stringstream text;
  text << in.rdbuf();
  const std::string reference = config_reference();
  const std::string file = text.str();
  const std::size_t body = file.find("\n\n") + 2;
  ASSERT_GT(body, 1u) << "default.toml: a comment header, a blank line, then the reference";
  EXPECT_EQ(file.substr(body), reference)
      << "regenerate: { head -5 configs/default.toml; build/splat config; } > default.toml";
}

TEST(Config, ToTomlRoundTripsEveryField) {
  const Config c = changed_everywhere();
  const auto changed = value_lines(c.to_toml());
  const auto defaults = value_lines(Config{}.to_toml());
  ASSERT_EQ(changed.size(), defaults.size());
  // Every field must move, or this test would not cover it.
  for (std::size_t i = 0; i < changed.size(); ++i) {
    const std::string key = changed[i].substr(0, changed[i].find(" = "));
    EXPECT_NE(changed[i], defaults[i])
        << "changed_everywhere() leaves " << key << " at its default";
  }

  Config back;
  apply_config_text(back, c.to_toml(), "round trip");
  EXPECT_EQ(back.to_toml(), c.to_toml());
  // Exact, not approximately equal.
  EXPECT_EQ(back.data.background, c.data.background);
  EXPECT_EQ(back.model.init_opacity, c.model.init_opacity);
  EXPECT_EQ(back.train.lr_means_final, c.train.lr_means_final);
  EXPECT_EQ(back.train.lr_shN, c.train.lr_shN);
  EXPECT_EQ(back.train.seed, c.train.seed);
  EXPECT_EQ(back.model.init, InitKind::Points);
  EXPECT_EQ(back.backend.type, BackendKind::Cpu);
}

TEST(Config, ToTomlHasSectionHeadersAndFloats) {
  const std::string t = Config{}.to_toml();
  for (const char* section : {"[data]", "[model]", "[train]", "[backend]", "[densify]", "[output]"})
    EXPECT_HAS(t, section);
  EXPECT_HAS(t, "background = [1.0, 1.0, 1.0]");  // floats stay floats when they are whole
  EXPECT_HAS(t, "type = \"auto\"");
}

TEST(Config, OverrideEqualsFile) {
  // Every line of a fully changed config, given as --set, gives what the file gives.
  const std::string text = changed_everywhere().to_toml();
  Config from_file, from_set;
  apply_config_text(from_file, text, "changed.toml");
  std::istringstream in(text);
  std::string section;
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    if (line.front() == '[') {
      section = line.substr(1, line.size() - 2);
      continue;
    }
    const auto eq = line.find(" = ");
    apply_override(from_set, section + "." + line.substr(0, eq) + "=" + line.substr(eq + 3));
  }
  EXPECT_EQ(from_set.to_toml(), from_file.to_toml());
}

TEST(Config, OverrideForms) {
  Config a, b, c;
  apply_override(a, "backend.type=cpu");  // a bare word is a string
  apply_override(b, "backend.type=\"cpu\"");
  apply_config_text(c, "[backend]\ntype = \"cpu\"\n", "t");
  EXPECT_EQ(a.backend.type, BackendKind::Cpu);
  EXPECT_EQ(a.to_toml(), c.to_toml());
  EXPECT_EQ(b.to_toml(), c.to_toml());

  Config d;
  apply_override(d, " train.iterations = 500 ");
  EXPECT_EQ(d.train.iterations, 500);
  apply_override(d, "model.init_extent=2");  // an integer where a float is expected
  EXPECT_EQ(d.model.init_extent, 2.0);
  apply_override(d, "data.background=[0, 0.5, 1]");
  EXPECT_EQ(d.data.background, (std::array<double, 3>{0.0, 0.5, 1.0}));
  apply_override(d, "output.save_renders=false");
  EXPECT_FALSE(d.output.save_renders);
}

TEST(Config, LegoProtocol) {
  Config c;
  apply_config_file(c, (kConfigs / "lego.toml").string());
  EXPECT_NO_THROW(c.validate());
  EXPECT_EQ(c.train.iterations, 12500);
  EXPECT_EQ(c.model.init, InitKind::Random);
  EXPECT_EQ(c.model.init_points, 100000);
  EXPECT_EQ(c.model.init_extent, 1.3);
  EXPECT_EQ(c.model.sh_degree, 3);
  EXPECT_EQ(c.data.background, (std::array<double, 3>{1.0, 1.0, 1.0}));
  EXPECT_EQ(c.densify.strategy, "mcmc");
  EXPECT_EQ(c.densify.cap_max, 400000);
  EXPECT_EQ(c.densify.growth, 0.025);
  EXPECT_EQ(c.densify.refine_every, 50);
  EXPECT_EQ(c.densify.noise_lr, 3e6);
  EXPECT_EQ(c.densify.opacity_reg, 0.005);  // weighed by Lego's coverage in training
  EXPECT_EQ(c.train.coarse_factor, 2);
  EXPECT_EQ(c.train.lr_shN, 0.00025);
}

TEST(ConfigErrors, UnknownSection) {
  const std::string e = file_error("# comment\n\n[trian]\niterations = 5\n");
  EXPECT_HAS(e, "x.toml:3:");
  EXPECT_HAS(e, "unknown section [trian]");
  EXPECT_HAS(e, "did you mean [train]");
  EXPECT_HAS(file_error("[zzzzzz]\n"), "valid sections: data, model, train");
}

TEST(ConfigErrors, UnknownKey) {
  const std::string e = file_error("[data]\n\n[train]\nseed = 1\niteratons = 5\n");
  EXPECT_HAS(e, "x.toml:5:");
  EXPECT_HAS(e, "unknown key 'train.iteratons'");
  EXPECT_HAS(e, "did you mean 'train.iterations'");

  const std::string far = file_error("[output]\nquality = 5\n");
  EXPECT_HAS(far, "x.toml:2:");
  EXPECT_HAS(far, "unknown key 'output.quality'");
  EXPECT_HAS(far, "valid keys in [output]: save_renders, save_checkpoint, checkpoint_every");

  // A key under the wrong header points at the right one.
  EXPECT_HAS(file_error("[train]\nsh_degree = 2\n"), "did you mean 'model.sh_degree'");
  // Dotted keys and keys outside any section.
  EXPECT_HAS(file_error("\ntrain.iteratons = 5\n"), "x.toml:2: unknown key 'train.iteratons'");
  const std::string top = file_error("iterations = 5\n");
  EXPECT_HAS(top, "x.toml:1:");
  EXPECT_HAS(top, "did you mean 'train.iterations'");
}

TEST(ConfigErrors, WrongType) {
  const std::string e = file_error("[train]\n\n\n\niterations = \"many\"\n");
  EXPECT_HAS(e, "x.toml:5: train.iterations: expected an integer, got string");
  // Doubles are not integers, even whole ones.
  EXPECT_HAS(file_error("[train]\niterations = 500.0\n"),
             "x.toml:2: train.iterations: expected an integer, got float");
  EXPECT_HAS(file_error("[output]\nsave_renders = 1\n"),
             "x.toml:2: output.save_renders: expected a boolean, got integer");
  EXPECT_HAS(file_error("[model]\ninit_extent = \"1\"\n"),
             "x.toml:2: model.init_extent: expected a number, got string");
  EXPECT_HAS(file_error("[model]\ninit_extent = inf\n"),
             "model.init_extent: expected a finite number");
  EXPECT_HAS(file_error("[train]\nseed = -1\n"), "x.toml:2: train.seed: expected a non-negative");
  EXPECT_HAS(file_error("[train]\nseed = 1\n[data]\n\n\n"
                        "background = [1, \"white\", 1]\n"),
             "x.toml:6: data.background: element 1: expected a number, got string");
  EXPECT_HAS(file_error("train = 5\n"), "x.toml:1: 'train' must be a section [train]");
}

TEST(ConfigErrors, BadEnumName) {
  const std::string e = file_error("[backend]\ntype = \"gpu\"\n");
  EXPECT_HAS(e, "x.toml:2: backend.type: \"gpu\" is not one of auto, cpu, cuda");
  EXPECT_HAS(file_error("[model]\ninit = 3\n"),
             "x.toml:2: model.init: expected a string (one of auto, random, points), got integer");
}

TEST(ConfigErrors, ArrayLength) {
  EXPECT_HAS(file_error("[data]\nbackground = [1, 1]\n"),
             "x.toml:2: data.background: expected an array of 3 numbers, got 2 elements");
  EXPECT_HAS(file_error("[data]\nbackground = 1\n"),
             "x.toml:2: data.background: expected an array of 3 numbers, got integer");
}

TEST(ConfigErrors, Range) {
  EXPECT_HAS(file_error("[train]\n\n\n\nssim_lambda = 1.5\n"),
             "x.toml:5: train.ssim_lambda = 1.5 is outside [0, 1]");
  EXPECT_HAS(file_error("[model]\nsh_degree = 4\n"),
             "x.toml:2: model.sh_degree = 4 is outside [0, 3]");
  EXPECT_HAS(file_error("[data]\ndownscale = 0\n"),
             "x.toml:2: data.downscale = 0 is outside [1, 64]");
  EXPECT_HAS(file_error("[data]\nbackground = [0, 2, 0]\n"),
             "x.toml:2: data.background[1] = 2 is outside [0, 1]");
  EXPECT_HAS(file_error("[train]\nlr_means = -1e-4\n"),
             "x.toml:2: train.lr_means = -1e-04 is below the minimum 0");
  EXPECT_HAS(file_error("[data]\ntest_every = 0\n"),
             "x.toml:2: data.test_every = 0 is below the minimum 1");
  // The ends are included.
  Config c;
  apply_config_text(c, "[train]\nssim_lambda = 1\n[model]\nsh_degree = 0\n", "t");
  EXPECT_EQ(c.train.ssim_lambda, 1.0);
}

TEST(ConfigErrors, Syntax) {
  const std::string e = file_error("[train]\niterations = 5\nseed = = 3\n");
  EXPECT_HAS(e, "x.toml:3:");
  EXPECT_HAS(e, "TOML syntax error");
  EXPECT_HAS(file_error("[train]\niterations = 1\niterations = 2\n"), "x.toml:3:");
}

TEST(ConfigErrors, MissingFile) {
  Config c;
  try {
    apply_config_file(c, "/nonexistent/cfg.toml");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_HAS(std::string(e.what()), "/nonexistent/cfg.toml");
  }
}

TEST(ConfigErrors, FailedApplyLeavesConfigUnchanged) {
  Config c;
  EXPECT_THROW(apply_config_text(c, "[train]\niterations = 5\nseed = -3\n", "t"), Error);
  EXPECT_EQ(c.to_toml(), Config{}.to_toml());
  EXPECT_THROW(apply_override(c, "train.ssim_lambda=2"), Error);
  EXPECT_EQ(c.to_toml(), Config{}.to_toml());
}

TEST(ConfigErrors, Override) {
  EXPECT_HAS(override_error("train.iterations"), "expected section.key=value");
  EXPECT_HAS(override_error("iterations=5"), "--set iterations=5: expected section.key=value");
  EXPECT_HAS(override_error("train.=5"), "expected section.key=value");
  const std::string key = override_error("train.iteratons=5");
  EXPECT_HAS(key, "--set train.iteratons=5: unknown key 'train.iteratons'");
  EXPECT_HAS(key, "did you mean 'train.iterations'");
  EXPECT_HAS(override_error("trian.iterations=5"),
             "--set trian.iterations=5: unknown section [trian]");
  EXPECT_HAS(override_error("train.iterations=many"),
             "--set train.iterations=many: train.iterations: expected an integer, got string");
  EXPECT_HAS(override_error("train.iterations=1.5"),
             "train.iterations: expected an integer, got float");
  EXPECT_HAS(override_error("train.ssim_lambda=1.5"),
             "--set train.ssim_lambda=1.5: train.ssim_lambda = 1.5 is outside [0, 1]");
  EXPECT_HAS(override_error("data.background=[1,1]"),
             "expected an array of 3 numbers, got 2 elements");
  EXPECT_HAS(override_error("train.iterations="), "--set train.iterations=: train.iterations:");
  EXPECT_HAS(override_error("train.iterations=5 6"), "is not a TOML value");
  EXPECT_HAS(override_error("backend.type=gpu"),
             "backend.type: \"gpu\" is not one of auto, cpu, cuda");
}

TEST(ConfigValidate, CrossFieldNamesBothKeys) {
  Config c;
  c.train.lr_means = 1e-4;
  c.train.lr_means_final = 1e-3;
  const std::string e = validate_error(c);
  EXPECT_HAS(e, "train.lr_means_final");
  EXPECT_HAS(e, "train.lr_means =");

  Config d;
  d.output.save_checkpoint = false;
  d.output.checkpoint_every = 1000;
  const std::string f = validate_error(d);
  EXPECT_HAS(f, "output.checkpoint_every");
  EXPECT_HAS(f, "output.save_checkpoint");

  Config ok;
  ok.output.save_checkpoint = false;  // no periodic checkpoints asked for: fine
  ok.train.lr_means_final = ok.train.lr_means;
  EXPECT_NO_THROW(ok.validate());
}

TEST(ConfigValidate, RangesOfValuesSetInCode) {
  // Code can bypass the file reader; validate() applies the same table ranges.
  Config c;
  c.data.test_every = 0;
  EXPECT_HAS(validate_error(c), "data.test_every = 0 is below the minimum 1");
  Config d;
  d.train.ssim_lambda = std::nan("");
  EXPECT_HAS(validate_error(d), "train.ssim_lambda = nan is not a finite number");
  Config e;
  e.train.seed = std::numeric_limits<std::uint64_t>::max();  // TOML could not hold it
  EXPECT_HAS(validate_error(e),
             "train.seed = 18446744073709551615 is outside [0, 9223372036854775807]");
}

TEST(ConfigEnums, RoundTrip) {
  for (auto k : {BackendKind::Auto, BackendKind::Cpu, BackendKind::Cuda})
    EXPECT_EQ(from_string<BackendKind>(to_string(k)), k);
  for (auto k : {InitKind::Auto, InitKind::Random, InitKind::Points})
    EXPECT_EQ(from_string<InitKind>(to_string(k)), k);
  EXPECT_EQ(to_string(BackendKind::Cuda), "cuda");
  EXPECT_EQ(to_string(InitKind::Points), "points");
  try {
    from_string<BackendKind>("gpu");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_HAS(std::string(e.what()), "'gpu'");
    EXPECT_HAS(std::string(e.what()), "auto, cpu, cuda");
  }
  EXPECT_THROW(from_string<InitKind>("Random"), Error);  // names are case-sensitive, as in TOML
}

// train.loss: the names of engine/loss.h's rows, the default (3DGS's l1_ssim), and a wrong name
// or type rejected with the key, the place, the valid names and the nearest one.
TEST(ConfigEnums, LossKind) {
  EXPECT_EQ(Config{}.train.loss, LossKind::L1Ssim);
  for (auto k : {LossKind::L1, LossKind::L2, LossKind::L1Ssim, LossKind::L2Ssim})
    EXPECT_EQ(from_string<LossKind>(to_string(k)), k);
  EXPECT_EQ(to_string(LossKind::L1Ssim), "l1_ssim");
  Config c;
  apply_override(c, "train.loss=l2");
  EXPECT_EQ(c.train.loss, LossKind::L2);
  apply_config_text(c, "[train]\nloss = \"l1\"\n", "t");
  EXPECT_EQ(c.train.loss, LossKind::L1);
  EXPECT_HAS(file_error("[train]\nloss = \"ssim\"\n"),
             "x.toml:2: train.loss: \"ssim\" is not one of l1, l2, l1_ssim");
  EXPECT_HAS(override_error("train.loss=1"),
             "train.loss: expected a string (one of l1, l2, l1_ssim, l2_ssim)");
  EXPECT_HAS(file_error("[train]\nloss = \"l2ssim\"\n"),
             "x.toml:2: train.loss: \"l2ssim\" is not one of l1, l2, l1_ssim, l2_ssim (did you "
             "mean \"l2_ssim\"?)");
  apply_override(c, "train.loss=l2_ssim");
  EXPECT_EQ(c.train.loss, LossKind::L2Ssim);
  EXPECT_HAS(c.to_toml(), "loss = \"l2_ssim\"");
  EXPECT_HAS(config_reference(), "loss = \"l1_ssim\"");
}

// backend.fast_math: on by default (the kernels' behaviour before the key existed), a bool.
TEST(Config, FastMath) {
  EXPECT_TRUE(Config{}.backend.fast_math);
  Config c;
  apply_override(c, "backend.fast_math=false");
  EXPECT_FALSE(c.backend.fast_math);
  c.backend.type = BackendKind::Cpu;  // no effect there, and no conflict
  EXPECT_NO_THROW(c.validate());
  EXPECT_HAS(override_error("backend.fast_math=\"no\""), "backend.fast_math: expected a boolean");
}

}  // namespace
}  // namespace splat

namespace splat {
namespace {

// Execution modes: every combination that cannot work is rejected naming both keys; every other
// one is accepted as written (no silent override), and auto resolves by the documented rule.
TEST(Config, BackendModeCombinations) {
  const std::string sub[] = {"auto", "per_kernel", "chained", "graph"},
                    pipe[] = {"auto", "off", "depth2"};
  for (const std::string& s : sub)
    for (const std::string& p : pipe)
      for (const bool timing : {false, true}) {
        Config c;
        c.backend.type = BackendKind::Cuda;
        apply_config_text(c,
                          "[backend]\nsubmission = \"" + s + "\"\npipelining = \"" + p +
                              "\"\ntiming = " + (timing ? "true" : "false") + "\n",
                          "test");
        SCOPED_TRACE(s + " " + p + (timing ? " timing" : ""));
        const std::string rs = s != "auto" ? s : timing ? "per_kernel" : "graph";
        const std::string rp = p != "auto" ? p : timing || rs == "per_kernel" ? "off" : "depth2";
        EXPECT_EQ(to_string(resolved(c.backend.submission, timing)), rs);
        EXPECT_EQ(to_string(resolved(c.backend.pipelining, resolved(c.backend.submission, timing),
                                     timing)),
                  rp);
        const bool bad =
            (rs == "per_kernel" && rp == "depth2") || (timing && (rs == "graph" || rp == "depth2"));
        if (!bad) {
          EXPECT_NO_THROW(c.validate());
          EXPECT_EQ(to_string(c.backend.submission), s);  // kept as written
          EXPECT_EQ(to_string(c.backend.pipelining), p);
          continue;
        }
        const std::string e = validate_error(c);
        if (rs == "per_kernel" && rp == "depth2") {
          EXPECT_HAS(e, "backend.submission = \"" + s + "\"");
          EXPECT_HAS(e, "backend.pipelining = \"depth2\"");
        } else {
          EXPECT_HAS(e, "backend.timing = true");
          EXPECT_HAS(e, rs == "graph" ? "backend.submission = \"graph\""
                                      : "backend.pipelining = \"depth2\"");
        }
      }
  // A graph replays one view per step: batches need chained, which auto picks for them.
  Config batch;
  batch.train.batch_size = 4;
  EXPECT_EQ(resolved(batch.backend.submission, false, batch.train.batch_size), Submission::Chained);
  EXPECT_NO_THROW(batch.validate());
  batch.backend.submission = Submission::Graph;
  const std::string be = validate_error(batch);
  EXPECT_HAS(be, "backend.submission = \"graph\"");
  EXPECT_HAS(be, "train.batch_size = 4");

  Config cpu;
  cpu.backend.type = BackendKind::Cpu;
  EXPECT_NO_THROW(cpu.validate());  // auto, auto, deterministic: the defaults work on the cpu
  cpu.backend.pipelining = Pipelining::Depth2;
  std::string e = validate_error(cpu);
  EXPECT_HAS(e, "backend.type = \"cpu\"");
  EXPECT_HAS(e, "backend.pipelining = \"depth2\"");
  cpu.backend.pipelining = Pipelining::Auto;
  cpu.backend.submission = Submission::Chained;
  e = validate_error(cpu);
  EXPECT_HAS(e, "backend.submission = \"chained\"");
}

// train.appearance: the two names, the defaults (off; the rates the README states), and a wrong
// name, type or negative rate rejected with the key.
TEST(ConfigEnums, Appearance) {
  EXPECT_EQ(Config{}.train.appearance, AppearanceKind::None);
  EXPECT_EQ(Config{}.train.lr_appearance, 1e-3);
  EXPECT_EQ(Config{}.train.appearance_reg, 0.01);
  for (auto k : {AppearanceKind::None, AppearanceKind::Affine})
    EXPECT_EQ(from_string<AppearanceKind>(to_string(k)), k);
  Config c;
  apply_override(c, "train.appearance=affine");
  EXPECT_EQ(c.train.appearance, AppearanceKind::Affine);
  apply_config_text(c, "[train]\nappearance = \"none\"\nlr_appearance = 0.002\n", "t");
  EXPECT_EQ(c.train.appearance, AppearanceKind::None);
  EXPECT_EQ(c.train.lr_appearance, 0.002);
  EXPECT_HAS(file_error("[train]\nappearance = \"exposure\"\n"),
             "x.toml:2: train.appearance: \"exposure\" is not one of none, affine");
  EXPECT_HAS(override_error("train.appearance=true"),
             "train.appearance: expected a string (one of none, affine)");
  EXPECT_HAS(override_error("train.lr_appearance=-1"), "train.lr_appearance");
  EXPECT_HAS(override_error("train.appearance_reg=-0.5"), "train.appearance_reg");
  EXPECT_HAS(config_reference(), "appearance = \"none\"");
}

}  // namespace
}  // namespace splat
