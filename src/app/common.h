#pragma once
// Shared pieces of the subcommands: resolving the config, rendering and evaluating a model, the
// output folders of eval and render. Loading data and models, and the training session:
// train/load.h, train/session.h.
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
#include "train/load.h"
#include "train/session.h"
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
// splat eval's metrics.json: the model, the split, the alpha clamp of the renders, the means and
// every view (under SPLIT_views).
nlohmann::json eval_json(const EvalResult& r,
                         const std::string& model,
                         const std::string& split,
                         float alpha_max);

// splat export: `model` (viewer_params) into `out` in `format` (ply, splat, spz, compressed-ply;
// empty: from the name) with SH up to `sh_degree` (-1: the model's; 0 for .splat). `name` is the
// model's file, for messages. Returns the format and degree written.
std::pair<ModelFormat, int> export_model(const Gaussians& model,
                                         const std::string& name,
                                         const std::string& out,
                                         const std::string& format,
                                         int sh_degree);

// The --out folder of a command that writes results (eval, render) under the output-folder rules
// (io/run_dir.h): its own earlier results are replaced, another command's refused.
std::unique_ptr<RunDir> open_results_dir(const std::string& out, const std::string& kind);

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
