// splat train DATA [--config F] [--set section.key=value ...] [--out DIR] [--resume CKPT] [--gpus N]
#include "app/commands.h"
#include "app/common.h"
#include "dist/communicator.h"
#include "dist/launch.h"
#include "io/checkpoint.h"

namespace splat::app {

void add_config_options(CLI::App& cmd, ConfigArgs& args) {
  cmd.add_option("--config", args.config_file, "TOML config file (see configs/)")->check(CLI::ExistingFile);
  cmd.add_option("--set", args.sets, "override one key: section.key=value (repeatable)");
  cmd.add_option("--downscale", args.downscale, "image downscale factor (same as --set data.downscale=N)")
      ->check(CLI::PositiveNumber);
}

void add_train(CLI::App& app, Action& action) {
  struct Args {
    std::string data, out, resume;
    ConfigArgs config;
    int gpus = 0;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("train", "train 3D Gaussians on a dataset");
  cmd->add_option("DATA", args->data, "dataset directory (NeRF-synthetic layout)")->required();
  cmd->add_option("--out", args->out, "output directory (default: out/<dataset name>)");
  cmd->add_option("--resume", args->resume, "continue from a checkpoint")->check(CLI::ExistingFile);
  cmd->add_flag("--timing", args->config.timing, "per-stage GPU timing table at the end (backend.timing)");
  cmd->add_option("--gpus", args->gpus, "train on N local GPUs, one process each (backend.type = cuda; N > 1 over NCCL)")
      ->check(CLI::PositiveNumber);
  add_config_options(*cmd, args->config);
  cmd->callback([args, &action] {
    action = [args] {
      if (args->gpus > 0) {
        dist::launch_gpus(args->gpus);
        args->config.sets.insert(args->config.sets.begin(), "backend.type=cuda");
      }
      // A resumed run starts from the checkpoint's config; --config and --set apply on top.
      const std::string base = args->resume.empty() ? "" : read_checkpoint(args->resume).config_toml;
      const Config cfg = resolve_config(args->config, base, args->resume);
      // Under mpirun on the cuda backend the ranks reduce on the GPU: NCCL, joined through MPI.
      const bool nccl_over_mpi =
          dist::world().size() > 1 && !dist::world().reduces_device_buffers() && uses_cuda(cfg.backend);
      if (nccl_over_mpi) dist::gpus_over_mpi();
      run_training(args->data, cfg, args->out.empty() ? default_out_dir(args->data) : args->out, args->resume);
      if (args->gpus > 1 || nccl_over_mpi) dist::finish_gpus();
      return 0;
    };
  });
}

}  // namespace splat::app
