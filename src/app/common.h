#pragma once
// Shared pieces of the subcommands: resolving the config, loading data and models, writing results.
#include <string>
#include <vector>

#include "io/config.h"
#include "io/dataset.h"
#include "render/backend.h"
#include "train/trainer.h"

namespace splat::app {

struct ConfigArgs {
  std::string config_file;
  std::vector<std::string> sets;
  int downscale = 0;  // 0 = leave data.downscale alone
  bool timing = false;  // --timing: backend.timing = true
};

// Config{} <- base TOML text (e.g. a checkpoint's) <- --config file <- --downscale <- --set;
// validated.
Config resolve_config(const ConfigArgs& args, const std::string& base_toml = "",
                      const std::string& base_origin = "");

// Detects the dataset format of `path` and loads it with the data section of the config.
Dataset load_dataset(const std::string& path, const Config& cfg);

// Model from a .ply or a checkpoint (.ckpt), as a TrainState with zero optimizer moments.
TrainState load_model(const std::string& path);

// Renders `views` with the model at model_path (.ply or .ckpt) on the config's backend, at the
// model's own SH degree; PSNR/SSIM against the views' images, PNGs into render_dir if not empty.
EvalResult evaluate_model(const std::string& model_path, const std::vector<View>& views, const Config& cfg,
                          const std::string& render_dir);

// Trains on `data_path` into `out_dir`: model.ply, checkpoint.ckpt, config.toml, metrics.json,
// renders/test/*.png. Returns the evaluation. Under MPI every rank trains (dist::world()); rank 0
// alone prints, evaluates and writes, and the other ranks return an empty evaluation.
EvalResult run_training(const std::string& data_path, const Config& cfg, const std::string& out_dir,
                        const std::string& resume_path);

std::string default_out_dir(const std::string& data_path);

}  // namespace splat::app
