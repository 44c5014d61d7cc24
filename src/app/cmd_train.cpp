// splat train DATA [--config F] [--set section.key=value ...] [--out DIR] [--resume CKPT |
// --init-from MODEL]
// [--gpus N]
#include <optional>

#include "app/commands.h"
#include "app/common.h"
#include "app/launch.h"
#include "core/error.h"
#include "distributed/communicator.h"
#include "io/checkpoint.h"
#include "io/prepare.h"
#include "io/read_file.h"
#include "io/run_dir.h"
#include "train/backend_factory.h"

namespace splat::app {

CLI::Validator input_file(const char* what) {
  return CLI::Validator(
      [what](std::string& path) -> std::string {
        if (path.empty()) return "the " + std::string(what) + " path is empty";
        try {
          require_regular_file(path, what);
        } catch (const Error& e) {
          return e.what();
        }
        return "";
      },
      "FILE");
}

void add_config_options(CLI::App& cmd, ConfigArgs& args) {
  cmd.add_option("--config", args.config_file, "TOML config file (see configs/)")
      ->check(input_file("config file"));
  // One value per --set, so that `--set a=1 DATA` leaves DATA to the positional argument.
  cmd.add_option("--set", args.sets, "override one key: section.key=value (repeatable)")
      ->allow_extra_args(false);
  cmd.add_option("--downscale", args.downscale,
                 "image downscale factor (same as --set data.downscale=N); a dataset's own "
                 "images_N/ copies are used where it has them")
      ->check(CLI::Range(1, 64));
}

int train_command(TrainRun run, ConfigArgs config, int gpus) {
  // Photos or a video get their camera poses first (splat prepare), in this one process.
  const bool unposed = is_unposed_input(run.data);
  if (unposed && (gpus > 1 || dist::world().size() > 1))
    throw Error(run.data + " has no camera poses; prepare it first with splat prepare " + run.data +
                " --out DATASET, then train on DATASET with several GPUs");
  if (gpus > 0) {
    dist::launch_gpus(gpus);
    config.sets.insert(config.sets.begin(), "backend.type=cuda");
  }
  // A resumed run starts from the checkpoint's config; --config and --set apply on top.
  const std::string base = run.resume.empty() ? "" : read_checkpoint(run.resume).config_toml;
  const Config cfg = resolve_config(config, base, run.resume);
  if (gpus > 0 && cfg.backend.type != BackendKind::Cuda)
    throw Error("--gpus " + std::to_string(gpus) + " trains on GPUs, but backend.type = \"" +
                std::string(to_string(cfg.backend.type)) + "\" was set (give one of them)");
  // Under mpirun on the cuda backend the ranks reduce on the GPU: NCCL, joined through MPI.
  const bool nccl_over_mpi =
      dist::world().size() > 1 && !dist::world().reduces_device_buffers() && uses_cuda(cfg.backend);
  if (nccl_over_mpi) dist::gpus_over_mpi();
  if (run.out.empty()) run.out = default_out_dir(run.data);
  std::unique_ptr<RunDir> out;
  if (unposed) {
    out = open_out_dir(run);  // a previous run there is refused before SfM, not after
    run.data = prepare_for_training(run, cfg.prepare, *out);
  }
  const int status = run_training(run, cfg, out.get()).second;
  if (gpus > 1 || nccl_over_mpi) dist::finish_gpus();
  return status;
}

void add_train(CLI::App& app, Action& action) {
  struct Args {
    TrainRun run;
    ConfigArgs config;
    int gpus = 0;
    int view_port = 8080;
    LiveViewOptions view;
    std::optional<LiveViewWatcher> live;  // --view
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("train", "train 3D Gaussians on a dataset");
  cmd->add_option("DATA", args->run.data,
                  "dataset directory (NeRF-synthetic, transforms.json or COLMAP), or a folder of "
                  "photos or a video without poses (prepared first, as splat prepare does)")
      ->required();
  cmd->add_option("--out", args->run.out, "output directory (default: out/<dataset name>)");
  CLI::Option* resume = cmd->add_option("--resume", args->run.resume, "continue from a checkpoint")
                            ->check(input_file("checkpoint"));
  cmd->add_option("--init-from", args->run.init_from,
                  "start from a model's splats (.ply, .compressed.ply, .splat, .spz, .ckpt) with "
                  "fresh optimizer state")
      ->check(input_file("model"))
      ->excludes(resume);
  cmd->add_flag("--overwrite", args->run.overwrite,
                "replace a previous run in the output directory");
  cmd->add_flag("--timing", args->config.timing,
                "per-stage GPU timing table at the end (backend.timing)");
  cmd->add_option("--gpus", args->gpus,
                  "train on N local GPUs, one process each (backend.type = cuda; N > 1 over NCCL)")
      ->check(CLI::Range(1, 1024));
  add_config_options(*cmd, args->config);
  cmd->add_option("--view", args->view_port,
                  "serve the live viewer on PORT (default 8080) during training")
      ->expected(0, 1)
      ->default_str("8080")
      ->check(CLI::Range(0, 65535));
  cmd->add_option("--view-every", args->view.every,
                  "seconds between the live viewer's model snapshots (2)")
      ->check(CLI::PositiveNumber);
  add_view_options(*cmd, args->view.serve);
  cmd->callback([args, cmd, &action] {
    if (cmd->count("--view") > 0) {
      args->view.serve.port = args->view_port;
      args->run.watcher = &args->live.emplace(args->view);
    }
    action = [args] { return train_command(args->run, args->config, args->gpus); };
  });
}

}  // namespace splat::app
