// Tile culling (engine/tiles.h): a splat is listed only in the tiles where the rasterizer could
// blend it. Dropping the others must not change a single bit of the image or of any gradient.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "cpu/pipeline.h"
#include "engine/tiles.h"

namespace splat {
namespace {

TEST(Tiles, MaxQuadFollowsTheAlphaThreshold) {
  EXPECT_LT(tiles::max_quad(0.5f / 255.0f), 0.0f);  // never blends
  EXPECT_GE(tiles::max_quad(config::alpha_min), 0.0f);
  // Opacity 1: q <= 2 ln 255 = 11.0825, plus the 0.1% + 1e-3 margin.
  EXPECT_NEAR(tiles::max_quad(1.0f), 11.0825 * 1.001 + 1e-3, 1e-4);
}

TEST(Tiles, ReachesHandMade) {
  // Isotropic, sigma = 2 px (conic 1/4), opacity 1: blends out to sqrt(11.09) * 2 = 6.66 px.
  const float a = 0.25f, b = 0.0f, c = 0.25f, q = tiles::max_quad(1.0f);
  EXPECT_TRUE(tiles::reaches(a, b, c, 8, 8, q, 0, 0, 16));  // mean inside the tile
  EXPECT_TRUE(
      tiles::reaches(a, b, c, 10.5f, 8, q, 1, 0, 16));  // nearest center of tile 1: 6 px away
  EXPECT_FALSE(tiles::reaches(a, b, c, 9.5f, 8, q, 1, 0, 16));  // 7 px away
  EXPECT_FALSE(
      tiles::reaches(a, b, c, 8, 8, tiles::max_quad(0.001f), 0, 0, 16));  // too transparent
  // Long and thin along the diagonal x = y (variances 100 and 1, covariance 99.5 / 2): the
  // off-diagonal corner tiles of its box are out of reach, the diagonal ones are not.
  const double sxx = 50.5, sxy = 49.5, syy = 50.5, det = sxx * syy - sxy * sxy;
  const float ca = float(syy / det), cb = float(-sxy / det), cc = float(sxx / det);
  EXPECT_TRUE(tiles::reaches(ca, cb, cc, 16, 16, q, 0, 0, 16));
  EXPECT_TRUE(tiles::reaches(ca, cb, cc, 16, 16, q, 1, 1, 16));
  EXPECT_FALSE(tiles::reaches(ca, cb, cc, 16, 16, q, 2, 0, 16));
  EXPECT_FALSE(tiles::reaches(ca, cb, cc, 16, 16, q, 0, 2, 16));
}

// Random anisotropic splats over a 70x45 image (partial edge tiles), opacities down to below
// alpha_min, some far larger than a tile.
template <class T>
GaussiansT<T> random_splats(std::uint32_t seed, int n, const Camera& cam) {
  std::mt19937 rng(seed);
  auto uniform = [&](double lo, double hi) {
    return std::uniform_real_distribution<>(lo, hi)(rng);
  };
  std::normal_distribution<> normal(0.0, 1.0);
  GaussiansT<T> g;
  g.sh_degree = 0;
  g.resize(n);
  for (int i = 0; i < n; ++i) {
    const double z = uniform(1.0, 5.0);
    const double px = uniform(-0.1, 1.1) * cam.width, py = uniform(-0.1, 1.1) * cam.height;
    g.means[i * 3] = T((px - cam.cx) / cam.fx * z);
    g.means[i * 3 + 1] = T((py - cam.cy) / cam.fy * z);
    g.means[i * 3 + 2] = T(z);
    for (int k = 0; k < 3; ++k) g.log_scales[i * 3 + k] = T(std::log(uniform(0.003, 0.3)));
    for (int k = 0; k < 4; ++k) g.quats[i * 4 + k] = T(normal(rng));
    const double o = std::exp(uniform(std::log(0.001), 0.0));
    g.raw_opacity[i] = T(std::log(o / (1 - o + 1e-9)));
    for (int c = 0; c < 3; ++c) g.sh[i * 3 + c] = T(uniform(-1.0, 1.0));
  }
  return g;
}

template <class T>
void expect_culling_changes_nothing(bool antialiased) {
  std::array<double, 16> w2c{};
  for (int i = 0; i < 4; ++i) w2c[i * 5] = 1;
  const Camera cam = Camera::from_w2c(w2c, 70, 45, 60.0, 58.0, 34.3, 23.1);
  RasterSettings rs;
  rs.sh_degree = 0;
  rs.antialiased = antialiased;
  const GaussiansT<T> g = random_splats<T>(antialiased ? 5 : 3, 300, cam);
  const cpu::Projected<T> p = cpu::project_fwd(g, cam, rs);
  const cpu::TileGrid grid = cpu::TileGrid::for_image(cam.width, cam.height);
  const cpu::Intersections culled =
      cpu::intersect_tiles(p.means2d, p.radii, p.depths, p.conics, p.opacities, grid);
  const cpu::Intersections boxes = cpu::intersect_tiles(p.means2d, p.radii, p.depths, {}, {}, grid);
  // Culling must remove something here, or this test shows nothing.
  EXPECT_LT(culled.keys.size(), boxes.keys.size() * 9 / 10) << "box " << boxes.keys.size();

  const cpu::RasterOut<T> a = cpu::rasterize_fwd(p, culled, cam.width, cam.height, rs);
  const cpu::RasterOut<T> b = cpu::rasterize_fwd(p, boxes, cam.width, cam.height, rs);
  ASSERT_EQ(a.image, b.image);
  ASSERT_EQ(a.alpha, b.alpha);
  std::mt19937 rng(9);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<T> v_image(a.image.size()), v_alpha(a.alpha.size());
  for (T& v : v_image) v = T(u(rng));
  for (T& v : v_alpha) v = T(u(rng));
  const cpu::ProjectedGrad<T> va =
      cpu::rasterize_bwd(p, culled, cam.width, cam.height, rs, v_image, v_alpha);
  const cpu::ProjectedGrad<T> vb =
      cpu::rasterize_bwd(p, boxes, cam.width, cam.height, rs, v_image, v_alpha);
  EXPECT_EQ(va.means2d, vb.means2d);
  EXPECT_EQ(va.conics, vb.conics);
  EXPECT_EQ(va.colors, vb.colors);
  EXPECT_EQ(va.opacities, vb.opacities);
}

// reaches_pixels on any box of pixels (the GPU rasterizer's warps test theirs, 16x2 or 8x4): where
// it says no, every pixel center of the box skips the splat, both as the CPU computes the power
// and as the GPU does (fused multiply-adds on the pre-scaled conic).
TEST(Tiles, ReachesPixelsIsConservativeOnAnyBox) {
  std::array<double, 16> w2c{};
  for (int i = 0; i < 4; ++i) w2c[i * 5] = 1;
  const Camera cam = Camera::from_w2c(w2c, 70, 45, 60.0, 58.0, 34.3, 23.1);
  RasterSettings rs;
  rs.sh_degree = 0;
  const cpu::Projected<float> p = cpu::project_fwd(random_splats<float>(7, 300, cam), cam, rs);
  std::mt19937 rng(11);
  std::uniform_int_distribution<int> ux(-20, 80), uy(-20, 60);
  const int boxes[][2] = {{15, 1}, {7, 3}, {0, 0}, {15, 15}, {3, 7}};
  auto skipped = [](float power, float opacity) {
    return power > 0.0f || power < float(cpu::kMinPower) ||
           opacity * std::exp(power) < config::alpha_min;
  };
  int tested = 0, culled = 0;
  for (std::size_t g = 0; g < p.opacities.size(); ++g) {
    if (p.radii[g * 2] <= 0 && p.radii[g * 2 + 1] <= 0) continue;
    const float a = p.conics[g * 3], b = p.conics[g * 3 + 1], c = p.conics[g * 3 + 2];
    const float mx = p.means2d[g * 2], my = p.means2d[g * 2 + 1], o = p.opacities[g];
    for (int k = 0; k < 40; ++k) {
      const auto [w, h] = boxes[k % 5];
      const int x0 = ux(rng), y0 = uy(rng);
      ++tested;
      if (tiles::reaches_pixels(a, b, c, mx, my, tiles::max_quad(o), x0, y0, w, h)) continue;
      ++culled;
      for (int y = y0; y <= y0 + h; ++y)
        for (int x = x0; x <= x0 + w; ++x) {
          const float dx = mx - (float(x) + 0.5f), dy = my - (float(y) + 0.5f);
          const float cpu_power = -(0.5f * (a * dx * dx + c * dy * dy) + b * dx * dy);
          const float qx = -0.5f * a, qy = -b, qz = -0.5f * c;
          const float gpu_power = std::fma(dx, std::fma(qy, dy, qx * dx), (qz * dy) * dy);
          ASSERT_TRUE(skipped(cpu_power, o) && skipped(gpu_power, o))
              << "splat " << g << " at pixel " << x << "," << y << " of box " << x0 << "," << y0
              << " +" << w << "x" << h;
        }
    }
  }
  // Most random boxes miss most splats: the test checks many refusals, not a handful.
  EXPECT_GT(culled, tested / 2) << culled << " of " << tested;
}

TEST(Tiles, CullingChangesNoImageOrGradientFloat) {
  expect_culling_changes_nothing<float>(false);
}
TEST(Tiles, CullingChangesNoImageOrGradientDouble) {
  expect_culling_changes_nothing<double>(false);
}
TEST(Tiles, CullingChangesNoImageOrGradientAntialiased) {
  expect_culling_changes_nothing<float>(true);
}

}  // namespace
}  // namespace splat
