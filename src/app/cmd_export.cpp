// splat export MODEL --out FILE: a model in another file format (the compact published ones).
#include <cstdio>
#include <filesystem>
#include <optional>

#include "app/commands.h"
#include "app/common.h"
#include "core/error.h"
#include "io/model_file.h"
#include "train/config.h"

namespace splat::app {

std::pair<ModelFormat, int> export_model(const Gaussians& model,
                                         const std::string& name,
                                         const std::string& out,
                                         const std::string& format_name,
                                         int sh_degree) {
  const std::optional<ModelFormat> named = format_from_name(out);
  if (format_name.empty() && !named)
    throw Error("--out " + out +
                ": cannot tell the format from the name (.ply, .compressed.ply, .splat, .spz); "
                "give --format");
  const ModelFormat format = format_name.empty() ? *named : from_string<ModelFormat>(format_name);
  // A file's name says what it holds: .splat bytes named .spz open as a damaged .spz. A
  // compressed PLY is a PLY, so .ply takes either.
  if (named && *named != format &&
      !(*named == ModelFormat::Ply && format == ModelFormat::CompressedPly))
    throw Error("--out " + out + " and --format " + format_name + " disagree: the name says " +
                std::string(to_string(*named)) +
                " (name the file for its format, or leave --format out to take it from the "
                "name)");
  int degree = sh_degree >= 0 ? sh_degree : model.sh_degree;
  if (format == ModelFormat::Splat) {
    if (sh_degree > 0)
      throw Error("--sh-degree " + std::to_string(sh_degree) +
                  ": the .splat format holds SH degree 0 only");
    degree = 0;
  }
  if (degree > model.sh_degree)
    throw Error("--sh-degree " + std::to_string(degree) + ": " + name + " has SH degree " +
                std::to_string(model.sh_degree));
  write_model(out, with_sh_degree(model, degree), format);
  return {format, degree};
}

void add_export(CLI::App& app, Action& action) {
  struct Args {
    std::string model, out, format;
    int sh_degree = -1;  // -1: the model's own (0 for .splat)
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd =
      app.add_subcommand("export", "write a model as .ply, .splat, .spz or compressed .ply");
  cmd->add_option("MODEL", args->model,
                  "model (.ply, .compressed.ply, .splat, .spz or checkpoint .ckpt)")
      ->required()
      ->check(input_file("model"));
  cmd->add_option("--out", args->out, "output file")->required();
  cmd->add_option("--format", args->format,
                  "ply, splat, spz or compressed-ply (default: from the --out name)")
      ->check(CLI::IsMember({"ply", "splat", "spz", "compressed-ply"}));
  cmd->add_option("--sh-degree", args->sh_degree,
                  "keep SH up to this degree (default: the model's; splat: 0)")
      ->check(CLI::Range(0, 3));
  cmd->callback([args, &action] {
    action = [args] {
      const Gaussians model = viewer_params(load_model(args->model));
      const auto [format, degree] =
          export_model(model, args->model, args->out, args->format, args->sh_degree);
      std::printf("wrote %s (%s): %zu splats, SH degree %d, %ju bytes\n", args->out.c_str(),
                  std::string(to_string(format)).c_str(), model.size(), degree,
                  std::uintmax_t(std::filesystem::file_size(args->out)));
      return 0;
    };
  });
}

}  // namespace splat::app
