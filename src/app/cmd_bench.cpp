// splat bench replay --checkpoint C DATA [--iters N] [--warmup W] [--out FILE]
// splat bench ab --a CONFIG_A --b CONFIG_B DATA [--binary-a P --binary-b P] [--pairs N] [--out DIR]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "app/bench.h"
#include "app/commands.h"
#include "core/error.h"
#include "io/checkpoint.h"
#include "train/bench_stats.h"
#include "train/densify.h"
#include "train/schedule.h"

namespace splat::app {

// Replay: the checkpoint's state, a fixed window of steps, no refine ever (the stable regime).
// Views cycle through the checkpoint's saved epoch permutation from its saved position (the
// trainer's order until the epoch ends), then round-robin 0..n-1 if it has none.
int run_bench_replay(const ReplayArgs& args) {
  if (args.iters < 1 || args.warmup < 0) throw Error("bench replay: --iters must be >= 1 and --warmup >= 0");
  const Checkpoint ckpt = read_checkpoint(args.checkpoint);
  const Config cfg = resolve_config(args.config, ckpt.config_toml, args.checkpoint);
  const Dataset data = load_dataset(args.data, cfg);
  if (data.train.empty()) throw Error(args.data + ": no training views");
  auto backend = make_backend(cfg.backend);
  std::vector<const Image*> images;
  for (const View& v : data.train) images.push_back(&v.image);
  backend->set_images(images);
  if (ckpt.params.sh_degree != cfg.model.sh_degree)
    throw Error(args.checkpoint + ": SH degree " + std::to_string(ckpt.params.sh_degree) +
                " but model.sh_degree = " + std::to_string(cfg.model.sh_degree));
  backend->set_state(TrainState{ckpt.params, ckpt.adam_m, ckpt.adam_v, ckpt.iteration});

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

  std::vector<StepResult> losses;
  std::vector<double> ms;
  std::int64_t step = ckpt.iteration;
  const int total = args.warmup + args.iters;
  std::fprintf(stderr, "replay on %s: %zu splats from iteration %lld, %d warm-up + %d timed steps\n",
               backend->name().c_str(), backend->num_splats(), (long long)step, args.warmup, args.iters);
  std::vector<BatchView> batch(std::size_t(cfg.train.batch_size));  // train.batch_size views a step
  for (int i = 0; i < total; ++i, ++step) {
    for (BatchView& v : batch) {
      v.image = order[pos++ % order.size()];
      v.camera = &data.train[std::size_t(v.image)].camera;
    }
    StepSettings s;
    s.raster = final_raster_settings(cfg);
    s.raster.sh_degree = active_sh_degree(step, cfg.train.sh_increase_every, int(cfg.model.sh_degree));
    s.ssim_lambda = cfg.train.ssim_lambda;
    s.lr = learning_rates(cfg.train, extent, step);
    s.batch_size = int(batch.size());
    densifier->step_settings(step, s);
    const auto t0 = std::chrono::steady_clock::now();
    backend->step(batch, s);
    losses.clear();
    backend->collect_losses(losses, true);
    const double dt = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    for (const StepResult& r : losses)
      if (!std::isfinite(r.loss)) throw Error("bench replay: loss is " + std::to_string(r.loss) + " at step " + std::to_string(step));
    if (i >= args.warmup) ms.push_back(dt);
  }
  const bench::Summary s = bench::summarize(ms);
  const auto report = backend->report();
  std::printf("ms/iter over %zu steps: median %.3f  p5 %.3f  p95 %.3f  mean %.3f  (%s, %zu splats)\n", s.n,
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
    j["view_order"] = "checkpoint epoch permutation from its position, then round-robin";
    j["median_ms"] = s.median;
    j["p5_ms"] = s.p5;
    j["p95_ms"] = s.p95;
    j["mean_ms"] = s.mean;
    j["stddev_ms"] = s.stddev;
    j["step_ms"] = ms;
    for (const auto& [name, value] : report) j["backend_report"][name] = value;
    j["config"] = cfg.to_toml();
    std::ofstream f(args.out);
    if (!f) throw Error(args.out + ": cannot write");
    f << j.dump(2) << "\n";
  }
  return 0;
}

void add_bench(CLI::App& app, Action& action) {
  CLI::App* bench = app.add_subcommand("bench", "benchmarks: replay a checkpoint, A/B gate two configs");
  bench->require_subcommand(1);

  auto r = std::make_shared<ReplayArgs>();
  CLI::App* replay = bench->add_subcommand("replay", "ms/iter over a fixed window from a checkpoint, no densification");
  replay->add_option("DATA", r->data, "dataset directory")->required();
  replay->add_option("--checkpoint", r->checkpoint, "checkpoint (.ckpt) to start from")->required()->check(CLI::ExistingFile);
  replay->add_option("--iters", r->iters, "timed steps (default 200)");
  replay->add_option("--warmup", r->warmup, "untimed warm-up steps (default 20)");
  replay->add_option("--out", r->out, "write the result as JSON to this file");
  replay->add_flag("--timing", r->config.timing, "per-stage timing (backend.timing)");
  add_config_options(*replay, r->config);
  replay->callback([r, &action] { action = [r] { return run_bench_replay(*r); }; });

  auto a = std::make_shared<AbArgs>();
  CLI::App* ab = bench->add_subcommand("ab", "A/B gate: n pairs of training runs in ABBA order, a verdict");
  ab->add_option("DATA", a->data, "dataset directory")->required();
  ab->add_option("--a", a->config_a, "config of A")->required()->check(CLI::ExistingFile);
  ab->add_option("--b", a->config_b, "config of B")->required()->check(CLI::ExistingFile);
  ab->add_option("--binary-a", a->binary_a, "splat binary for A (default: this one)")->check(CLI::ExistingFile);
  ab->add_option("--binary-b", a->binary_b, "splat binary for B (default: this one)")->check(CLI::ExistingFile);
  ab->add_option("--pairs", a->pairs, "number of pairs (default 3)")->check(CLI::PositiveNumber);
  ab->add_option("--out", a->out, "output directory: run_k/, report.json, report.md (default bench_ab)");
  ab->add_option("--load-factor", a->load_factor, "retry a run whose load max exceeds this x cores (default 1.5)");
  ab->callback([a, &action] { action = [a] { return run_bench_ab(*a); }; });
}

}  // namespace splat::app
