// splat render MODEL DATA --out DIR: render a model from a dataset's cameras to PNG; with --path, a
// fly-through (io/camera_path.h) as numbered PNG frames, and path.mp4 when ffmpeg is on the PATH.
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "app/commands.h"
#include "app/common.h"
#include "core/error.h"
#include "io/camera_path.h"
#include "io/file_util.h"
#include "io/image_io.h"

namespace splat::app {

namespace {

namespace fs = std::filesystem;

std::string find_on_path(const std::string& program) {
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "";
  for (std::size_t start = 0; start <= dirs.size();) {
    const std::size_t end = std::min(dirs.find(':', start), dirs.size());
    const fs::path candidate = fs::path(dirs.substr(start, end - start)) / program;
    std::error_code ec;
    if (end > start && fs::is_regular_file(candidate, ec)) return candidate.string();
    start = end + 1;
  }
  return "";
}

void render_path(const std::string& model_path,
                 const Dataset& data,
                 const Config& cfg,
                 CameraPath path,
                 int frames,
                 int fps,
                 RunDir& dir) {
  const std::vector<Camera> cameras = camera_path(data, path, frames);
  const fs::path& out = dir.path();
  auto frame_name = [](std::size_t k) {
    char name[32];
    std::snprintf(name, sizeof name, "frame_%05zu.png", k);
    return std::string(name);
  };
  std::vector<std::string> names = {"path.mp4"};
  for (std::size_t k = 0; k < cameras.size(); ++k) names.push_back(frame_name(k));
  dir.claim_all(names);
  const ModelRenderer r = model_renderer(load_model(model_path), cfg);
  for (std::size_t k = 0; k < cameras.size(); ++k)
    write_png((out / frame_name(k)).string(), r.backend->render(cameras[k], r.settings));
  std::printf("rendered %zu frames into %s\n", cameras.size(), out.c_str());
  const std::string ffmpeg = find_on_path("ffmpeg");
  if (ffmpeg.empty()) {
    std::printf("no MP4: ffmpeg is not on the PATH\n");
    return;
  }
  // yuv420p plays everywhere and needs even sizes: pad by a pixel where odd.
  const fs::path mp4 = out / "path.mp4";
  const std::string cmd = "'" + ffmpeg + "' -y -loglevel error -framerate " + std::to_string(fps) +
                          " -i '" + (out / "frame_%05d.png").string() +
                          "' -vf 'pad=ceil(iw/2)*2:ceil(ih/2)*2' -c:v libx264 -pix_fmt yuv420p '" +
                          mp4.string() + "'";
  if (std::system(cmd.c_str()) != 0)
    throw splat::Error("ffmpeg failed to write " + mp4.string() + " (command: " + cmd + ")");
  std::printf("wrote %s\n", mp4.c_str());
}

}  // namespace

void add_render(CLI::App& app, Action& action) {
  struct Args {
    std::string model, data, out, split = "test", path;
    int frames = 120, fps = 30;
    ConfigArgs config;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand(
      "render", "render a model from a dataset's cameras, or along a camera path");
  cmd->add_option("MODEL", args->model,
                  "model (.ply, .compressed.ply, .splat, .spz) or checkpoint.ckpt")
      ->required()
      ->check(input_file("model"));
  cmd->add_option("DATA", args->data, "dataset directory (for the cameras)")->required();
  cmd->add_option("--out", args->out, "output directory for PNGs")->required();
  cmd->add_option("--split", args->split, "train or test")->check(CLI::IsMember({"train", "test"}));
  cmd->add_option("--path", args->path,
                  "fly-through around the training cameras: orbit, spiral or views")
      ->check(CLI::IsMember({"orbit", "spiral", "views"}));
  cmd->add_option("--frames", args->frames, "frames of the --path (120)")
      ->check(CLI::Range(1, 100000));
  cmd->add_option("--fps", args->fps, "frame rate of the --path MP4 (30)")
      ->check(CLI::Range(1, 240));
  add_config_options(*cmd, args->config);
  cmd->callback([args, &action] {
    action = [args] {
      const Config cfg = resolve_model_config(args->config, args->model);
      const Dataset data = load_dataset(args->data, cfg);
      if (!args->path.empty()) {
        render_path(args->model, data, cfg, parse_camera_path(args->path), args->frames, args->fps,
                    *open_results_dir(args->out, "render"));
        return 0;
      }
      const auto& views = args->split == "train" ? data.train : data.test;
      if (views.empty()) throw Error(args->data + ": no " + args->split + " views to render");
      const std::unique_ptr<RunDir> out = open_results_dir(args->out, "render");
      std::vector<std::string> renders;
      for (const View& v : views) renders.push_back(v.name + ".png");
      out->claim_all(renders);
      const EvalResult r = evaluate_model(args->model, views, cfg, args->out);
      std::printf("rendered %zu views into %s (mean PSNR %.3f dB against the dataset images)\n",
                  r.views.size(), args->out.c_str(), r.mean_psnr);
      return 0;
    };
  });
}

}  // namespace splat::app
