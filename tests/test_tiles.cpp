// Tile culling (render/tiles.h): a splat is listed only in the tiles where the rasterizer could
// blend it. Dropping the others must not change a single bit of the image or of any gradient.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "cpu/pipeline.h"
#include "render/tiles.h"

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
  EXPECT_TRUE(tiles::reaches(a, b, c, 8, 8, q, 0, 0));     // mean inside the tile
  EXPECT_TRUE(tiles::reaches(a, b, c, 10.5f, 8, q, 1, 0));  // nearest center of tile 1: 6 px away
  EXPECT_FALSE(tiles::reaches(a, b, c, 9.5f, 8, q, 1, 0));  // 7 px away
  EXPECT_FALSE(tiles::reaches(a, b, c, 8, 8, tiles::max_quad(0.001f), 0, 0));  // too transparent
  // Long and thin along the diagonal x = y (variances 100 and 1, covariance 99.5 / 2): the
  // off-diagonal corner tiles of its box are out of reach, the diagonal ones are not.
  const double sxx = 50.5, sxy = 49.5, syy = 50.5, det = sxx * syy - sxy * sxy;
  const float ca = float(syy / det), cb = float(-sxy / det), cc = float(sxx / det);
  EXPECT_TRUE(tiles::reaches(ca, cb, cc, 16, 16, q, 0, 0));
  EXPECT_TRUE(tiles::reaches(ca, cb, cc, 16, 16, q, 1, 1));
  EXPECT_FALSE(tiles::reaches(ca, cb, cc, 16, 16, q, 2, 0));
  EXPECT_FALSE(tiles::reaches(ca, cb, cc, 16, 16, q, 0, 2));
}

// Random anisotropic splats over a 70x45 image (partial edge tiles), opacities down to below
// alpha_min, some far larger than a tile.
template <class T>
GaussiansT<T> random_splats(std::uint32_t seed, int n, const Camera& cam) {
  std::mt19937 rng(seed);
  auto uniform = [&](double lo, double hi) { return std::uniform_real_distribution<>(lo, hi)(rng); };
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
  const cpu::Intersections culled = cpu::intersect_tiles(p.means2d, p.radii, p.depths, p.conics, p.opacities, grid);
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
  const cpu::ProjectedGrad<T> va = cpu::rasterize_bwd(p, culled, cam.width, cam.height, rs, v_image, v_alpha);
  const cpu::ProjectedGrad<T> vb = cpu::rasterize_bwd(p, boxes, cam.width, cam.height, rs, v_image, v_alpha);
  EXPECT_EQ(va.means2d, vb.means2d);
  EXPECT_EQ(va.conics, vb.conics);
  EXPECT_EQ(va.colors, vb.colors);
  EXPECT_EQ(va.opacities, vb.opacities);
}

TEST(Tiles, CullingChangesNoImageOrGradientFloat) { expect_culling_changes_nothing<float>(false); }
TEST(Tiles, CullingChangesNoImageOrGradientDouble) { expect_culling_changes_nothing<double>(false); }
TEST(Tiles, CullingChangesNoImageOrGradientAntialiased) { expect_culling_changes_nothing<float>(true); }

}  // namespace
}  // namespace splat
