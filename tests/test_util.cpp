#include "test_util.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <bit>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <random>

#include "core/gaussians.h"
#include "cpu/loss_cpu.h"
#include "cpu/pipeline.h"
#include "engine/target.h"
#include "io/checkpoint.h"
#include "io/demo_scene.h"
#include "io/quantize.h"
#include "train/backend_factory.h"
#include "train/trainer.h"

namespace splat::test {

ViewGrad view_grad(const Gaussians& g, const View& v, const RasterSettings& rs, double lambda) {
  const cpu::RenderState<float> fwd = cpu::render_fwd(g, v.camera, rs);
  const cpu::LossResult<float> loss =
      cpu::photometric_loss(fwd.raster.image, target_image(v.image).data, v.camera.width,
                            v.camera.height, float(lambda), true);
  return {cpu::render_bwd(g, v.camera, rs, fwd, loss.v_image, {}), loss.loss};
}

std::string short_train_args(const std::string& data,
                             const std::filesystem::path& out,
                             const std::string& extra) {
  return "train " + data + " --out " + out.string() +
         " --set backend.type=cpu --set model.init_points=300 --set train.iterations=20 " + extra;
}

RunResult run_splat(const std::string& args, int timeout_s) {
  const std::string limit = timeout_s > 0 ? "timeout " + std::to_string(timeout_s) + " " : "";
  return run_command(limit + splat_binary() + " " + args);
}

RunResult run_command(const std::string& command) {
  RunResult r;
  const std::string cmd = command + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf;
  std::size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.output.append(buf.data(), n);
  const int status = pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

std::filesystem::path temp_dir(const std::string& name) {
  // ctest runs tests as parallel processes: the pid keeps their directories apart.
  auto dir = std::filesystem::temp_directory_path() /
             ("splat_test_" + std::to_string(getpid()) + "_" + name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

std::string demo_video(
    const std::filesystem::path& dir, int frames, double arc, int w, int h, int supersample) {
  DemoSceneOptions o;
  o.width = w;
  o.height = h;
  o.supersample = supersample;
  write_demo_orbit((dir / "frames").string(), frames, 0.35, arc, o);
  const std::string video = (dir / "demo.mp4").string();
  const RunResult enc = run_command("ffmpeg -nostdin -loglevel error -framerate 8 -i " +
                                    (dir / "frames" / "frame_%04d.png").string() +
                                    " -c:v libx264 -crf 12 -pix_fmt yuv420p " + video);
  EXPECT_EQ(enc.exit_code, 0) << enc.output;
  return enc.exit_code == 0 ? video : "";
}

const std::string& small_demo_scene(std::uint64_t seed) {
  static std::map<std::uint64_t, std::string> dirs;
  auto [at, fresh] = dirs.try_emplace(seed);
  if (fresh) {
    const auto d = temp_dir("small_demo_scene_" + std::to_string(seed)) / "scene";
    DemoSceneOptions o;
    o.width = o.height = 64;
    o.train_views = 24;
    o.test_views = 4;
    o.seed = seed;
    write_demo_scene(d.string(), o);
    at->second = d.string();
  }
  return at->second;
}

void expect_bit_identical(const Gaussians& a, const Gaussians& b) {
  EXPECT_EQ(a.sh_degree, b.sh_degree);
  auto bits = [](const std::vector<float>& v) {
    std::vector<std::uint32_t> out;
    for (float x : v) out.push_back(std::bit_cast<std::uint32_t>(x));
    return out;
  };
  std::map<std::string, const std::vector<float>*> groups;
  b.for_each_group([&](const char* name, const std::vector<float>& v) { groups[name] = &v; });
  a.for_each_group([&](const char* name, const std::vector<float>& v) {
    EXPECT_EQ(bits(v), bits(*groups.at(name))) << name;
  });
}

Config short_cpu_training(std::int64_t iterations) {
  Config cfg;
  cfg.train.iterations = iterations;
  cfg.model.init_opacity = 0.1;
  cfg.model.init_scale = 1.0;
  cfg.train.log_every = 0;
  cfg.backend.type = BackendKind::Cpu;
  return cfg;
}

double held_out_psnr(const Config& cfg, const Dataset& data) {
  auto backend = make_backend(cfg.backend);
  Trainer t(cfg, data, *backend);
  t.initialize();
  t.train(nullptr);
  return evaluate(*backend, data.test, final_raster_settings(cfg), "").mean_psnr;
}

TrainedRun trained_run(const Config& cfg, const Dataset& data) {
  auto backend = make_backend(cfg.backend);
  Trainer t(cfg, data, *backend);
  t.initialize();
  t.train(nullptr);
  return {backend->state(), t.loss_history()};
}

AcrossSetting resume_across_setting(const Config& off, const Config& on, const Dataset& data) {
  AcrossSetting r;
  auto b1 = make_backend(off.backend);
  Trainer plain(off, data, *b1);
  plain.initialize();
  plain.train(nullptr);
  r.without = plain.checkpoint();
  auto b2 = make_backend(on.backend);
  Trainer resumed(on, data, *b2);
  resumed.resume(r.without);
  r.resumed = b2->state();
  resumed.train(nullptr);
  r.with = resumed.checkpoint();
  Config again = off;
  again.train.iterations = on.train.iterations + 2;
  auto b3 = make_backend(again.backend);
  Trainer dropping(again, data, *b3);
  r.error = error_of([&] { dropping.resume(r.with); });
  return r;
}

Checkpoint expect_resume_exact(const Config& cfg, const Dataset& data, std::int64_t at) {
  const auto dir = temp_dir("resume_exact");
  auto b1 = make_backend(cfg.backend);
  Trainer full(cfg, data, *b1);
  full.initialize();
  RunDir out(dir.string(), "test", "train");
  full.train(&out);

  auto b2 = make_backend(cfg.backend);
  Trainer resumed(cfg, data, *b2);
  const Checkpoint saved =
      read_checkpoint((dir / ("checkpoint_" + std::to_string(at) + ".ckpt")).string());
  resumed.resume(saved);
  EXPECT_EQ(resumed.iteration(), at);
  resumed.train(nullptr);

  const TrainState a = b1->state(), b = b2->state();
  EXPECT_EQ(a.adam_step, b.adam_step);
  expect_bit_identical(a.params, b.params);
  expect_bit_identical(a.adam_m, b.adam_m);
  expect_bit_identical(a.adam_v, b.adam_v);
  EXPECT_EQ(a.appearance.params, b.appearance.params);  // exact: EXPECT_EQ on floats is ==
  EXPECT_EQ(a.appearance.m, b.appearance.m);
  EXPECT_EQ(a.appearance.v, b.appearance.v);
  EXPECT_EQ(a.pose.params, b.pose.params);
  EXPECT_EQ(a.pose.m, b.pose.m);
  EXPECT_EQ(a.pose.v, b.pose.v);
  EXPECT_EQ(a.pose.steps, b.pose.steps);
  // The resumed run's losses are the tail of the uninterrupted run's.
  const std::size_t rest = std::size_t(cfg.train.iterations - at);
  EXPECT_EQ(resumed.loss_history().size(), rest);
  if (resumed.loss_history().size() != rest) return saved;
  for (std::size_t i = 0; i < rest; ++i)
    EXPECT_EQ(full.loss_history()[std::size_t(at) + i], resumed.loss_history()[i]);
  return saved;
}

double relative_difference(const Gaussians& a, const Gaussians& b, const Gaussians* init) {
  double diff = 0, moved = 0;
  std::vector<const std::vector<float>*> bs, is;
  b.for_each_group([&](const char*, const std::vector<float>& v) { bs.push_back(&v); });
  if (init)
    init->for_each_group([&](const char*, const std::vector<float>& v) { is.push_back(&v); });
  std::size_t g = 0;
  a.for_each_group([&](const char*, const std::vector<float>& v) {
    const std::vector<float>& w = *bs[g];
    for (std::size_t i = 0; i < v.size(); ++i) {
      diff += std::pow(double(v[i]) - w[i], 2);
      const double base = init && i < is[g]->size() ? (*is[g])[i] : 0.0;
      moved += std::pow(double(w[i]) - base, 2);
    }
    ++g;
  });
  return std::sqrt(diff / moved);
}

Gaussians model_in_range(int degree, std::size_t n, unsigned seed) {
  Gaussians g;
  g.sh_degree = degree;
  g.resize(n);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (float& v : g.means) v = 2 * u(rng);
  for (float& v : g.log_scales) v = -3 + 3 * u(rng);
  for (float& v : g.quats) v = u(rng);
  for (float& v : g.raw_opacity) v = 4 * u(rng);
  const std::size_t K = std::size_t(g.K());
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t k = 0; k < K; ++k)
      for (std::size_t c = 0; c < 3; ++c)
        g.sh[(i * K + k) * 3 + c] =
            k == 0 ? float((0.5 + 0.45 * u(rng) - 0.5) / kShC0) : 0.5f * u(rng);
  return g;
}

std::vector<std::uint8_t> file_bytes(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace splat::test
