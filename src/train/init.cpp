#include "train/init.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <optional>
#include <string>
#include <unordered_map>

#include "core/error.h"
#include "core/rng.h"

namespace splat {

namespace {
constexpr float kShC0 = 0.28209479177387814f;  // SH DC basis: color = 0.5 + C0 * sh0
}

std::vector<float> knn_log_scales(const std::vector<float>& pos) {
  const std::size_t n = pos.size() / 3;
  std::vector<float> out(n, std::log(0.01f));
  if (n < 2) return out;
  // Uniform grid hash with about two points per cell; search growing shells of cells until
  // three neighbours are found and the shell is farther than the third one.
  float lo[3], hi[3];
  for (int k = 0; k < 3; ++k) lo[k] = hi[k] = pos[k];
  for (std::size_t i = 0; i < n; ++i)
    for (int k = 0; k < 3; ++k)
      lo[k] = std::min(lo[k], pos[i * 3 + k]), hi[k] = std::max(hi[k], pos[i * 3 + k]);
  const float volume = std::max(1e-12f, (hi[0] - lo[0]) * (hi[1] - lo[1]) * (hi[2] - lo[2]));
  const float cell = std::max(1e-6f, std::cbrt(volume * 2.0f / float(n)));
  auto coord = [&](std::size_t i, int k) {
    return int(std::floor((pos[i * 3 + k] - lo[k]) / cell));
  };
  auto key = [](int x, int y, int z) {
    return (std::uint64_t(std::uint32_t(x)) << 42) ^ (std::uint64_t(std::uint32_t(y)) << 21) ^
           std::uint32_t(z);
  };
  std::unordered_map<std::uint64_t, std::vector<std::uint32_t>> grid;
  for (std::size_t i = 0; i < n; ++i)
    grid[key(coord(i, 0), coord(i, 1), coord(i, 2))].push_back(std::uint32_t(i));
#pragma omp parallel for schedule(dynamic, 256)
  for (std::size_t i = 0; i < n; ++i) {
    float best[3] = {INFINITY, INFINITY, INFINITY};  // squared distances, ascending
    const int cx = coord(i, 0), cy = coord(i, 1), cz = coord(i, 2);
    for (int r = 0; r < 64; ++r) {
      for (int dx = -r; dx <= r; ++dx)
        for (int dy = -r; dy <= r; ++dy)
          for (int dz = -r; dz <= r; ++dz) {
            if (std::max({std::abs(dx), std::abs(dy), std::abs(dz)}) != r) continue;  // shell only
            const auto it = grid.find(key(cx + dx, cy + dy, cz + dz));
            if (it == grid.end()) continue;
            for (std::uint32_t j : it->second) {
              if (j == i) continue;
              float d2 = 0;
              for (int k = 0; k < 3; ++k)
                d2 += (pos[j * 3 + k] - pos[i * 3 + k]) * (pos[j * 3 + k] - pos[i * 3 + k]);
              if (d2 < best[2]) {
                best[2] = d2;
                std::sort(best, best + 3);
              }
            }
          }
      // Every point outside shell r is at least r * cell away.
      if (best[2] <= (float(r) * cell) * (float(r) * cell)) break;
    }
    float sum = 0;
    int found = 0;
    for (float b : best)
      if (std::isfinite(b)) sum += b, ++found;
    const float mean = found ? sum / float(found) : cell * cell;
    out[i] = std::log(std::max(std::sqrt(mean), 1e-7f));
  }
  return out;
}

namespace {
bool has_points(const Dataset& data) {
  return data.points && !data.points->positions.empty();
}

// Cameras face one way when the mean of their viewing directions is at least cos 30 degrees long
// (it is the mean cosine between each direction and the mean one).
constexpr double kFacingOneWay = 0.866;
// A forward-facing rig's scene is taken to lie where a point's parallax across the rig (its shift
// between cameras 2 x the rig's reach apart) is from 1/2 of the image width (nearer, it would
// leave most views) down to 1/200 of it (about a pixel at 200 px wide: background).
constexpr double kNearParallax = 0.5, kFarParallax = 0.005;

struct DepthRange {
  double near, far;
};

// The depths in front of the cameras where the scene of a forward-facing rig is taken to lie,
// from the rig's geometry alone. nullopt, with `why` saying why, when the cameras do not face one
// way or sit at one spot (no parallax, no depth scale).
std::optional<DepthRange> forward_depths(const std::vector<View>& views, std::string& why) {
  Vec3<double> direction{};
  double focal_per_width = 0;
  for (const View& v : views) {
    direction += Vec3<double>{v.camera.R[2][0], v.camera.R[2][1], v.camera.R[2][2]};  // camera +z
    focal_per_width += v.camera.fx / double(v.camera.width);
  }
  direction = direction * (1.0 / double(views.size()));
  focal_per_width /= double(views.size());
  if (!(norm(direction) >= kFacingOneWay)) {
    why = "neither look at one point in front of them nor face one way";
    return std::nullopt;
  }
  const double reach = camera_reach(views);
  if (!(reach > 0)) {
    why = "all sit at one spot, which gives no depth scale";
    return std::nullopt;
  }
  // Parallax across the rig, in image widths: (fx / width) x 2 reach / depth.
  const double near = focal_per_width * 2 * reach / kNearParallax;
  return DepthRange{near, near * kNearParallax / kFarParallax};
}

// The colour the loss sees at pixel (x, y) of an image, in [0, 1]: RGB, alpha composited on the
// background where the image composites it.
std::array<float, 3> pixel_color(const Image8& im, int x, int y) {
  const std::uint8_t* p = &im.data[(std::size_t(y) * std::size_t(im.width) + std::size_t(x)) *
                                   std::size_t(im.channels)];
  const bool composite = im.channels == 4 && im.alpha == AlphaUse::composite;
  const float a = composite ? p[3] / 255.0f : 1.0f;
  std::array<float, 3> rgb;
  for (int k = 0; k < 3; ++k) rgb[k] = a * (p[k] / 255.0f) + (1.0f - a) * im.background[k];
  return rgb;
}

struct Points {
  std::vector<float> positions, colors;  // [n, 3]; colors empty: random colours
};

// n points, each uniform over a random training camera's image and uniform in inverse depth
// between the near and far depths (equal steps of parallax, as NeRF samples forward-facing
// scenes): the union of the cameras' frusta, denser where depth is better seen. Each takes the
// colour of the pixel it was drawn through (random colours where the views hold no images).
Points frustum_points(const std::vector<View>& views, DepthRange depths, std::size_t n, Rng& rng) {
  const bool images =
      std::all_of(views.begin(), views.end(), [](const View& v) { return !v.image.data.empty(); });
  Points out{std::vector<float>(n * 3), std::vector<float>(images ? n * 3 : 0)};
  for (std::size_t i = 0; i < n; ++i) {
    const View& view = views[rng.below(std::uint32_t(views.size()))];
    const Camera& c = view.camera;
    const double u = c.width * rng.uniform(), v = c.height * rng.uniform();
    const double z =
        1.0 / (1.0 / depths.far + (1.0 / depths.near - 1.0 / depths.far) * rng.uniform());
    const Vec3<double> in_camera{(u - c.cx) / c.fx * z, (v - c.cy) / c.fy * z, z};
    const Vec3<double> p = transpose(c.R) * (in_camera - c.t);
    for (int k = 0; k < 3; ++k) out.positions[i * 3 + k] = float(p[k]);
    if (!images) continue;
    const Image8& im = view.image;
    const std::array<float, 3> rgb =
        pixel_color(im, std::clamp(int(u * im.width / c.width), 0, im.width - 1),
                    std::clamp(int(v * im.height / c.height), 0, im.height - 1));
    for (int k = 0; k < 3; ++k) out.colors[i * 3 + k] = rgb[k];
  }
  return out;
}

// n points uniform in the cube of half-size `half` around b's center.
std::vector<float> cube_points(const SceneBounds& b, float half, std::size_t n, Rng& rng) {
  std::vector<float> out(n * 3);
  for (std::size_t i = 0; i < out.size(); ++i)
    out[i] = float(b.center[int(i % 3)]) + half * (2.0f * rng.uniform() - 1.0f);
  return out;
}

// Random points: in the cube of init_extent half-sizes around where the scene is known to lie;
// else, for a forward-facing rig, in the cameras' frusta at depths its baseline sets, each in the
// colour of the pixel it was drawn through; else (with a warning) in the cube around the cameras.
Points random_points(const ModelConfig& cfg, const Dataset& data, Rng& rng) {
  const std::size_t n = std::size_t(cfg.init_points);
  if (const std::optional<SceneBounds> b = known_scene_bounds(data))
    return {cube_points(*b, float(cfg.init_extent * b->half_size), n, rng), {}};
  std::string why;
  if (const std::optional<DepthRange> depths = forward_depths(data.train, why))
    return frustum_points(data.train, *depths, n, rng);
  const SceneBounds b = scene_bounds(data);
  std::fprintf(
      stderr,
      "warning: the %zu training cameras %s, and neither sparse points nor scene bounds "
      "say where the scene lies, so the random init is a guess: %zu random splats in a cube of "
      "half-size %g around the cameras; give the scene's bounds (aabb_scale in "
      "transforms.json), sparse points, or a model.init_extent that reaches the scene\n",
      data.train.size(), why.c_str(), n, cfg.init_extent * b.half_size);
  return {cube_points(b, float(cfg.init_extent * b.half_size), n, rng), {}};
}
}  // namespace

bool init_uses_points(const ModelConfig& cfg, const Dataset& data) {
  return cfg.init != InitKind::Random && has_points(data) && points_bounds(*data.points);
}

Gaussians initialize_model(const ModelConfig& cfg, const Dataset& data, std::uint64_t seed) {
  Rng rng(seed, 0x1417);
  std::vector<float> positions, colors;
  if (cfg.init == InitKind::Points && !has_points(data))
    throw Error(
        "model.init = \"points\" but the dataset has no sparse points; use model.init = "
        "\"random\"");
  if (cfg.init != InitKind::Random && has_points(data) && !init_uses_points(cfg, data))
    std::fprintf(stderr,
                 "warning: %s: all %zu sparse points lie at one spot, which says nothing of the "
                 "scene's shape; starting from %lld random splats around what the cameras look "
                 "at instead (as model.init = \"random\")\n",
                 data.points->source.empty() ? "the dataset" : data.points->source.c_str(),
                 data.points->positions.size() / 3, static_cast<long long>(cfg.init_points));
  if (init_uses_points(cfg, data)) {
    positions = data.points->positions;
    colors = data.points->colors;
  } else {
    Points random = random_points(cfg, data, rng);
    positions = std::move(random.positions);
    colors = std::move(random.colors);
    if (colors.empty()) {
      colors.resize(positions.size());
      for (float& c : colors) c = rng.uniform();
    }
  }
  Gaussians g;
  g.sh_degree = int(cfg.sh_degree);
  const std::size_t n = positions.size() / 3;
  g.resize(n);
  std::fill(g.sh.begin(), g.sh.end(), 0.0f);
  g.means = positions;
  const std::vector<float> log_scale = knn_log_scales(positions);
  const float raw_opacity = std::log(float(cfg.init_opacity) / (1.0f - float(cfg.init_opacity)));
  const int K = g.K();
  for (std::size_t i = 0; i < n; ++i) {
    for (int k = 0; k < 3; ++k)
      g.log_scales[i * 3 + k] = log_scale[i] + std::log(float(cfg.init_scale));
    // Random rotations (uniform components, normalized on use), as gsplat's random init.
    for (int k = 0; k < 4; ++k) g.quats[i * 4 + k] = rng.uniform();
    g.raw_opacity[i] = raw_opacity;
    for (int c = 0; c < 3; ++c) g.sh[(i * K) * 3 + c] = (colors[i * 3 + c] - 0.5f) / kShC0;
  }
  return g;
}

}  // namespace splat
