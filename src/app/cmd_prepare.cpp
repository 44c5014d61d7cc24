// splat prepare INPUT --out DATASET [--overwrite] [--config F] [--set prepare.key=value ...]:
// camera poses for a folder of photos or a video, through COLMAP (io/prepare.h).
#include <cstdio>
#include <filesystem>

#include "app/commands.h"
#include "app/common.h"
#include "core/error.h"
#include "io/prepare.h"
#include "io/run_dir.h"

namespace splat::app {

namespace fs = std::filesystem;

std::string prepare_for_training(const TrainRun& run, const PrepareOptions& opts, RunDir& out) {
  const std::string dataset = (out.path() / "dataset").string();
  std::error_code ec;
  if (!run.resume.empty() && out.owns("dataset") &&
      fs::exists(fs::path(dataset) / "sparse" / "0" / "images.bin", ec)) {
    std::fprintf(stderr, "%s has no camera poses: resuming on the dataset prepared from it in %s\n",
                 run.data.c_str(), dataset.c_str());
    return dataset;
  }
  std::fprintf(stderr,
               "%s has no camera poses (%s): preparing a COLMAP dataset from it in %s first, as "
               "splat prepare %s --out %s does\n",
               run.data.c_str(),
               fs::is_directory(run.data, ec)
                   ? "a folder of images without transforms.json, transforms_train.json or sparse/"
                   : "a video",
               dataset.c_str(), run.data.c_str(), dataset.c_str());
  out.claim_tree("dataset");
  prepare_dataset(run.data, dataset, opts, run.overwrite);
  std::fprintf(stderr, "\n");
  return dataset;
}

void add_prepare(CLI::App& app, Action& action) {
  struct Args {
    std::string input, out;
    bool overwrite = false;
    ConfigArgs config;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand(
      "prepare",
      "camera poses for a folder of photos or a video: writes a COLMAP dataset (COLMAP's "
      "structure from motion; ffmpeg for video)");
  cmd->add_option("INPUT", args->input, "a folder of images (.jpg, .jpeg, .png) or a video file")
      ->required();
  cmd->add_option("--out", args->out, "the dataset folder to write: images/, sparse/0/")
      ->required();
  cmd->add_flag("--overwrite", args->overwrite,
                "replace a dataset splat prepared in the output folder before");
  add_config_options(*cmd, args->config);
  cmd->remove_option(cmd->get_option("--downscale"));  // training's, not SfM's (max_image_size)
  cmd->callback([args, &action] {
    action = [args] {
      const Config cfg = resolve_config(args->config);
      prepare_dataset(args->input, args->out, cfg.prepare, args->overwrite);
      std::fprintf(stderr, "train on it with: splat train %s\n", args->out.c_str());
      return 0;
    };
  });
}

}  // namespace splat::app
