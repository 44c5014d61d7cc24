#include "train/session.h"

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>

#include "core/error.h"
#include "distributed/communicator.h"
#include "engine/target.h"
#include "io/checkpoint.h"
#include "io/file_util.h"
#include "io/model_file.h"
#include "io/ply.h"
#include "io/read_file.h"
#include "report/history.h"
#include "report/report.h"
#include "train/backend_factory.h"
#include "train/interrupt.h"

namespace fs = std::filesystem;

namespace splat {

nlohmann::json view_json(const ViewMetrics& v) {
  return {{"name", v.name}, {"psnr", v.psnr}, {"ssim", v.ssim}, {"cc_psnr", v.cc_psnr}};
}

namespace {

using Report = std::vector<std::pair<std::string, double>>;

// Writes metrics.json and returns its object (the report shows it).
nlohmann::json write_metrics(const std::string& path,
                             const Trainer& t,
                             const Backend& backend,
                             const Report& report,
                             const EvalResult& eval) {
  nlohmann::json j;
  j["run_id"] = t.run_id();
  j["backend"] = backend.name();
  j["iterations"] = t.iteration();
  j["num_splats"] = backend.num_splats();
  j["train_seconds"] = t.train_seconds();
  j["ms_per_iter"] =
      t.loss_history().empty() ? 0.0 : 1000.0 * t.train_seconds() / double(t.loss_history().size());
  j["peak_memory_bytes"] = backend.peak_memory_bytes();
  j["final_loss"] = t.loss_history().empty() ? 0.0 : t.loss_history().back();
  // No test views: no figure (null), rather than a PSNR of 0 that reads like a result.
  j["psnr"] = eval.views.empty() ? nlohmann::json() : nlohmann::json(eval.mean_psnr);
  j["ssim"] = eval.views.empty() ? nlohmann::json() : nlohmann::json(eval.mean_ssim);
  j["cc_psnr"] = eval.views.empty() ? nlohmann::json() : nlohmann::json(eval.mean_cc_psnr);
  nlohmann::json views = nlohmann::json::array();
  for (const ViewMetrics& v : eval.views) views.push_back(view_json(v));
  j["test_views"] = views;
  // Backend figures: host synchronizations (sync.*), scratch growth (alloc.*), stage times (ms.*).
  double step_ms = 0;
  for (const auto& [name, value] : report) {
    j["backend_report"][name] = value;
    if (name.rfind("ms.", 0) == 0) step_ms += value;
  }
  for (const auto& [name, value] : report)
    if (name.rfind("ms.", 0) == 0)
      j["timing"].push_back({{"stage", name.substr(3)},
                             {"mean_ms", value},
                             {"share", step_ms > 0 ? value / step_ms : 0.0}});
  write_atomically(path, [&](std::ofstream& out) { out << j.dump(2) << "\n"; });
  return j;
}

// report.html: the run on one page. Only the views it pictures are rendered again.
void write_report(const fs::path& out,
                  const std::string& title,
                  const Config& cfg,
                  Backend& backend,
                  const std::vector<View>& views,
                  const EvalResult& eval,
                  const nlohmann::json& metrics) {
  ReportInput in;
  in.title = title;
  in.history = read_history((out / "metrics.jsonl").string());
  in.metrics = metrics;
  in.config_toml = cfg.to_toml();
  std::vector<double> psnrs;
  for (const ViewMetrics& v : eval.views) psnrs.push_back(v.psnr);
  const std::vector<std::size_t> pictured = pictured_views(psnrs, in.max_views);
  std::vector<Image> renders, truths;
  renders.reserve(pictured.size());
  truths.reserve(pictured.size());
  for (const std::size_t i : pictured) {
    renders.push_back(backend.render(views[i].camera, final_raster_settings(cfg)));
    truths.push_back(target_image(views[i].image));
  }
  for (std::size_t i = 0, k = 0; i < eval.views.size(); ++i) {
    ReportView v{eval.views[i].name, eval.views[i].psnr, eval.views[i].ssim};
    if (k < pictured.size() && pictured[k] == i) {
      v.truth = &truths[k];
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
    std::fprintf(stderr, "\nper-stage GPU time (CUDA events, mean over steps)\n%-16s %9s %7s\n",
                 "stage", "ms", "share");
    for (const auto& [name, value] : report)
      if (name.rfind("ms.", 0) == 0)
        std::fprintf(stderr, "%-16s %9.4f %6.1f%%\n", name.c_str() + 3, value,
                     100.0 * value / step_ms);
    std::fprintf(stderr, "%-16s %9.4f\n", "total", step_ms);
  }
  for (const auto& [name, value] : report)
    if (name.rfind("sync.", 0) == 0)
      std::fprintf(stderr, "host synchronizations %-18s %8.0f (%.2f per iteration)\n",
                   name.c_str() + 5, value, iterations > 0 ? value / double(iterations) : 0.0);
}

// The header comment of model.ply that says which run wrote it, at which iteration.
std::string ply_run_tag(const Trainer& t) {
  return "splat_run " + t.run_id() + " iteration " + std::to_string(t.iteration());
}

struct RunStamp {
  std::string run_id;
  std::int64_t iteration = 0;
};

// The run an output file says it belongs to; nullopt for files that do not say (older versions,
// damaged files: those are replaced at the end like any other).
std::optional<RunStamp> stamp_of(const fs::path& file) {
  std::error_code ec;
  if (!fs::is_regular_file(file, ec)) return std::nullopt;
  try {
    if (file.extension() == ".ply") {
      for (const std::string& c : read_ply_comments(file.string())) {
        char id[64];
        long long it = 0;
        if (std::sscanf(c.c_str(), "splat_run %63s iteration %lld", id, &it) == 2)
          return RunStamp{id, it};
      }
      return std::nullopt;
    }
    const nlohmann::json j =
        nlohmann::json::parse(read_input_file(file.string(), "metrics file", kMaxJsonBytes));
    if (j.is_object() && j.contains("run_id") && j["run_id"].is_string() &&
        j.contains("iterations") && j["iterations"].is_number_integer())
      return RunStamp{j["run_id"].get<std::string>(), j["iterations"].get<std::int64_t>()};
  } catch (const std::exception&) {
  }
  return std::nullopt;
}

// A resumed run writes into a directory that holds earlier outputs. They must be this run's. A
// model.ply newer than the checkpoint it resumes from is what a run leaves when it stopped between
// its final writes (model.ply first, then checkpoint.ckpt): training on from the checkpoint
// replaces it with the same run's later state, and the warning says so.
void check_resume_set(const TrainRun& run, const Checkpoint& ckpt) {
  if (ckpt.run_id.empty()) return;
  const fs::path out(run.out);
  std::error_code ec;
  const bool own_checkpoint = fs::equivalent(run.resume, out / "checkpoint.ckpt", ec);
  for (const char* name : {"model.ply", "metrics.json"}) {
    const auto stamp = stamp_of(out / name);
    if (!stamp) continue;
    const std::string file = (out / name).string();
    if (stamp->run_id != ckpt.run_id)
      throw Error(file + ": run_id: belongs to run " + stamp->run_id + ", but " + run.resume +
                  " to run " + ckpt.run_id + "; resuming would leave files of two runs in " +
                  run.out + " (choose another --out, or remove the other run's files)");
    if (own_checkpoint && stamp->iteration > ckpt.iteration)
      std::fprintf(stderr,
                   "warning: %s was written at iteration %lld, after %s (iteration %lld): the "
                   "run stopped between its final writes; training on from iteration %lld "
                   "replaces it (copy it elsewhere first to keep it)\n",
                   file.c_str(), (long long)stamp->iteration, run.resume.c_str(),
                   (long long)ckpt.iteration, (long long)ckpt.iteration);
  }
}

bool is_model_or_checkpoint(const std::string& name) {
  const std::string ext = fs::path(name).extension().string();
  return ext == ".ply" || ext == ".ckpt" || ext == ".splat" || ext == ".spz";
}

// Bytes the run's outputs take at `splats` splats (an upper bound: every splat at the config's
// SH degree): the model files, checkpoint.ckpt twice (its FILE.tmp is written beside the last
// one) and every checkpoint_<step>.ckpt of output.checkpoint_every.
double output_bytes(const Config& cfg, double splats, std::int64_t from_iteration) {
  const double floats = 3 + 3 + 4 + 1 + 3.0 * sh_coeffs(int(cfg.model.sh_degree));
  const double model = splats * (floats + 3) * 4;           // a .ply also carries normals
  const double checkpoint = splats * (3 * floats + 3) * 4;  // params, two moments, per-splat extras
  double bytes = model * double(cfg.output.formats.size());
  if (cfg.output.save_checkpoint) bytes += 2 * checkpoint;
  const std::int64_t every = cfg.output.checkpoint_every;
  if (every > 0)
    bytes += checkpoint * double(std::max<std::int64_t>(
                              0, (cfg.train.iterations - 1) / every - from_iteration / every));
  return bytes;
}

std::string gib(double bytes) {
  char s[32];
  std::snprintf(s, sizeof s, "%.2f GiB", bytes / double(1 << 30));
  return s;
}

// Found before training, not when the run ends: the disk holds what the run will write.
void check_free_space(const RunDir& dir,
                      const Config& cfg,
                      std::size_t splats,
                      std::int64_t from_iteration) {
  const double most = double(std::max<std::int64_t>(std::int64_t(splats), cfg.densify.cap_max));
  const double need = output_bytes(cfg, most, from_iteration);
  std::error_code ec;
  const fs::space_info space = fs::space(dir.path(), ec);
  if (ec || double(space.available) >= need) return;
  throw Error(dir.what() + ": the run's outputs at " + std::to_string((long long)most) +
              " splats (densify.cap_max) need about " + gib(need) + ", but the disk has " +
              gib(double(space.available)) +
              " free; free some space, lower densify.cap_max or output.checkpoint_every, or "
              "choose another --out");
}

}  // namespace

const std::vector<std::string>& run_output_files() {
  static const std::vector<std::string> files = {
      "model.ply",    "model.splat",   "model.spz",   "model.compressed.ply", "checkpoint.ckpt",
      "metrics.json", "metrics.jsonl", "config.toml", "report.html"};
  return files;
}

std::unique_ptr<RunDir> open_out_dir(const TrainRun& run) {
  auto dir = std::make_unique<RunDir>(run.out, "--out " + run.out, run.kind);
  const bool resume = !run.resume.empty();
  if (resume) {
    // The run's own outputs, also from a version of splat that kept no manifest.
    std::vector<std::string> own = run_output_files();
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir->path(), ec))
      if (e.path().filename().string().starts_with("checkpoint_") &&
          e.path().extension() == ".ckpt")
        own.push_back(e.path().filename().string());
    dir->adopt(own);
  }
  const std::vector<std::string> previous = dir->owned_existing();
  if (!previous.empty() && !resume) {
    const bool saved = std::ranges::any_of(previous, is_model_or_checkpoint);
    const std::string listed =
        previous.front() +
        (previous.size() > 1 ? " and " + std::to_string(previous.size() - 1) + " more" : "");
    if (saved && run.kind == "demo" && dir->previous_kind() != "demo")
      throw Error("--out " + run.out + " holds a " + dir->previous_kind() + " run (" + listed +
                  "); splat demo replaces only an earlier demo: choose another --out");
    if (saved && run.kind != "demo" && !run.overwrite) {
      const bool has_checkpoint = fs::exists(dir->path() / "checkpoint.ckpt");
      throw Error("--out " + run.out + " holds a previous run (" + listed + "); " +
                  (has_checkpoint ? "continue it with --resume " +
                                        (dir->path() / "checkpoint.ckpt").string() + ", "
                                  : std::string()) +
                  "replace it with --overwrite, or choose another --out");
    }
    if (!saved)
      std::fprintf(stderr,
                   "note: replacing the files of an earlier run in %s that saved no model "
                   "(%s)\n",
                   run.out.c_str(), listed.c_str());
    dir->remove_owned();
  }
  dir->remove_stale_tmp();  // a process killed while writing leaves FILE.tmp: never a valid file
  dir->claim_all(run_output_files());
  return dir;
}

std::pair<EvalResult, int> run_training(const TrainRun& run, const Config& cfg, RunDir* dir) {
  // Every rank trains; rank 0 alone prints, evaluates and writes the outputs.
  dist::Communicator& comm = dist::world();
  const bool leader = comm.rank() == 0;
  require_dataset_dir(run.data);
  std::unique_ptr<RunDir> opened;
  if (leader && !dir) {
    opened = open_out_dir(run);
    dir = opened.get();
  }

  const auto t0 = std::chrono::steady_clock::now();
  const Dataset data = load_dataset(run.data, cfg);
  if (leader)
    std::fprintf(stderr, "loaded %s: %zu training views, %zu test views, %dx%d (%.1f s)\n",
                 run.data.c_str(), data.train.size(), data.test.size(),
                 data.train.front().camera.width, data.train.front().camera.height,
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  const std::int64_t max_width = cfg.data.max_image_width;
  if (leader && max_width > 0 &&
      std::any_of(data.train.begin(), data.train.end(),
                  [&](const View& v) { return v.camera.width == max_width; }))
    std::fprintf(stderr,
                 "note: images wider than data.max_image_width = %lld px are shrunk to that "
                 "width, as 3DGS does; --set data.max_image_width=0 trains them at full size\n",
                 (long long)max_width);

  auto backend = make_backend(cfg.backend);
  Trainer trainer(cfg, data, *backend, comm);
  const fs::path out(run.out);
  const std::string toml = trainer.config().to_toml();
  if (leader) {
    std::fprintf(stderr, "# resolved config\n%s\n", toml.c_str());
    for (const AutoChoice& c : trainer.auto_choices())
      std::fprintf(stderr, "%s = %lld (auto: %s)\n", c.key.c_str(), (long long)c.value,
                   c.reason.c_str());
    if (trainer.config().densify.strategy == "mcmc" && trainer.coverage() < 1.0)
      std::fprintf(stderr,
                   "densify.opacity_reg and scale_reg are weighed by %.3f, the share of the "
                   "training pixels the subject covers (images with a transparent background)\n",
                   trainer.coverage());
  }
  if (!run.init_from.empty()) {
    trainer.initialize_from(load_model(run.init_from).params);
    if (leader)
      std::fprintf(stderr, "initialized from %s: %zu splats\n", run.init_from.c_str(),
                   backend->num_splats());
  } else if (run.resume.empty()) {
    trainer.initialize();
  } else {
    const Checkpoint ckpt = read_checkpoint(run.resume);
    if (leader) check_resume_set(run, ckpt);
    try {
      trainer.resume(ckpt);
    } catch (const Error& e) {
      throw Error(run.resume + ": " + e.what());
    }
    if (leader)
      std::fprintf(stderr, "resumed from %s at iteration %lld\n", run.resume.c_str(),
                   (long long)trainer.iteration());
  }
  const Config& used = trainer.config();
  if (leader) {
    check_free_space(*dir, used, backend->num_splats(), trainer.iteration());
    if (used.output.save_renders) {
      std::vector<std::string> renders;
      for (const View& v : data.test) renders.push_back("renders/test/" + v.name + ".png");
      dir->claim_all(renders);  // a file of the user's there stops the run now, not at the end
    }
    // The first file of the run, once nothing stands in its way.
    write_atomically(dir->claim("config.toml"), [&](std::ofstream& f) { f << toml; });
  }
  const std::string ranks =
      comm.size() > 1 ? " x " + std::to_string(comm.size()) + " ranks (" + comm.name() + ")" : "";
  if (leader)
    std::fprintf(stderr, "training on %s%s: %zu splats, %lld iterations, %lld views per step\n",
                 backend->name().c_str(), ranks.c_str(), backend->num_splats(),
                 (long long)used.train.iterations, (long long)used.train.batch_size);
  if (leader && run.watcher) run.watcher->start(data, used, out, trainer, *backend);
  if (run.on_step) trainer.set_progress_hook(run.on_step);
  install_interrupt_handlers();
  trainer.train(leader ? dir : nullptr);
  if (!leader) return {EvalResult{}, 0};
  // A time budget planned the iterations and schedules: config.toml says what the run did.
  if (used.train.time_budget > 0)
    write_atomically(dir->claim("config.toml"), [&](std::ofstream& f) { f << used.to_toml(); });

  // The model files first, then the checkpoint, each attempted whatever became of the others: a
  // checkpoint that does not fit on the disk never costs the model. Failures are reported together.
  std::vector<std::string> failed;
  std::string written;
  auto attempt = [&](const std::string& name, auto&& write) {
    try {
      write(dir->claim(name));
      written += name + ", ";
    } catch (const std::exception& e) {
      failed.push_back(e.what());
    }
  };
  const Gaussians model = viewer_params(*backend);
  auto save_model = [&](ModelFormat f) {
    attempt(model_file_name(f), [&](const std::string& path) {
      if (f == ModelFormat::Ply)
        write_ply(path, model, ply_run_tag(trainer));  // stamped with the run
      else
        write_model(path, model, f);
    });
  };
  auto save_checkpoint = [&] {
    attempt("checkpoint.ckpt",
            [&](const std::string& path) { write_checkpoint(path, trainer.checkpoint()); });
  };
  auto unsaved = [&] {
    std::string msg = "could not write every output into " + run.out + ":";
    for (const std::string& f : failed) msg += "\n  " + f;
    return Error(msg +
                 (written.empty() ? "" : "\n  written: " + written.substr(0, written.size() - 2)));
  };

  if (trainer.interrupted()) {
    const int signal = interrupt_signal();
    save_model(ModelFormat::Ply);
    save_checkpoint();
    if (!failed.empty()) throw unsaved();
    std::fprintf(stderr,
                 "\nstopped by %s after iteration %lld of %lld: wrote %s and %s\nresume with: "
                 "splat train %s --resume %s --out %s\n",
                 signal == SIGTERM ? "SIGTERM" : "SIGINT", (long long)trainer.iteration(),
                 (long long)used.train.iterations, (out / "model.ply").c_str(),
                 (out / "checkpoint.ckpt").c_str(), run.data.c_str(),
                 (out / "checkpoint.ckpt").c_str(), run.out.c_str());
    return {EvalResult{}, 128 + signal};
  }
  const Report report = backend->report();  // before evaluation adds renders of its own
  for (const ModelFormat f : used.output.formats) save_model(f);
  if (used.output.save_checkpoint) save_checkpoint();
  if (!failed.empty()) throw unsaved();
  const std::string render_dir =
      used.output.save_renders ? (out / "renders" / "test").string() : "";
  const EvalResult eval = evaluate(*backend, data.test, final_raster_settings(used), render_dir);
  print_report(report, trainer.iteration());
  const nlohmann::json metrics =
      write_metrics(dir->claim("metrics.json"), trainer, *backend, report, eval);
  write_report(out, run.data, used, *backend, data.test, eval, metrics);
  const double ms_per_iter =
      trainer.loss_history().empty()
          ? 0.0
          : 1000.0 * trainer.train_seconds() / double(trainer.loss_history().size());
  std::fprintf(stderr, "done: %lld iterations in %.1f s (%.2f ms/iter), %zu splats\n",
               (long long)trainer.iteration(), trainer.train_seconds(), ms_per_iter,
               backend->num_splats());
  if (eval.views.empty())
    std::fprintf(stderr, "test: no test views (the dataset has none)\n");
  else
    std::fprintf(stderr,
                 "test: PSNR %.2f dB, SSIM %.4f over %zu views (colour-corrected PSNR %.2f dB)\n",
                 eval.mean_psnr, eval.mean_ssim, eval.views.size(), eval.mean_cc_psnr);
  std::fprintf(stderr, "wrote %s/{%smetrics.json, metrics.jsonl, report.html, config.toml}\n",
               run.out.c_str(), written.c_str());
  if (run.watcher) run.watcher->finish(trainer, *backend);
  return {eval, 0};
}

}  // namespace splat
