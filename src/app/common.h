#pragma once
// Shared pieces of the subcommands: resolving the config, loading data and models, writing results.
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "app/live_view.h"
#include "engine/backend.h"
#include "io/dataset.h"
#include "io/model_file.h"
#include "io/run_dir.h"
#include "train/config.h"
#include "train/trainer.h"

namespace splat::app {

struct ConfigArgs {
  std::string config_file;
  // TOML text applied where the --config file is (the Python module's config dict), or empty.
  std::string config_text;
  std::vector<std::string> sets;
  int downscale = 0;    // 0 = leave data.downscale alone
  bool timing = false;  // --timing: backend.timing = true
};

// Config{} <- base TOML text (e.g. a checkpoint's) <- --config file (or config_text) <- --downscale
// <- --set;
// validated.
Config resolve_config(const ConfigArgs& args,
                      const std::string& base_toml = "",
                      const std::string& base_origin = "");
// The same from a base Config.
Config resolve_config(const ConfigArgs& args, Config base);

// The config to evaluate or render `model_path` with: a checkpoint's data section (the downscale
// and background it was trained with) as the base, then --config and --set.
Config resolve_model_config(const ConfigArgs& args, const std::string& model_path);

// Detects the dataset format of `path` and loads it with the data section of the config.
Dataset load_dataset(const std::string& path, const Config& cfg);

// Model from a .ply or a checkpoint (.ckpt), as a TrainState with zero optimizer moments (and a
// checkpoint's 3D filter, model.antialiased).
TrainState load_model(const std::string& path);
// The parameters for viewers and model files: the 3D filter (model.antialiased) baked into the
// scales and opacities (filter3d::bake), so that plain 3DGS renderers draw the filtered model.
Gaussians viewer_params(const TrainState& st);
Gaussians viewer_params(const Backend& backend);

// A backend of the config holding `model`, and the settings that render it at its own SH degree
// (render, eval, the Python module's Model.render).
struct ModelRenderer {
  std::unique_ptr<Backend> backend;
  RasterSettings settings;
};
ModelRenderer model_renderer(const TrainState& model, const Config& cfg);

// Renders `views` with the model at model_path (.ply or .ckpt) on the config's backend, at the
// model's own SH degree; PSNR/SSIM against the views' images, PNGs into render_dir if not empty.
// alpha_max: the renders' alpha clamp (splat eval --alpha-max scores a peer's model with its own).
EvalResult evaluate_model(const std::string& model_path,
                          const std::vector<View>& views,
                          const Config& cfg,
                          const std::string& render_dir,
                          float alpha_max = config::alpha_max);
// The same for a model in memory; `name` says which in messages.
EvalResult evaluate_model(const TrainState& model,
                          const std::string& name,
                          const std::vector<View>& views,
                          const Config& cfg,
                          const std::string& render_dir,
                          float alpha_max = config::alpha_max);
// One view's entry in metrics.json: name, psnr, ssim, cc_psnr.
nlohmann::json view_json(const ViewMetrics& v);
// splat eval's metrics.json: the model, the split, the means and every view (under SPLIT_views).
nlohmann::json eval_json(const EvalResult& r, const std::string& model, const std::string& split);

// splat export: `model` (viewer_params) into `out` in `format` (ply, splat, spz, compressed-ply;
// empty: from the name) with SH up to `sh_degree` (-1: the model's; 0 for .splat). `name` is the
// model's file, for messages. Returns the format and degree written.
std::pair<ModelFormat, int> export_model(const Gaussians& model,
                                         const std::string& name,
                                         const std::string& out,
                                         const std::string& format,
                                         int sh_degree);

struct TrainRun {
  std::string data{}, out{};
  std::string resume{};  // checkpoint to continue from, or empty
  // A model whose splats start a fresh run (instead of model.init), or empty.
  std::string init_from{};
  bool overwrite = false;      // replace a previous run in `out` (otherwise it is refused)
  std::string kind = "train";  // the command, in the folder's manifest ("demo" replaces a demo)
  std::optional<LiveViewOptions> view{};               // serve the live viewer (rank 0)
  std::function<void(const StepProgress&)> on_step{};  // Trainer::set_progress_hook, or empty
};

// The files of a training run in an output directory (a previous run is recognised by them).
const std::vector<std::string>& run_output_files();

// Opens run.out under the output-folder rules (io/run_dir.h), before any work: a writable
// directory, locked for this process, holding no previous run unless the run resumes it, replaces
// it (--overwrite) or is a demo replacing a demo; a previous run that saved no model or checkpoint
// (a run that failed or was killed early) is replaced with a note. The files of run_output_files()
// are claimed, so that a file of the user's at one of those names stops the run now.
std::unique_ptr<RunDir> open_out_dir(const TrainRun& run);

// The --out folder of a command that writes results (eval, render) under the output-folder rules
// (io/run_dir.h): its own earlier results are replaced, another command's refused.
std::unique_ptr<RunDir> open_results_dir(const std::string& out, const std::string& kind);

// Trains on run.data into run.out: model.ply, checkpoint.ckpt, config.toml, metrics.json,
// metrics.jsonl, report.html, renders/test/*.png. Returns the evaluation and 0, or, when
// SIGINT/SIGTERM stopped it, the exit status 128 + signal after saving checkpoint.ckpt and
// model.ply. Under MPI every rank trains (dist::world()); rank 0 alone prints, evaluates and
// writes the outputs, and the other ranks return an empty evaluation. `dir`: run.out already
// opened (open_out_dir), or null to open it here. Free space for the outputs at densify.cap_max is
// checked before training; at the end the model files are written before the checkpoint.
std::pair<EvalResult, int> run_training(const TrainRun& run,
                                        const Config& cfg,
                                        RunDir* dir = nullptr);

std::string default_out_dir(const std::string& data_path);

// splat train: a resumed run starts from the checkpoint's config, --config and --set apply on top;
// photos or a video are prepared first; `gpus` > 0 trains on that many local GPUs (cmd_train.cpp).
// Returns the exit status (run_training's).
int train_command(TrainRun run, ConfigArgs config, int gpus);
// splat demo: generates the demo scene in run.out/scene and trains on it with the demo's settings
// under `config` (cmd_demo.cpp). run.data and run.kind are set here. Returns the exit status.
int demo_command(TrainRun run, const ConfigArgs& config);

// `splat train` on photos or a video (io/prepare.h's is_unposed_input): prepares a COLMAP dataset
// in the run's folder `out` (opened by open_out_dir), as its dataset/ tree, and returns its path;
// a resumed run takes the one prepared before (cmd_prepare.cpp).
std::string prepare_for_training(const TrainRun& run, const PrepareOptions& opts, RunDir& out);

}  // namespace splat::app
