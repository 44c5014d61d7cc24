// The CPU backward against central finite differences in double (DESIGN.md section 5), stage by
// stage and end to end, for every parameter group. RasterSettings::smooth_cutoff makes the image a
// smooth function of the parameters (no alpha skip, no early stop, no tile-edge cutoff); the scenes
// also stay clear of the remaining kinks: the field-of-view clamp of the Jacobian, the 0.99 alpha
// clamp, max(0, color) and |d| in the L1 loss.
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <initializer_list>
#include <random>
#include <string>
#include <vector>

#include "cpu/appearance_cpu.h"
#include "cpu/loss_cpu.h"
#include "cpu/pipeline.h"
#include "engine/ssim.h"
#include "gradcheck_util.h"

namespace splat {
namespace {

using namespace gradcheck;

Vec random_vec(std::mt19937& rng, std::size_t n) {
  std::normal_distribution<> normal(0.0, 1.0);
  Vec v(n);
  for (double& x : v) x = normal(rng);
  return v;
}

Vec concat(std::initializer_list<const Vec*> parts) {
  Vec out;
  for (const Vec* p : parts) out.insert(out.end(), p->begin(), p->end());
  return out;
}

// FD w.r.t. every raw parameter group of g (through <w, outputs()>, outputs reading g) against the
// analytic gradients of the same names.
template <class F>
void check_param_groups(const std::string& tag,
                        GaussiansT<double>& g,
                        const GaussiansT<double>& analytic,
                        const Vec& w,
                        F&& outputs,
                        const Tolerance& tol) {
  g.for_each_group([&](const char* name, Vec& x) {
    const Vec fd = fd_gradient(x, w, outputs);
    bool found = false;
    analytic.for_each_group([&](const char* analytic_name, const Vec& a) {
      if (std::string(analytic_name) != name) return;
      found = true;
      expect_grad_close(tag + name, a, fd, tol);
    });
    EXPECT_TRUE(found) << tag << name << ": no analytic gradient";
  });
}

// ---- (a) projection -----------------------------------------------------------------------------

// Raw parameters -> (means2d, conics, colors, opacities) through the scalar <w, outputs>.
// Depths have no backward: they only order the splats.
void check_project(bool antialiased, bool filter3d = false) {
  Scene s = make_scene(antialiased ? 11 : 7, 30, antialiased);
  if (filter3d) add_filter3d(s, 5);
  ASSERT_TRUE(is_smooth(s));
  auto outputs = [&] {
    const cpu::Projected<double> p = cpu::project_fwd(s.g, s.cam, s.rs, s.filter);
    return concat({&p.means2d, &p.conics, &p.colors, &p.opacities});
  };
  const cpu::Projected<double> fwd = cpu::project_fwd(s.g, s.cam, s.rs, s.filter);
  const std::size_t n = fwd.size();
  std::mt19937 rng(3);
  cpu::ProjectedGrad<double> v;
  v.means2d = random_vec(rng, n * 2);
  v.conics = random_vec(rng, n * 3);
  v.colors = random_vec(rng, n * 3);
  v.opacities = random_vec(rng, n);
  const Vec w = concat({&v.means2d, &v.conics, &v.colors, &v.opacities});
  GaussiansT<double> grads;
  cpu::project_bwd(s.g, s.cam, s.rs, fwd, v, grads, s.filter);

  // A step moves only its own splat's outputs, so the FD is nearly exact. Observed over all groups,
  // both modes: rel L2 <= 3e-10, 1 - cos <= 3e-15, max <= 2.3e-10. Bounds ~30x above that; the
  // subtlest mutation tried (one SH basis derivative term) gives rel L2 1.3e-3 in the means.
  const Tolerance tol{1e-8, 1e-13, 1e-8};
  const std::string name = std::string("project ") + (antialiased ? "[antialiased] " : "") +
                           (filter3d ? "[3D filter] " : "");
  check_param_groups(name, s.g, grads, w, outputs, tol);
}

TEST(Gradcheck, Project) {
  check_project(false);
}
TEST(Gradcheck, ProjectAntialiased) {
  check_project(true);
}
// Mip-Splatting's 3D filter alone and with the 2D mip filter (model.antialiased): its scale and
// opacity factors feed the log-scale and opacity gradients.
TEST(Gradcheck, ProjectFilter3d) {
  check_project(false, true);
}
TEST(Gradcheck, ProjectFilter3dAntialiased) {
  check_project(true, true);
}

// ---- (b) rasterization --------------------------------------------------------------------------

// Projected quantities -> (image, alpha) through random v_image and v_alpha, with the tile
// intersections computed once and held fixed (they are piecewise constant).
TEST(Gradcheck, Rasterize) {
  const Scene s = make_scene(5, 30, false);
  ASSERT_TRUE(is_smooth(s));
  cpu::Projected<double> p = cpu::project_fwd(s.g, s.cam, s.rs);
  const cpu::Intersections isect = cpu::intersect_tiles(
      p.means2d, p.radii, p.depths, {}, {}, cpu::TileGrid::for_image(s.cam.width, s.cam.height));
  const int W = s.cam.width, H = s.cam.height;
  std::mt19937 rng(4);
  const Vec v_image = random_vec(rng, std::size_t(W) * H * 3);
  const Vec v_alpha = random_vec(rng, std::size_t(W) * H);
  const Vec w = concat({&v_image, &v_alpha});
  auto outputs = [&] {
    const cpu::RasterOut<double> r = cpu::rasterize_fwd(p, isect, W, H, s.rs);
    return concat({&r.image, &r.alpha});
  };
  const cpu::ProjectedGrad<double> v = cpu::rasterize_bwd(p, isect, W, H, s.rs, v_image, v_alpha);

  // Every step moves all 4480 outputs; their rounding (~1e-16 / 1e-6 each) is the FD noise.
  // Observed: rel L2 <= 8.2e-10, 1 - cos <= 4.4e-16, max <= 8e-10. Bounds ~25x above that; dropping
  // one backward term (behind, background, d alpha) gives rel L2 >= 0.78.
  const Tolerance tol{2e-8, 1e-13, 2e-8};
  const struct {
    const char* name;
    Vec* x;
    const Vec* analytic;
  } groups[] = {{"means2d", &p.means2d, &v.means2d},
                {"conics", &p.conics, &v.conics},
                {"colors", &p.colors, &v.colors},
                {"opacities", &p.opacities, &v.opacities}};
  for (const auto& grp : groups)
    expect_grad_close(std::string("rasterize ") + grp.name, *grp.analytic,
                      fd_gradient(*grp.x, w, outputs), tol);
}

// ---- (c) loss -----------------------------------------------------------------------------------

// (1-l) L1 + l (1 - SSIM) w.r.t. the image, with every |image - target| >= 0.02 so no step crosses
// the L1 kink.
TEST(Gradcheck, Loss) {
  const int W = 27, H = 21;  // wider than the 11x11 window, and small: each FD step is a full SSIM
  std::mt19937 rng(9);
  std::uniform_real_distribution<> u01(0.0, 1.0), gap(0.02, 0.3);
  Vec image(std::size_t(W) * H * 3), target(image.size());
  for (std::size_t i = 0; i < image.size(); ++i) {
    image[i] = u01(rng);
    target[i] = image[i] + (u01(rng) < 0.5 ? -1 : 1) * gap(rng);
  }
  const auto r = cpu::photometric_loss(image, target, W, H, kSsimLambda, true);
  const Vec fd = fd_gradient(image, {1.0}, [&] {
    return Vec{cpu::photometric_loss(image, target, W, H, kSsimLambda, false).loss};
  });
  // One scalar (~0.2) differenced over 2e-6, against entries ~1e-4. Observed: rel L2 5.4e-8,
  // 1 - cos 2.3e-15, max 1.7e-7. Bounds ~20x above that; scaling one SSIM partial by 1.001 gives
  // rel L2 1.3e-4.
  expect_grad_close("loss image", r.v_image, fd, {1e-6, 1e-13, 3e-6});
}

// train.loss = l1 and l2 (the data term alone) and l2_ssim, w.r.t. the image, with the same
// kink-free gaps.
void check_data_loss(LossKind kind) {
  const int W = 27, H = 21;
  std::mt19937 rng(11);
  std::uniform_real_distribution<> u01(0.0, 1.0), gap(0.02, 0.3);
  Vec image(std::size_t(W) * H * 3), target(image.size());
  for (std::size_t i = 0; i < image.size(); ++i) {
    image[i] = u01(rng);
    target[i] = image[i] + (u01(rng) < 0.5 ? -1 : 1) * gap(rng);
  }
  const auto r = cpu::photometric_loss(image, target, W, H, kSsimLambda, true, kind);
  const Vec fd = fd_gradient(image, {1.0}, [&] {
    return Vec{cpu::photometric_loss(image, target, W, H, kSsimLambda, false, kind).loss};
  });
  // One scalar (~0.1) differenced over 2e-6, against entries of 1e-5..6e-4: the bounds of the
  // l1_ssim check above. Observed: rel L2 <= 7.9e-9, max <= 1.8e-8 (l2_ssim: 9.4e-8, 2.4e-7). A
  // factor 2 missing from the L2 gradient gives rel L2 0.5, a sign error 2.
  expect_grad_close(std::string("loss image ") + std::string(to_string(kind)), r.v_image, fd,
                    {1e-6, 1e-13, 3e-6});
}

TEST(Gradcheck, LossL1) {
  check_data_loss(LossKind::L1);
}
TEST(Gradcheck, LossL2) {
  check_data_loss(LossKind::L2);
}
TEST(Gradcheck, LossL2Ssim) {
  check_data_loss(LossKind::L2Ssim);
}

// l1 and l2 are their formulas, with no SSIM computed (reported 0), and l1 is l1_ssim with
// lambda 0 bit for bit (its data term weight 1 - 0 is exact).
TEST(Loss, L1AndL2AreTheirFormulas) {
  const int W = 13, H = 9;
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u01(0.0f, 1.0f);
  std::vector<float> image(std::size_t(W) * H * 3), target(image.size());
  for (std::size_t i = 0; i < image.size(); ++i) image[i] = u01(rng), target[i] = u01(rng);
  double abs_sum = 0, sq_sum = 0;
  for (std::size_t i = 0; i < image.size(); ++i) {
    const double d = double(image[i]) - double(target[i]);
    abs_sum += std::abs(d), sq_sum += d * d;
  }
  const double n = double(image.size());
  const auto l1 = cpu::photometric_loss(image, target, W, H, 0.2f, true, LossKind::L1);
  const auto l2 = cpu::photometric_loss(image, target, W, H, 0.2f, true, LossKind::L2);
  EXPECT_NEAR(l1.loss, abs_sum / n, 1e-6);
  EXPECT_EQ(l1.l1, l1.loss);
  EXPECT_EQ(l1.ssim, 0.0f);
  EXPECT_NEAR(l2.loss, sq_sum / n, 1e-6);
  EXPECT_EQ(l2.l1, 0.0f);  // l2 has no L1 term
  EXPECT_EQ(l2.ssim, 0.0f);
  const auto lambda0 = cpu::photometric_loss(image, target, W, H, 0.0f, true, LossKind::L1Ssim);
  EXPECT_EQ(l1.loss, lambda0.loss);
  EXPECT_EQ(l1.v_image, lambda0.v_image);
  EXPECT_GT(lambda0.ssim, 0.0f);  // l1_ssim computed it
  // The default is l1_ssim.
  const auto by_default = cpu::photometric_loss(image, target, W, H, 0.2f, true);
  const auto l1_ssim = cpu::photometric_loss(image, target, W, H, 0.2f, true, LossKind::L1Ssim);
  EXPECT_EQ(by_default.loss, l1_ssim.loss);
  EXPECT_EQ(by_default.v_image, l1_ssim.v_image);
}

// l2_ssim is its formula, (1 - lambda) mean (r - t)^2 + lambda (1 - mean SSIM), with the SSIM map
// summed here directly over the 11x11 window (the outer product of the 1D one, zero padding) of an
// image smaller than the window; no L1 reported. And its ends: lambda 0 is l2 and lambda 1 is
// l1_ssim's lambda 1, bit for bit (1 - 0 and 1 - 1 are exact, the absent term adds zeros).
TEST(Loss, L2SsimIsItsFormula) {
  const int W = 4, H = 3;
  std::mt19937 rng(17);
  std::uniform_real_distribution<> u01(0.0, 1.0);
  Vec image(std::size_t(W) * H * 3), target(image.size());
  for (std::size_t i = 0; i < image.size(); ++i) image[i] = u01(rng), target[i] = u01(rng);
  const auto win = ssim_window<double>();
  const double C1 = 0.01 * 0.01, C2 = 0.03 * 0.03;
  double sq_sum = 0, ssim_sum = 0;
  for (int y = 0; y < H; ++y)
    for (int x = 0; x < W; ++x)
      for (int c = 0; c < 3; ++c) {
        const std::size_t i = (std::size_t(y) * W + x) * 3 + c;
        sq_sum += (image[i] - target[i]) * (image[i] - target[i]);
        double mx = 0, my = 0, sxx = 0, syy = 0, sxy = 0;
        for (int v = 0; v < H; ++v)
          for (int u = 0; u < W; ++u) {
            if (std::abs(u - x) > kSsimRadius || std::abs(v - y) > kSsimRadius) continue;
            const double k = win[v - y + kSsimRadius] * win[u - x + kSsimRadius];
            const std::size_t j = (std::size_t(v) * W + u) * 3 + c;
            mx += k * image[j], my += k * target[j];
            sxx += k * image[j] * image[j], syy += k * target[j] * target[j];
            sxy += k * image[j] * target[j];
          }
        ssim_sum += (2 * mx * my + C1) * (2 * (sxy - mx * my) + C2) /
                    ((mx * mx + my * my + C1) * (sxx - mx * mx + syy - my * my + C2));
      }
  const double n = double(image.size()), lambda = 0.3;
  const auto r = cpu::photometric_loss(image, target, W, H, lambda, true, LossKind::L2Ssim);
  EXPECT_NEAR(r.ssim, ssim_sum / n, 1e-14);
  EXPECT_NEAR(r.loss, (1 - lambda) * sq_sum / n + lambda * (1 - ssim_sum / n), 1e-14);
  EXPECT_EQ(r.l1, 0.0);  // no L1 term

  const auto at0 = cpu::photometric_loss(image, target, W, H, 0.0, true, LossKind::L2Ssim);
  const auto l2 = cpu::photometric_loss(image, target, W, H, 0.0, true, LossKind::L2);
  EXPECT_EQ(at0.loss, l2.loss);
  EXPECT_EQ(at0.v_image, l2.v_image);
  const auto at1 = cpu::photometric_loss(image, target, W, H, 1.0, true, LossKind::L2Ssim);
  const auto l1_ssim = cpu::photometric_loss(image, target, W, H, 1.0, true, LossKind::L1Ssim);
  EXPECT_EQ(at1.loss, l1_ssim.loss);
  EXPECT_EQ(at1.v_image, l1_ssim.v_image);
}

// ---- (d) end to end -----------------------------------------------------------------------------

// Raw parameters -> render -> photometric loss, against render_bwd of the loss gradient. The
// target is the rendered image pushed 0.05..0.3 away per element, so L1 stays smooth nearby.
void check_end_to_end(bool antialiased, bool filter3d = false, LossKind kind = LossKind::L1Ssim) {
  Scene s = make_scene(antialiased ? 23 : 13, 16, antialiased);
  if (filter3d) add_filter3d(s, 9);
  ASSERT_TRUE(is_smooth(s));
  const int W = s.cam.width, H = s.cam.height;
  const auto st = cpu::render_fwd(s.g, s.cam, s.rs, s.filter);
  std::mt19937 rng(21);
  std::uniform_real_distribution<> u01(0.0, 1.0), gap(0.05, 0.3);
  Vec target(st.raster.image.size());
  for (std::size_t i = 0; i < target.size(); ++i)
    target[i] = st.raster.image[i] + (u01(rng) < 0.5 ? -1 : 1) * gap(rng);
  const auto loss = cpu::photometric_loss(st.raster.image, target, W, H, kSsimLambda, true, kind);
  const GaussiansT<double> grads =
      cpu::render_bwd(s.g, s.cam, s.rs, st, loss.v_image, {}, s.filter);
  auto outputs = [&] {
    const auto r = cpu::render_fwd(s.g, s.cam, s.rs, s.filter);
    return Vec{cpu::photometric_loss(r.raster.image, target, W, H, kSsimLambda, false, kind).loss};
  };

  // One scalar (~0.2) differenced over 2e-6, against entries of 1e-5..1e-3. Observed over all
  // groups, both modes: rel L2 <= 4.8e-7, 1 - cos <= 1.1e-13, max <= 4.1e-7. Bounds ~20x above
  // that; every mutation tried in project, rasterize (image path) and loss gives rel L2 >= 1.9e-3.
  // With l1 and l2 (smaller losses, so relatively more FD rounding): rel L2 <= 1.1e-6,
  // 1 - cos <= 6.1e-13, max <= 7.2e-7, still 5-10x inside.
  const Tolerance tol{1e-5, 3e-12, 1e-5};
  const std::string name = std::string("end to end ") + (antialiased ? "[antialiased] " : "") +
                           (filter3d ? "[3D filter] " : "") + std::string(to_string(kind)) + " ";
  check_param_groups(name, s.g, grads, {1.0}, outputs, tol);
}

TEST(Gradcheck, EndToEnd) {
  check_end_to_end(false);
}
TEST(Gradcheck, EndToEndAntialiased) {
  check_end_to_end(true);
}
TEST(Gradcheck, EndToEndFilter3dAntialiased) {
  check_end_to_end(true, true);
}
// train.appearance = affine: the loss of r' = A r + b (cpu/appearance_cpu.h) w.r.t. [A | b] and the
// render r, through each loss kind, with a mask (every 7th pixel out). The transform is off the
// identity (A = I + 0.2 noise, b = 0.1 noise) so that A^T differs from A; the targets keep every
// |r' - t| >= 0.02 so no step crosses the L1 kink.
void check_appearance(LossKind kind) {
  const int W = 27, H = 21;
  std::mt19937 rng(13);
  std::uniform_real_distribution<> u01(0.0, 1.0), gap(0.02, 0.3);
  std::normal_distribution<> normal(0.0, 1.0);
  Vec image(std::size_t(W) * H * 3), transform(kAppearanceFloats);
  for (double& x : image) x = u01(rng);
  for (std::size_t k = 0; k < kAppearanceFloats; ++k)
    transform[k] = appearance_identity(k) + (k % 4 == 3 ? 0.1 : 0.2) * normal(rng);
  const Vec compensated = cpu::appearance_fwd(transform.data(), image);
  Vec target(image.size()), weight(std::size_t(W) * H);
  for (std::size_t i = 0; i < image.size(); ++i)
    target[i] = compensated[i] + (u01(rng) < 0.5 ? -1 : 1) * gap(rng);
  for (std::size_t p = 0; p < weight.size(); ++p) weight[p] = p % 7 == 3 ? 0.0 : 1.0;
  auto loss = [&] {
    return Vec{cpu::photometric_loss(cpu::appearance_fwd(transform.data(), image), target, W, H,
                                     kSsimLambda, false, kind, weight.data())
                   .loss};
  };
  const auto r =
      cpu::photometric_loss(compensated, target, W, H, kSsimLambda, true, kind, weight.data());
  Vec v_image, v_transform(kAppearanceFloats, 0.0);
  cpu::appearance_bwd(transform.data(), image, r.v_image, v_image, v_transform.data());
  const Vec fd_transform = fd_gradient(transform, {1.0}, loss);
  const Vec fd_image = fd_gradient(image, {1.0}, loss);
  // The loss checks' bounds: one scalar differenced over 2e-6. The transform's entries are sums
  // over the image (~1e-2), the render's ~1e-4. Observed: rel L2 <= 7.2e-8, 1 - cos <= 2.9e-15,
  // max <= 1.3e-7 (l1_ssim's render); A instead of A^T in the render's gradient gives rel L2 0.3.
  const std::string tag = "appearance " + std::string(to_string(kind)) + " ";
  expect_grad_close(tag + "[A | b]", v_transform, fd_transform, {1e-6, 1e-13, 3e-6});
  expect_grad_close(tag + "render", v_image, fd_image, {1e-6, 1e-13, 3e-6});
  for (std::size_t p = 3; p < weight.size(); p += 7)  // masked pixels have no gradient at all
    for (int c = 0; c < 3; ++c) EXPECT_EQ(v_image[p * 3 + c], 0.0) << "pixel " << p;
}

TEST(Gradcheck, AppearanceL1Ssim) {
  check_appearance(LossKind::L1Ssim);
}
TEST(Gradcheck, AppearanceL1) {
  check_appearance(LossKind::L1);
}
TEST(Gradcheck, AppearanceL2) {
  check_appearance(LossKind::L2);
}
TEST(Gradcheck, AppearanceL2Ssim) {
  check_appearance(LossKind::L2Ssim);
}

TEST(Gradcheck, EndToEndL1) {
  check_end_to_end(false, false, LossKind::L1);
}
TEST(Gradcheck, EndToEndL2) {
  check_end_to_end(false, false, LossKind::L2);
}
TEST(Gradcheck, EndToEndL2Ssim) {
  check_end_to_end(false, false, LossKind::L2Ssim);
}

}  // namespace
}  // namespace splat
