// splat eval MODEL DATA: PSNR and SSIM of a model (.ply or .ckpt) on a dataset's test views (or,
// with --split train, on the views it was trained on).
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>

#include "app/commands.h"
#include "app/common.h"
#include "core/error.h"
#include "io/file_util.h"

namespace splat::app {

void add_eval(CLI::App& app, Action& action) {
  struct Args {
    std::string model, data, out, split = "test";
    float alpha_max = config::alpha_max;
    ConfigArgs config;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("eval", "evaluate a model on a dataset's test views");
  cmd->add_option("MODEL", args->model,
                  "model (.ply, .compressed.ply, .splat, .spz) or checkpoint.ckpt")
      ->required()
      ->check(input_file("model"));
  cmd->add_option("DATA", args->data, "dataset directory")->required();
  cmd->add_option("--out", args->out, "write metrics.json and renders here");
  cmd->add_option("--split", args->split, "the views to score: test (held out, default) or train")
      ->check(CLI::IsMember({"train", "test"}));
  cmd->add_option("--alpha-max", args->alpha_max,
                  "clamp alpha at this in the renders (default 0.99, splat's convention; gsplat "
                  "clamps at 0.999): to score a peer's model as its own renderer draws it")
      ->check([](const std::string& s) -> std::string {
        const double a = std::atof(s.c_str());
        return a > double(config::alpha_min) && a < 1.0
                   ? ""
                   : "--alpha-max must lie between 1/255 and 1 (exclusive), got " + s;
      });
  add_config_options(*cmd, args->config);
  cmd->callback([args, &action] {
    action = [args] {
      const Config cfg = resolve_model_config(args->config, args->model);
      const Dataset data = load_dataset(args->data, cfg);
      const std::vector<View>& views = args->split == "train" ? data.train : data.test;
      if (views.empty()) throw Error(args->data + ": no " + args->split + " views to evaluate on");
      std::unique_ptr<RunDir> out;
      if (!args->out.empty()) {
        out = open_results_dir(args->out, "eval");
        std::vector<std::string> renders = {"metrics.json"};
        for (const View& v : views) renders.push_back("renders/" + v.name + ".png");
        out->claim_all(renders);
      }
      const EvalResult r = evaluate_model(
          args->model, views, cfg, out ? (out->path() / "renders").string() : "", args->alpha_max);
      for (const ViewMetrics& v : r.views)
        std::printf("%-16s PSNR %7.3f  SSIM %.4f  colour-corrected PSNR %7.3f\n", v.name.c_str(),
                    v.psnr, v.ssim, v.cc_psnr);
      std::printf(
          "mean over %zu %s views: PSNR %.3f dB, SSIM %.4f, colour-corrected PSNR %.3f dB\n",
          r.views.size(), args->split.c_str(), r.mean_psnr, r.mean_ssim, r.mean_cc_psnr);
      if (!args->out.empty()) {
        const nlohmann::json j = eval_json(r, args->model, args->split, args->alpha_max);
        write_atomically(out->claim("metrics.json"),
                         [&](std::ofstream& f) { f << j.dump(2) << "\n"; });
      }
      return 0;
    };
  });
}

}  // namespace splat::app
