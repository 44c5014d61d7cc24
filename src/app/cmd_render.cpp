// splat render MODEL DATA --out DIR: render a model from a dataset's cameras to PNG.
#include <cstdio>

#include "app/commands.h"
#include "app/common.h"

namespace splat::app {

void add_render(CLI::App& app, Action& action) {
  struct Args {
    std::string model, data, out, split = "test";
    ConfigArgs config;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("render", "render a model from a dataset's cameras");
  cmd->add_option("MODEL", args->model, "model (.ply, .compressed.ply, .splat, .spz) or checkpoint.ckpt")->required()->check(CLI::ExistingFile);
  cmd->add_option("DATA", args->data, "dataset directory (for the cameras)")->required();
  cmd->add_option("--out", args->out, "output directory for PNGs")->required();
  cmd->add_option("--split", args->split, "train or test")->check(CLI::IsMember({"train", "test"}));
  add_config_options(*cmd, args->config);
  cmd->callback([args, &action] {
    action = [args] {
      const Config cfg = resolve_model_config(args->config, args->model);
      const Dataset data = load_dataset(args->data, cfg);
      const auto& views = args->split == "train" ? data.train : data.test;
      const EvalResult r = evaluate_model(args->model, views, cfg, args->out);
      std::printf("rendered %zu views into %s (mean PSNR %.3f dB against the dataset images)\n", r.views.size(),
                  args->out.c_str(), r.mean_psnr);
      return 0;
    };
  });
}

}  // namespace splat::app
