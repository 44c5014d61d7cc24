// splat bench views DATA --out DIR: the training and held-out views exactly as splat trains and
// evaluates on them (decoded, undistorted, downscaled, composited), for a peer trainer to train on
// the same split (tools/peer/). DIR/views.json lists every view's camera; its image is
// DIR/<split>_<k>.npy, uint8 [H, W, 3]; COLMAP sparse points go to DIR/points.npy, float32
// [N, 6] (x y z r g b). A run that would not start from points gets splat's own initial splats
// instead, as DIR/init_points.npy of the same shape (colours from their DC terms), for a peer
// whose reader needs points (FastGS's COLMAP reader).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "app/bench.h"
#include "core/error.h"
#include "engine/target.h"
#include "io/file_util.h"
#include "io/npy.h"
#include "io/quantize.h"
#include "train/init.h"

namespace splat::app {
namespace {

// The view's target as the loss reads it (engine/target.h), in 8 bits: RGB bytes as they are;
// straight alpha composited on the background and rounded to the nearest byte.
std::vector<std::uint8_t> rgb_bytes(const View& v) {
  const Image8& img = v.image;
  if (img.channels == 3) return img.data;
  const Image target = target_image(img);
  std::vector<std::uint8_t> out(img.pixels() * 3);
  for (std::size_t i = 0; i < out.size(); ++i)
    out[i] = std::uint8_t(std::lround(std::clamp(target.data[i], 0.0f, 1.0f) * 255.0f));
  return out;
}

nlohmann::json view_json(const View& v, const std::string& image) {
  const Camera& c = v.camera;
  nlohmann::json w2c = nlohmann::json::array();
  for (int r = 0; r < 3; ++r) w2c.push_back({c.R[r][0], c.R[r][1], c.R[r][2], c.t[r]});
  w2c.push_back({0.0, 0.0, 0.0, 1.0});
  return {{"name", v.name},     {"image", image}, {"width", c.width},
          {"height", c.height}, {"fx", c.fx},     {"fy", c.fy},
          {"cx", c.cx},         {"cy", c.cy},     {"world_to_camera", w2c}};
}

}  // namespace

int run_bench_views(const ViewsArgs& args) {
  const Config cfg = resolve_config(args.config);
  const Dataset data = load_dataset(args.data, cfg);
  for (const auto* views : {&data.train, &data.test})
    for (const View& v : *views)
      if (v.image.masked())
        throw Error("bench views: " + v.path +
                    " has a loss mask; the export has no mask channel (set data.alpha_mask = "
                    "false or leave the masks out)");
  std::error_code ec;
  std::filesystem::create_directories(args.out, ec);
  if (ec || !std::filesystem::is_directory(args.out))
    throw Error("bench views: cannot create the output directory " + args.out +
                (ec ? ": " + ec.message() : ""));
  const std::filesystem::path out(args.out);
  nlohmann::json j;
  j["format"] = "splat-views-1";
  j["dataset"] = args.data;
  j["background"] = cfg.data.background;
  j["scene_extent"] = scene_extent(data);
  for (const auto& [split, views] : {std::pair{"train", &data.train}, {"test", &data.test}}) {
    j[split] = nlohmann::json::array();
    for (std::size_t k = 0; k < views->size(); ++k) {
      const View& v = (*views)[k];
      char name[32];
      std::snprintf(name, sizeof name, "%s_%04zu.npy", split, k);
      write_npy((out / name).string(), rgb_bytes(v),
                {std::size_t(v.image.height), std::size_t(v.image.width), 3});
      j[split].push_back(view_json(v, name));
    }
  }
  const auto write_points = [&](const char* key, const std::vector<float>& positions, auto color) {
    const std::size_t n = positions.size() / 3;
    std::vector<float> rows(n * 6);
    for (std::size_t i = 0; i < n; ++i)
      for (int c = 0; c < 3; ++c) {
        rows[6 * i + c] = positions[3 * i + c];
        rows[6 * i + 3 + c] = color(i, c);
      }
    const std::string name = std::string(key) + ".npy";
    write_npy((out / name).string(), rows, {n, 6});
    j[key] = name;
  };
  j["points"] = nullptr;
  j["init_points"] = nullptr;
  if (data.points && !data.points->positions.empty())
    write_points("points", data.points->positions,
                 [&](std::size_t i, int c) { return data.points->colors[3 * i + c]; });
  if (!init_uses_points(cfg.model, data)) {
    const Gaussians init = initialize_model(cfg.model, data, cfg.train.seed);
    const int K = init.K();
    write_points("init_points", init.means,
                 [&](std::size_t i, int c) { return float(0.5 + kShC0 * init.sh[i * K * 3 + c]); });
  }
  write_atomically((out / "views.json").string(),
                   [&](std::ofstream& f) { f << j.dump(1) << "\n"; });
  std::printf("%zu training and %zu held-out views%s written to %s\n", data.train.size(),
              data.test.size(), data.points ? " and the sparse points" : "", args.out.c_str());
  return 0;
}

}  // namespace splat::app
