#include "train/load.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "core/error.h"
#include "core/finite.h"
#include "engine/filter3d_host.h"
#include "io/checkpoint.h"
#include "io/model_file.h"
#include "io/read_file.h"

namespace fs = std::filesystem;

namespace splat {

// A dataset is a directory; the messages say what else `path` is.
void require_dataset_dir(const std::string& path) {
  if (path.empty()) throw Error("DATA is empty: give the dataset directory");
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (st.type() == fs::file_type::not_found) throw Error(path + ": dataset not found");
  if (ec) throw Error(path + ": dataset cannot be read: " + ec.message());
  if (st.type() != fs::file_type::directory)
    throw Error(path +
                ": not a directory (a dataset is a directory holding transforms_train.json, "
                "transforms.json or sparse/)");
  fs::directory_iterator(path, ec);
  if (ec) throw Error(path + ": dataset directory cannot be read: " + ec.message());
}

Dataset load_dataset(const std::string& path, const Config& cfg) {
  require_dataset_dir(path);
  LoadOptions opts;
  for (int c = 0; c < 3; ++c) opts.background[c] = float(cfg.data.background[c]);
  opts.downscale = int(cfg.data.downscale);
  opts.test_every = int(cfg.data.test_every);
  opts.max_train = int(cfg.data.max_train_views);
  opts.holdout_every = int(cfg.data.holdout_every);
  opts.crop_undistorted = cfg.data.crop_undistorted;
  opts.alpha_mask = cfg.data.alpha_mask;
  opts.max_image_size = int(cfg.data.max_image_size);
  opts.max_image_width = int(cfg.data.max_image_width);
  const fs::path dir(path);
  // What is there under a layout's name decides, file or not: its loader says what is wrong.
  if (find_input({dir / "transforms_train.json"})) return load_blender(path, opts);
  if (find_input({dir / "transforms.json"})) return load_transforms(path, opts);
  if (find_input({dir / "sparse/0/cameras.bin", dir / "sparse/0/cameras.txt",
                  dir / "sparse/cameras.bin", dir / "sparse/cameras.txt"}))
    return load_colmap(path, opts);
  throw Error(path +
              ": unrecognized dataset layout; looked for transforms_train.json (NeRF-synthetic), "
              "transforms.json (instant-ngp / nerfstudio) and sparse/0/cameras.{bin,txt} or "
              "sparse/cameras.{bin,txt} (COLMAP, with the images in images/)");
}

namespace {
// A model whose splats would all render as nothing is refused; one with some is taken with a
// warning that counts them.
void check_drawable(const std::string& path, const Gaussians& g) {
  const Undrawable u = undrawable_splats(g);
  if (u.count() == 0) return;
  std::string what;
  if (u.zero_quats > 0)
    what += std::to_string(u.zero_quats) + " with an all-zero quaternion (first: splat " +
            std::to_string(u.first_zero_quat) + ")";
  if (u.huge_scales > 0)
    what += std::string(what.empty() ? "" : ", ") + std::to_string(u.huge_scales) +
            " with a log-scale above " + std::to_string(int(kMaxLogScale)) + " (first: splat " +
            std::to_string(u.first_huge_scale) + ")";
  if (u.count() == g.size())
    throw Error(path + ": quats / log_scales: none of the " + std::to_string(g.size()) +
                " splats can be drawn (" + what + "); renders would show the background only");
  std::fprintf(stderr, "warning: %s: %zu of %zu splats render as nothing: %s\n", path.c_str(),
               u.count(), g.size(), what.c_str());
}
}  // namespace

Gaussians viewer_params(const TrainState& st) {
  return filter3d::bake(st.params, st.filter3d);
}
Gaussians viewer_params(const Backend& backend) {
  return viewer_params(backend.state());
}

TrainState load_model(const std::string& path) {
  TrainState st;
  if (fs::path(path).extension() == ".ckpt") {
    Checkpoint c = read_checkpoint(path);
    st.params = std::move(c.params);
    st.filter3d = std::move(c.filter3d);
  } else {
    st.params = read_model(path);
  }
  if (st.params.size() == 0) throw Error(path + ": element vertex: the model has no splats");
  check_drawable(path, st.params);
  st.adam_m = st.params;
  st.adam_v = st.params;
  for (Gaussians* g : {&st.adam_m, &st.adam_v})
    g->for_each_group(
        [](const char*, std::vector<float>& v) { std::fill(v.begin(), v.end(), 0.0f); });
  return st;
}

}  // namespace splat
