// splat bench replay --checkpoint C DATA [--iters N] [--warmup W] [--out FILE]
// splat bench parity --checkpoint C DATA [--view I] [--tolerance T] [--out FILE]
// splat bench ab --a CONFIG_A --b CONFIG_B DATA [--binary-a P --binary-b P] [--pairs N] [--out DIR]
// splat bench views DATA --out DIR (app/bench_views.cpp)
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>

#include "app/bench.h"
#include "app/commands.h"
#include "core/error.h"
#include "io/checkpoint.h"
#include "io/file_util.h"
#include "report/bench_stats.h"
#include "train/backend_factory.h"
#include "train/densify.h"
#include "train/resolution.h"
#include "train/schedule.h"

namespace splat::app {

namespace {
// A checkpoint steps on the images it trained on, as a resume does: another scene's would time
// and compare a state that does not belong to them.
void check_checkpoint_images(const std::string& path, const Checkpoint& ckpt, const Dataset& data) {
  try {
    check_same_images(ckpt.train_images, train_images_of(data.train));
  } catch (const Error& e) {
    throw Error(path + ": " + e.what());
  }
}
}  // namespace

// Replay: the checkpoint's state, a fixed window of steps, no refine ever (the stable regime).
// Views cycle through the checkpoint's saved epoch permutation from its saved position (the
// trainer's order until the epoch ends), then round-robin 0..n-1 if it has none.
int run_bench_replay(const ReplayArgs& args) {
  if (args.iters < 1 || args.warmup < 0)
    throw Error("bench replay: --iters must be >= 1 and --warmup >= 0");
  const Checkpoint ckpt = read_checkpoint(args.checkpoint);
  const Config cfg = resolve_config(args.config, ckpt.config_toml, args.checkpoint);
  const Dataset data = load_dataset(args.data, cfg);
  if (data.train.empty()) throw Error(args.data + ": no training views");
  check_checkpoint_images(args.checkpoint, ckpt, data);
  if (args.factor < 1) throw Error("bench replay: --factor must be >= 1");
  auto backend = make_backend(cfg.backend);
  const TrainingLevel level =
      args.factor > 1 ? training_level(data.train, args.factor, "bench replay: --factor")
                      : TrainingLevel{};
  std::vector<const Image8*> images;  // per training view, at the size it is stepped on
  std::vector<const Camera*> cameras;
  for (std::size_t i = 0; i < data.train.size(); ++i) {
    const bool coarse = args.factor > 1;
    images.push_back(coarse ? &level.images[i] : &data.train[i].image);
    cameras.push_back(coarse ? &level.cameras[i] : &data.train[i].camera);
  }
  backend->set_images(images);
  if (ckpt.params.sh_degree != cfg.model.sh_degree)
    throw Error(args.checkpoint + ": SH degree " + std::to_string(ckpt.params.sh_degree) +
                " but model.sh_degree = " + std::to_string(cfg.model.sh_degree));
  // With the checkpoint's 3D filter (model.antialiased), appearance transforms
  // (train.appearance) and pose corrections (train.pose_opt), as the run trained.
  TrainState state{ckpt.params, ckpt.adam_m,   ckpt.adam_v, ckpt.iteration,
                   {},          ckpt.filter3d, {},          {}};
  state.appearance = {ckpt.appearance, ckpt.appearance_m, ckpt.appearance_v};
  state.pose = {ckpt.pose, ckpt.pose_m, ckpt.pose_v, ckpt.pose_steps};
  backend->set_state(state);

  // The strategy's per-step settings (regularizers, noise, statistics) stay, so a step costs what
  // it costs in training; its refine hook is never called.
  const double extent = scene_extent(data);
  const auto densifier = make_densifier(cfg, extent);
  std::vector<std::int32_t> order = ckpt.view_order;
  std::size_t pos = std::size_t(std::max<std::int64_t>(0, ckpt.view_pos));
  const auto bad = [&](std::int32_t v) { return v < 0 || v >= std::int32_t(data.train.size()); };
  if (order.empty() || std::any_of(order.begin(), order.end(), bad)) {
    order.clear();
    for (std::int32_t i = 0; i < std::int32_t(data.train.size()); ++i) order.push_back(i);
    pos = 0;
  }

  // A step's time is the interval between the host's returns from step(): in steady state that is
  // the GPU's time per step, whatever the submission and pipelining modes overlap.
  std::vector<StepResult> losses;
  std::vector<double> ms;
  std::int64_t step = ckpt.iteration;
  const int total = args.warmup + args.iters;
  auto last = std::chrono::steady_clock::now();
  std::fprintf(
      stderr,
      "replay on %s: %zu splats from iteration %lld, %d warm-up + %d timed steps at 1/%d size\n",
      backend->name().c_str(), backend->num_splats(), (long long)step, args.warmup, args.iters,
      args.factor);
  std::vector<BatchView> batch(std::size_t(cfg.train.batch_size));  // train.batch_size views a step
  for (int i = 0; i < total; ++i, ++step) {
    for (BatchView& v : batch) {
      v.image = order[pos++ % order.size()];
      v.camera = cameras[std::size_t(v.image)];
    }
    backend->step(batch, step_settings(cfg, extent, step, *densifier));
    losses.clear();
    backend->collect_losses(
        losses, i + 1 == args.warmup || i + 1 == total);  // drained: warm-up done, window done
    const auto now = std::chrono::steady_clock::now();
    for (const StepResult& r : losses)
      if (!std::isfinite(r.loss))
        throw Error("bench replay: loss is " + std::to_string(r.loss) + " near step " +
                    std::to_string(step));
    if (i >= args.warmup)
      ms.push_back(std::chrono::duration<double, std::milli>(now - last).count());
    last = now;
  }
  const bench::Summary s = bench::summarize(ms);
  const auto report = backend->report();
  std::printf(
      "ms/iter over %zu steps: median %.3f  p5 %.3f  p95 %.3f  mean %.3f  (%s, %zu splats)\n", s.n,
      s.median, s.p5, s.p95, s.mean, backend->name().c_str(), backend->num_splats());
  double stage_total = 0;
  for (const auto& [name, value] : report)
    if (name.rfind("ms.", 0) == 0) stage_total += value;
  if (stage_total > 0) std::printf("%-16s %9s %7s\n", "stage", "ms", "share");
  for (const auto& [name, value] : report) {
    if (name.rfind("ms.", 0) == 0)
      std::printf("%-16s %9.4f %6.1f%%\n", name.c_str() + 3, value, 100.0 * value / stage_total);
    else
      std::printf("%-28s %g\n", name.c_str(), value);
  }
  if (!args.out.empty()) {
    nlohmann::json j;
    j["command"] = "bench replay";
    j["checkpoint"] = args.checkpoint;
    j["data"] = args.data;
    j["backend"] = backend->name();
    j["num_splats"] = backend->num_splats();
    j["start_iteration"] = ckpt.iteration;
    j["warmup"] = args.warmup;
    j["iters"] = args.iters;
    j["factor"] = args.factor;
    const Camera& stepped = *batch.front().camera;  // the last step's first view, as rendered
    j["view_size"] = {stepped.width, stepped.height};
    j["view_order"] = "checkpoint epoch permutation from its position, then round-robin";
    j["median_ms"] = s.median;
    j["p5_ms"] = s.p5;
    j["p95_ms"] = s.p95;
    j["mean_ms"] = s.mean;
    j["stddev_ms"] = s.stddev;
    j["step_ms"] = ms;
    for (const auto& [name, value] : report) j["backend_report"][name] = value;
    j["config"] = cfg.to_toml();
    write_atomically(args.out, [&](std::ofstream& f) { f << j.dump(2) << "\n"; });
  }
  return 0;
}

// Parity: one step of both backends from the checkpoint's parameters, with zero Adam moments
// and zero learning rates, so the step leaves the parameters alone and its first moment is
// (1 - beta1) * gradient, the same float operation on both. Compares those gradients group by
// group and the loss; no noise, no regularizers.
int run_bench_parity(const ParityArgs& args) {
  const Checkpoint ckpt = read_checkpoint(args.checkpoint);
  Config cfg = resolve_config(args.config, ckpt.config_toml, args.checkpoint);
  const Dataset data = load_dataset(args.data, cfg);
  check_checkpoint_images(args.checkpoint, ckpt, data);
  if (args.view < 0 || args.view >= int(data.train.size()))
    throw Error("bench parity: --view " + std::to_string(args.view) + " is not one of the " +
                std::to_string(data.train.size()) + " training views");
  std::vector<const Image8*> images;
  for (const View& v : data.train) images.push_back(&v.image);
  StepSettings s;
  s.raster = final_raster_settings(cfg);
  s.raster.sh_degree =
      active_sh_degree(ckpt.iteration, cfg.train.sh_increase_every, int(cfg.model.sh_degree));
  s.loss = cfg.train.loss;
  s.ssim_lambda = cfg.train.ssim_lambda;  // s.lr stays zero

  struct Side {
    std::string name;
    Gaussians grads;
    StepResult loss;
    double seconds = 0;
    Image render;  // the view after the step (the parameters did not move)
  };
  // cpu, cuda as configured, and cuda with deterministic flipped: the two cuda sides differ only
  // in the order of the rasterizer's gradient sums, which measures the float noise floor.
  std::vector<Side> sides;
  for (int k = 0; k < 3; ++k) {
    BackendConfig bc = cfg.backend;
    bc.type = k == 0 ? BackendKind::Cpu : BackendKind::Cuda;
    if (k == 0) bc.submission = Submission::Auto, bc.pipelining = Pipelining::Auto;
    if (k == 2) bc.deterministic = !bc.deterministic;
    auto backend = make_backend(bc);
    backend->set_images(images);
    TrainState st{ckpt.params, ckpt.params, ckpt.params, 0, {}, ckpt.filter3d, {}, {}};
    for (Gaussians* g : {&st.adam_m, &st.adam_v})
      g->for_each_group(
          [](const char*, std::vector<float>& v) { std::fill(v.begin(), v.end(), 0.0f); });
    backend->set_state(st);
    const auto t0 = std::chrono::steady_clock::now();
    backend->step(data.train[args.view].camera, args.view, s);
    std::vector<StepResult> losses;
    backend->collect_losses(losses, true);
    Side side;
    side.name = backend->name();
    side.grads = backend->state().adam_m;
    side.loss = losses.at(0);
    side.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    side.render = backend->render(data.train[args.view].camera, s.raster);
    sides.push_back(std::move(side));
  }

  nlohmann::json j;
  j["command"] = "bench parity";
  j["checkpoint"] = args.checkpoint;
  j["view"] = data.train[args.view].name;
  j["num_splats"] = ckpt.params.size();
  j["tolerance_rel_l2"] = args.tolerance;
  std::printf("parity on view %s, %zu splats, SH degree %d: cpu %.2f s, cuda %.3f s for the step\n",
              data.train[args.view].name.c_str(), ckpt.params.size(), s.raster.sh_degree,
              sides[0].seconds, sides[1].seconds);
  // got against want, group by group; prints a row per group and returns whether all pass.
  auto compare = [&](const Gaussians& got_g, const Gaussians& want_g, const char* what,
                     nlohmann::json& out, double tolerance) {
    std::printf("%s\n%-12s %12s %12s %12s %12s\n", what, "gradient", "rel L2", "1 - cos",
                "max abs diff", "max abs");
    bool pass_all = true;
    std::vector<const std::vector<float>*> want_groups;
    want_g.for_each_group(
        [&](const char*, const std::vector<float>& v) { want_groups.push_back(&v); });
    int g = 0;
    got_g.for_each_group([&](const char* name, const std::vector<float>& got) {
      const std::vector<float>& want = *want_groups[g++];
      double d2 = 0, w2 = 0, g2 = 0, dot = 0, max_diff = 0, max_abs = 0;
      for (std::size_t i = 0; i < want.size(); ++i) {
        const double a = got[i], b = want[i];
        d2 += (a - b) * (a - b), w2 += b * b, g2 += a * a, dot += a * b;
        max_diff = std::max(max_diff, std::abs(a - b));
        max_abs = std::max(max_abs, std::abs(b));
      }
      const double rel = std::sqrt(d2 / std::max(w2, 1e-300));
      const double one_minus_cos = w2 > 0 && g2 > 0 ? 1 - dot / std::sqrt(w2 * g2) : 0;
      const bool pass = rel <= tolerance || w2 == 0;
      pass_all = pass_all && pass;
      std::printf("%-12s %12.3g %12.3g %12.3g %12.3g%s\n", name, rel, one_minus_cos, max_diff,
                  max_abs, pass ? "" : "  over tolerance");
      out[name] = {{"rel_l2", rel},
                   {"one_minus_cos", one_minus_cos},
                   {"max_abs_diff", max_diff},
                   {"max_abs", max_abs},
                   {"pass", pass}};
    });
    return pass_all;
  };
  bool ok =
      compare(sides[1].grads, sides[0].grads, "cuda against cpu", j["gradients"], args.tolerance);
  compare(sides[1].grads, sides[2].grads,
          cfg.backend.deterministic ? "noise floor: cuda against cuda with float atomics"
                                    : "noise floor: cuda against cuda with fixed-point sums",
          j["noise_floor"], std::numeric_limits<double>::infinity());
  // Where the renders differ, if they do: the worst pixel and how many pixels differ visibly.
  const Image& rc = sides[0].render;
  const Image& rg = sides[1].render;
  double max_px = 0, sum_px = 0;
  std::size_t worst = 0, visible = 0;
  for (std::size_t i = 0; i < rc.data.size(); ++i) {
    const double d = std::abs(double(rc.data[i]) - rg.data[i]);
    sum_px += d;
    visible += d > 1.0 / 255;
    if (d > max_px) max_px = d, worst = i;
  }
  const std::size_t wp = worst / 3;
  std::printf(
      "%-12s mean |diff| %.3g, max %.3g at pixel (%zu, %zu), %zu values differ by more than "
      "1/255\n",
      "render", sum_px / double(rc.data.size()), max_px, wp % std::size_t(rc.width),
      wp / std::size_t(rc.width), visible);
  j["render"] = {{"mean_abs_diff", sum_px / double(rc.data.size())},
                 {"max_abs_diff", max_px},
                 {"worst_pixel", {wp % std::size_t(rc.width), wp / std::size_t(rc.width)}},
                 {"values_over_1_255", visible}};
  std::printf("%-12s cpu %.9g / %.9g  cuda %.9g / %.9g\n", "l1 / ssim", sides[0].loss.l1,
              sides[0].loss.ssim, sides[1].loss.l1, sides[1].loss.ssim);
  const double loss_rel = std::abs(sides[1].loss.loss - sides[0].loss.loss) /
                          std::max(std::abs(sides[0].loss.loss), 1e-300);
  std::printf("%-12s cpu %.9g  cuda %.9g  relative difference %.3g\n", "loss", sides[0].loss.loss,
              sides[1].loss.loss, loss_rel);
  ok = ok && loss_rel <= args.tolerance;
  j["loss"] = {{"cpu", sides[0].loss.loss},
               {"cuda", sides[1].loss.loss},
               {"rel_diff", loss_rel},
               {"l1", {sides[0].loss.l1, sides[1].loss.l1}},
               {"ssim", {sides[0].loss.ssim, sides[1].loss.ssim}}};
  j["pass"] = ok;
  std::printf("%s (tolerance: relative L2 %g per gradient group and on the loss)\n",
              ok ? "PASS" : "FAIL", args.tolerance);
  if (!args.out.empty()) {
    write_atomically(args.out, [&](std::ofstream& f) { f << j.dump(2) << "\n"; });
  }
  return ok ? 0 : 1;
}

void add_bench(CLI::App& app, Action& action) {
  CLI::App* bench = app.add_subcommand(
      "bench",
      "benchmarks: replay a checkpoint, cuda-cpu parity, A/B gate two configs, export the views");
  bench->require_subcommand(1);

  auto r = std::make_shared<ReplayArgs>();
  CLI::App* replay = bench->add_subcommand(
      "replay", "ms/iter over a fixed window from a checkpoint, no densification");
  replay->add_option("DATA", r->data, "dataset directory")->required();
  replay->add_option("--checkpoint", r->checkpoint, "checkpoint (.ckpt) to start from")
      ->required()
      ->check(input_file("checkpoint"));
  replay->add_option("--iters", r->iters, "timed steps (default 200)");
  replay->add_option("--warmup", r->warmup, "untimed warm-up steps (default 20)");
  replay->add_option("--factor", r->factor,
                     "steps on the training views downscaled by this factor, as a coarse-to-fine "
                     "step (default 1: full size)");
  replay->add_option("--out", r->out, "write the result as JSON to this file");
  replay->add_flag("--timing", r->config.timing, "per-stage timing (backend.timing)");
  add_config_options(*replay, r->config);
  replay->callback([r, &action] { action = [r] { return run_bench_replay(*r); }; });

  auto p = std::make_shared<ParityArgs>();
  CLI::App* parity = bench->add_subcommand(
      "parity", "cuda against the cpu reference: one step's gradients and loss");
  parity->add_option("DATA", p->data, "dataset directory")->required();
  parity->add_option("--checkpoint", p->checkpoint, "checkpoint (.ckpt) whose state to compare on")
      ->required()
      ->check(input_file("checkpoint"));
  parity->add_option("--view", p->view, "training view index (default 0)");
  parity->add_option("--tolerance", p->tolerance,
                     "relative L2 bound per gradient group and on the loss (default 5e-3)");
  parity->add_option("--out", p->out, "write the result as JSON to this file");
  add_config_options(*parity, p->config);
  parity->callback([p, &action] { action = [p] { return run_bench_parity(*p); }; });

  auto a = std::make_shared<AbArgs>();
  CLI::App* ab =
      bench->add_subcommand("ab", "A/B gate: n pairs of training runs in ABBA order, a verdict");
  ab->add_option("DATA", a->data, "dataset directory")->required();
  ab->add_option("--a", a->config_a, "config of A")->required()->check(input_file("config file"));
  ab->add_option("--b", a->config_b, "config of B")->required()->check(input_file("config file"));
  ab->add_option("--binary-a", a->binary_a, "splat binary for A (default: this one)")
      ->check(input_file("splat binary"));
  ab->add_option("--binary-b", a->binary_b, "splat binary for B (default: this one)")
      ->check(input_file("splat binary"));
  ab->add_option("--pairs", a->pairs, "number of pairs (default 3)")->check(CLI::PositiveNumber);
  ab->add_option("--out", a->out,
                 "output directory: run_k/, report.json, report.md (default bench_ab)");
  ab->add_option("--load-factor", a->load_factor,
                 "retry a run whose load max exceeds this x cores (default 1.5)");
  ab->add_option("--stop-after", a->stop_after,
                 "seconds: stop before a pair that would end past them (by the longest pair so "
                 "far), leaving a partial report to --resume")
      ->check(CLI::NonNegativeNumber);
  ab->add_flag("--resume", a->resume,
               "continue the partial report in --out: the pairs it holds are kept (same binaries, "
               "configs, data and --pairs)");
  ab->callback([a, &action] { action = [a] { return run_bench_ab(*a); }; });

  auto v = std::make_shared<ViewsArgs>();
  CLI::App* views = bench->add_subcommand(
      "views", "write the training and held-out views as splat sees them, for a peer trainer");
  views->add_option("DATA", v->data, "dataset directory")->required();
  views->add_option("--out", v->out, "output directory: views.json and .npy arrays")->required();
  add_config_options(*views, v->config);
  views->callback([v, &action] { action = [v] { return run_bench_views(*v); }; });
}

}  // namespace splat::app
