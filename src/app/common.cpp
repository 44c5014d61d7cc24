#include "app/common.h"

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "dist/communicator.h"
#include "io/checkpoint.h"
#include "io/file_util.h"
#include "io/model_file.h"
#include "io/ply.h"
#include "train/backend_factory.h"
#include "train/history.h"
#include "train/interrupt.h"
#include "train/report.h"

namespace fs = std::filesystem;

namespace splat::app {

Config resolve_config(const ConfigArgs& args, const std::string& base_toml, const std::string& base_origin) {
  Config cfg;
  if (!base_toml.empty()) apply_config_text(cfg, base_toml, base_origin);
  return resolve_config(args, std::move(cfg));
}

Config resolve_model_config(const ConfigArgs& args, const std::string& model_path) {
  Config base;
  if (fs::path(model_path).extension() == ".ckpt") {
    Config trained;
    apply_config_text(trained, read_checkpoint(model_path).config_toml, model_path + " (its config)");
    base.data = trained.data;
  }
  return resolve_config(args, std::move(base));
}

Config resolve_config(const ConfigArgs& args, Config cfg) {
  if (!args.config_file.empty()) apply_config_file(cfg, args.config_file);
  if (args.downscale > 0) apply_override(cfg, "data.downscale=" + std::to_string(args.downscale));
  if (args.timing) apply_override(cfg, "backend.timing=true");
  for (const std::string& s : args.sets) apply_override(cfg, s);
  if (args.downscale > 0 && cfg.data.downscale != args.downscale)
    throw Error("--downscale " + std::to_string(args.downscale) + " disagrees with --set data.downscale=" +
                std::to_string(cfg.data.downscale) + " (give one of them)");
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
  opts.crop_undistorted = cfg.data.crop_undistorted;
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
    st.params = read_model(path);
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

// Writes metrics.json and returns its object (the report shows it).
nlohmann::json write_metrics(const std::string& path, const Trainer& t, const Backend& backend,
                             const Report& report, const EvalResult& eval) {
  nlohmann::json j;
  j["backend"] = backend.name();
  j["iterations"] = t.iteration();
  j["num_splats"] = backend.num_splats();
  j["train_seconds"] = t.train_seconds();
  j["ms_per_iter"] = t.loss_history().empty() ? 0.0 : 1000.0 * t.train_seconds() / double(t.loss_history().size());
  j["peak_memory_bytes"] = backend.peak_memory_bytes();
  j["final_loss"] = t.loss_history().empty() ? 0.0 : t.loss_history().back();
  // No test views: no figure (null), rather than a PSNR of 0 that reads like a result.
  j["psnr"] = eval.views.empty() ? nlohmann::json() : nlohmann::json(eval.mean_psnr);
  j["ssim"] = eval.views.empty() ? nlohmann::json() : nlohmann::json(eval.mean_ssim);
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
  write_atomically(path, [&](std::ofstream& out) { out << j.dump(2) << "\n"; });
  return j;
}

// report.html: the run on one page. Only the views it pictures are rendered again.
void write_report(const fs::path& out, const std::string& title, const Config& cfg, Backend& backend,
                  const std::vector<View>& views, const EvalResult& eval, const nlohmann::json& metrics) {
  ReportInput in;
  in.title = title;
  in.history = read_history((out / "metrics.jsonl").string());
  in.metrics = metrics;
  in.config_toml = cfg.to_toml();
  std::vector<double> psnrs;
  for (const ViewMetrics& v : eval.views) psnrs.push_back(v.psnr);
  const std::vector<std::size_t> pictured = pictured_views(psnrs, in.max_views);
  std::vector<Image> renders;
  renders.reserve(pictured.size());
  for (const std::size_t i : pictured) renders.push_back(backend.render(views[i].camera, final_raster_settings(cfg)));
  for (std::size_t i = 0, k = 0; i < eval.views.size(); ++i) {
    ReportView v{eval.views[i].name, eval.views[i].psnr, eval.views[i].ssim};
    if (k < pictured.size() && pictured[k] == i) {
      v.truth = &views[i].image;
      v.render = &renders[k++];
    }
    in.views.push_back(v);
  }
  write_report_html((out / "report.html").string(), in);
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

const std::vector<std::string>& run_output_files() {
  static const std::vector<std::string> files = {
      "model.ply",    "model.splat",   "model.spz",   "model.compressed.ply", "checkpoint.ckpt",
      "metrics.json", "metrics.jsonl", "config.toml", "report.html"};
  return files;
}

void prepare_out_dir(const TrainRun& run) {
  const fs::path out(run.out);
  std::error_code ec;
  if (fs::exists(out, ec) && !fs::is_directory(out, ec))
    throw Error("--out " + run.out + ": exists and is not a directory");
  std::vector<fs::path> previous;
  if (fs::is_directory(out, ec)) {
    for (const std::string& f : run_output_files())
      if (fs::exists(out / f, ec)) previous.push_back(out / f);
    for (const auto& e : fs::directory_iterator(out, ec))
      if (e.path().filename().string().starts_with("checkpoint_") && e.path().extension() == ".ckpt")
        previous.push_back(e.path());
  }
  if (!previous.empty() && run.resume.empty() && !run.overwrite)
    throw Error("--out " + run.out + " holds a previous run (" + previous.front().filename().string() +
                (previous.size() > 1 ? " and " + std::to_string(previous.size() - 1) + " more" : "") +
                "); continue it with --resume " + (out / "checkpoint.ckpt").string() +
                ", replace it with --overwrite, or choose another --out");
  if (run.overwrite && run.resume.empty()) {
    for (const fs::path& p : previous) fs::remove(p, ec);
    fs::remove_all(out / "renders", ec);
  }
  fs::create_directories(out, ec);
  if (ec) throw Error("--out " + run.out + ": cannot create the directory: " + ec.message());
  // Found now, not after hours of training: the directory takes files.
  const fs::path probe = out / ".splat_write_test";
  {
    std::ofstream f(probe);
    if (!(f << "ok") || !(f.flush()))
      throw Error("--out " + run.out + ": cannot write into the directory (" + std::strerror(errno) + ")");
  }
  fs::remove(probe, ec);
}

std::pair<EvalResult, int> run_training(const TrainRun& run, const Config& cfg) {
  // Every rank trains; rank 0 alone prints, evaluates and writes the outputs.
  dist::Communicator& comm = dist::world();
  const bool leader = comm.rank() == 0;
  std::error_code ec;
  if (!fs::exists(run.data, ec))
    throw Error(run.data + ": dataset not found" + (ec ? " (" + ec.message() + ")" : ""));
  if (leader) prepare_out_dir(run);

  const auto t0 = std::chrono::steady_clock::now();
  const Dataset data = load_dataset(run.data, cfg);
  if (leader)
    std::fprintf(stderr, "loaded %s: %zu training views, %zu test views, %dx%d (%.1f s)\n", run.data.c_str(),
                 data.train.size(), data.test.size(), data.train.front().camera.width,
                 data.train.front().camera.height,
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());

  auto backend = make_backend(cfg.backend);
  Trainer trainer(cfg, data, *backend, comm);
  const fs::path out(run.out);
  if (leader) {
    const std::string toml = trainer.config().to_toml();
    std::fprintf(stderr, "# resolved config\n%s\n", toml.c_str());
    for (const AutoChoice& c : trainer.auto_choices())
      std::fprintf(stderr, "%s = %lld (auto: %s)\n", c.key.c_str(), (long long)c.value, c.reason.c_str());
    write_atomically((out / "config.toml").string(), [&](std::ofstream& f) { f << toml; });
  }
  if (!run.init_from.empty()) {
    trainer.initialize_from(load_model(run.init_from).params);
    if (leader)
      std::fprintf(stderr, "initialized from %s: %zu splats\n", run.init_from.c_str(), backend->num_splats());
  } else if (run.resume.empty()) {
    trainer.initialize();
  } else {
    trainer.resume(read_checkpoint(run.resume));
    if (leader)
      std::fprintf(stderr, "resumed from %s at iteration %lld\n", run.resume.c_str(), (long long)trainer.iteration());
  }
  const Config& used = trainer.config();
  const std::string ranks = comm.size() > 1 ? " x " + std::to_string(comm.size()) + " ranks (" + comm.name() + ")" : "";
  if (leader)
    std::fprintf(stderr, "training on %s%s: %zu splats, %lld iterations, %lld views per step\n",
                 backend->name().c_str(), ranks.c_str(), backend->num_splats(), (long long)used.train.iterations,
                 (long long)used.train.batch_size);
  install_interrupt_handlers();
  trainer.train(run.out);
  if (!leader) return {EvalResult{}, 0};

  if (trainer.interrupted()) {
    const int signal = interrupt_signal();
    write_checkpoint((out / "checkpoint.ckpt").string(), trainer.checkpoint());
    write_ply((out / "model.ply").string(), backend->state().params);
    std::fprintf(stderr,
                 "\nstopped by %s after iteration %lld of %lld: wrote %s and %s\nresume with: splat train %s --resume %s --out %s\n",
                 signal == SIGTERM ? "SIGTERM" : "SIGINT", (long long)trainer.iteration(),
                 (long long)used.train.iterations, (out / "checkpoint.ckpt").c_str(), (out / "model.ply").c_str(),
                 run.data.c_str(), (out / "checkpoint.ckpt").c_str(), run.out.c_str());
    return {EvalResult{}, 128 + signal};
  }
  const Report report = backend->report();  // before evaluation adds renders of its own
  std::string written;
  for (const ModelFormat f : used.output.formats) {
    write_model((out / model_file_name(f)).string(), backend->state().params, f);
    written += model_file_name(f) + ", ";
  }
  if (used.output.save_checkpoint) write_checkpoint((out / "checkpoint.ckpt").string(), trainer.checkpoint());
  const std::string render_dir = used.output.save_renders ? (out / "renders" / "test").string() : "";
  const EvalResult eval = evaluate(*backend, data.test, final_raster_settings(used), render_dir);
  print_report(report, trainer.iteration());
  const nlohmann::json metrics = write_metrics((out / "metrics.json").string(), trainer, *backend, report, eval);
  write_report(out, run.data, used, *backend, data.test, eval, metrics);
  const double ms_per_iter =
      trainer.loss_history().empty() ? 0.0 : 1000.0 * trainer.train_seconds() / double(trainer.loss_history().size());
  std::fprintf(stderr, "done: %lld iterations in %.1f s (%.2f ms/iter), %zu splats\n", (long long)trainer.iteration(),
               trainer.train_seconds(), ms_per_iter, backend->num_splats());
  if (eval.views.empty())
    std::fprintf(stderr, "test: no test views (the dataset has none)\n");
  else
    std::fprintf(stderr, "test: PSNR %.2f dB, SSIM %.4f over %zu views\n", eval.mean_psnr, eval.mean_ssim,
                 eval.views.size());
  std::fprintf(stderr, "wrote %s/{%s%smetrics.json, metrics.jsonl, report.html, config.toml}\n", run.out.c_str(),
               written.c_str(), used.output.save_checkpoint ? "checkpoint.ckpt, " : "");
  return {eval, 0};
}

}  // namespace splat::app
