#include "app/common.h"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "dist/communicator.h"
#include "io/checkpoint.h"
#include "io/ply.h"

namespace fs = std::filesystem;

namespace splat::app {

Config resolve_config(const ConfigArgs& args, const std::string& base_toml, const std::string& base_origin) {
  Config cfg;
  if (!base_toml.empty()) apply_config_text(cfg, base_toml, base_origin);
  if (!args.config_file.empty()) apply_config_file(cfg, args.config_file);
  if (args.downscale > 0) apply_override(cfg, "data.downscale=" + std::to_string(args.downscale));
  if (args.timing) apply_override(cfg, "backend.timing=true");
  for (const std::string& s : args.sets) apply_override(cfg, s);
  cfg.validate();
  return cfg;
}

Dataset load_dataset(const std::string& path, const Config& cfg) {
  if (!fs::exists(path)) throw Error(path + ": dataset not found");
  LoadOptions opts;
  for (int c = 0; c < 3; ++c) opts.background[c] = float(cfg.data.background[c]);
  opts.downscale = int(cfg.data.downscale);
  opts.test_every = int(cfg.data.test_every);
  opts.max_train = int(cfg.data.max_train_views);
  opts.holdout_every = int(cfg.data.holdout_every);
  const fs::path dir(path);
  std::error_code ec;
  if (fs::is_regular_file(dir / "transforms_train.json", ec)) return load_blender(path, opts);
  if (fs::is_regular_file(dir / "transforms.json", ec)) return load_transforms(path, opts);
  for (const char* sparse : {"sparse/0", "sparse"})
    for (const char* f : {"cameras.bin", "cameras.txt"})
      if (fs::is_regular_file(dir / sparse / f, ec)) return load_colmap(path, opts);
  throw Error(path +
              ": unrecognized dataset layout; looked for transforms_train.json (NeRF-synthetic), "
              "transforms.json (instant-ngp / nerfstudio) and sparse/0/cameras.{bin,txt} or "
              "sparse/cameras.{bin,txt} (COLMAP, with the images in images/)");
}

TrainState load_model(const std::string& path) {
  TrainState st;
  if (fs::path(path).extension() == ".ckpt") {
    Checkpoint c = read_checkpoint(path);
    st.params = std::move(c.params);
  } else {
    st.params = read_ply(path);
  }
  st.adam_m = st.params;
  st.adam_v = st.params;
  for (Gaussians* g : {&st.adam_m, &st.adam_v})
    g->for_each_group([](const char*, std::vector<float>& v) { std::fill(v.begin(), v.end(), 0.0f); });
  return st;
}

EvalResult evaluate_model(const std::string& model_path, const std::vector<View>& views, const Config& cfg,
                          const std::string& render_dir) {
  const TrainState model = load_model(model_path);
  auto backend = make_backend(cfg.backend);
  backend->set_state(model);
  RasterSettings rs = final_raster_settings(cfg);
  rs.sh_degree = model.params.sh_degree;
  return evaluate(*backend, views, rs, render_dir);
}

std::string default_out_dir(const std::string& data_path) {
  fs::path p = fs::path(data_path).lexically_normal();
  if (p.filename().empty()) p = p.parent_path();
  return (fs::path("out") / p.filename()).string();
}

namespace {

using Report = std::vector<std::pair<std::string, double>>;

void write_metrics(const std::string& path, const Trainer& t, const Backend& backend,
                   const Report& report, const EvalResult& eval) {
  nlohmann::json j;
  j["backend"] = backend.name();
  j["iterations"] = t.iteration();
  j["num_splats"] = backend.num_splats();
  j["train_seconds"] = t.train_seconds();
  j["ms_per_iter"] = t.loss_history().empty() ? 0.0 : 1000.0 * t.train_seconds() / double(t.loss_history().size());
  j["peak_memory_bytes"] = backend.peak_memory_bytes();
  j["final_loss"] = t.loss_history().empty() ? 0.0 : t.loss_history().back();
  j["psnr"] = eval.mean_psnr;
  j["ssim"] = eval.mean_ssim;
  nlohmann::json views = nlohmann::json::array();
  for (const ViewMetrics& v : eval.views) views.push_back({{"name", v.name}, {"psnr", v.psnr}, {"ssim", v.ssim}});
  j["test_views"] = views;
  // Backend figures: host synchronizations (sync.*), scratch growth (alloc.*), stage times (ms.*).
  double step_ms = 0;
  for (const auto& [name, value] : report) {
    j["backend_report"][name] = value;
    if (name.rfind("ms.", 0) == 0) step_ms += value;
  }
  for (const auto& [name, value] : report)
    if (name.rfind("ms.", 0) == 0)
      j["timing"].push_back({{"stage", name.substr(3)}, {"mean_ms", value}, {"share", step_ms > 0 ? value / step_ms : 0.0}});
  std::ofstream(path) << j.dump(2) << "\n";
}

void print_report(const Report& report, std::int64_t iterations) {
  double step_ms = 0;
  for (const auto& [name, value] : report)
    if (name.rfind("ms.", 0) == 0) step_ms += value;
  if (step_ms > 0) {
    std::fprintf(stderr, "\nper-stage GPU time (CUDA events, mean over steps)\n%-16s %9s %7s\n", "stage", "ms", "share");
    for (const auto& [name, value] : report)
      if (name.rfind("ms.", 0) == 0)
        std::fprintf(stderr, "%-16s %9.4f %6.1f%%\n", name.c_str() + 3, value, 100.0 * value / step_ms);
    std::fprintf(stderr, "%-16s %9.4f\n", "total", step_ms);
  }
  for (const auto& [name, value] : report)
    if (name.rfind("sync.", 0) == 0)
      std::fprintf(stderr, "host synchronizations %-18s %8.0f (%.2f per iteration)\n", name.c_str() + 5, value,
                   iterations > 0 ? value / double(iterations) : 0.0);
}

}  // namespace

EvalResult run_training(const std::string& data_path, const Config& cfg, const std::string& out_dir,
                        const std::string& resume_path) {
  // Every rank trains; rank 0 alone prints, evaluates and writes the outputs.
  dist::Communicator& comm = dist::world();
  const bool leader = comm.rank() == 0;
  if (leader) {
    std::fprintf(stderr, "# resolved config\n%s\n", cfg.to_toml().c_str());
    fs::create_directories(out_dir);
    std::ofstream(fs::path(out_dir) / "config.toml") << cfg.to_toml();
  }

  const auto t0 = std::chrono::steady_clock::now();
  const Dataset data = load_dataset(data_path, cfg);
  if (leader)
    std::fprintf(stderr, "loaded %s: %zu training views, %zu test views, %dx%d (%.1f s)\n", data_path.c_str(),
                 data.train.size(), data.test.size(), data.train.front().camera.width,
                 data.train.front().camera.height,
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());

  auto backend = make_backend(cfg.backend);
  Trainer trainer(cfg, data, *backend, comm);
  if (resume_path.empty()) {
    trainer.initialize();
  } else {
    trainer.resume(read_checkpoint(resume_path));
    if (leader)
      std::fprintf(stderr, "resumed from %s at iteration %lld\n", resume_path.c_str(), (long long)trainer.iteration());
  }
  const std::string ranks = comm.size() > 1 ? " x " + std::to_string(comm.size()) + " ranks (" + comm.name() + ")" : "";
  if (leader)
    std::fprintf(stderr, "training on %s%s: %zu splats, %lld iterations, %lld views per step\n",
                 backend->name().c_str(), ranks.c_str(), backend->num_splats(), (long long)cfg.train.iterations,
                 (long long)cfg.train.batch_size);
  trainer.train(out_dir);
  if (!leader) return {};
  const Report report = backend->report();  // before evaluation adds renders of its own

  const fs::path out(out_dir);
  write_ply((out / "model.ply").string(), backend->state().params);
  if (cfg.output.save_checkpoint) write_checkpoint((out / "checkpoint.ckpt").string(), trainer.checkpoint());
  const std::string render_dir = cfg.output.save_renders ? (out / "renders" / "test").string() : "";
  const EvalResult eval = evaluate(*backend, data.test, final_raster_settings(cfg), render_dir);
  print_report(report, trainer.iteration());
  write_metrics((out / "metrics.json").string(), trainer, *backend, report, eval);
  std::fprintf(stderr,
               "done: %lld iterations in %.1f s (%.2f ms/iter), %zu splats\n"
               "test: PSNR %.2f dB, SSIM %.4f over %zu views\nwrote %s/{model.ply, checkpoint.ckpt, metrics.json}\n",
               (long long)trainer.iteration(), trainer.train_seconds(),
               trainer.loss_history().empty() ? 0.0 : 1000.0 * trainer.train_seconds() / double(trainer.loss_history().size()),
               backend->num_splats(), eval.mean_psnr, eval.mean_ssim, eval.views.size(), out_dir.c_str());
  return eval;
}

}  // namespace splat::app
