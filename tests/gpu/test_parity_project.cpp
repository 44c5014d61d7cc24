// GPU projection (forward and backward) against cpu::project_fwd / cpu::project_bwd in double.
// The CPU computes each splat's geometry in double, the GPU in float (one thread per splat), so
// the projected values agree to float rounding amplified by the conditioning of the 2D covariance,
// and a splat sitting exactly on a threshold (ceil() of the radius, opacity 1/255, the screen edge)
// may fall differently: such splats are counted, bounded, and left out of the value comparisons.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "cpu/project_cpu.h"
#include "cuda/buffer.h"
#include "cuda/project_cuda.h"
#include "cuda/types.h"
#include "engine/settings.h"
#include "parity_util.h"

namespace splat {
namespace {

// ---- Scenes -------------------------------------------------------------------------------------

struct SceneSpec {
  int n, width, height;
  std::uint32_t seed;
};
// A few hundred to a few thousand splats; image sizes that are and are not multiples of 16.
constexpr std::array<SceneSpec, 4> kScenes = {
    {{300, 64, 48, 11}, {1000, 97, 61, 12}, {2000, 160, 120, 13}, {3000, 250, 170, 14}}};

// test::random_scene with the world turned (so the camera rotation is not the identity) and a
// few special splats per hundred: big ones just outside the field of view (the Jacobian's tangent
// clamp, both signs, both axes), needles (scale ratio 100: ill-conditioned 2D covariances), and
// tiny ones (the 0.3 px low-pass dominates, antialiasing compensation far below 1).
test::Scene make_scene(const SceneSpec& spec, int storage_degree = 3) {
  test::Scene s = test::random_scene(spec.n, spec.width, spec.height, spec.seed);
  Camera& cam = s.camera;
  // World rotation Q (about 20 degrees about a tilted axis); R' = R Q^T, m' = Q m keeps every
  // camera-space position, so the same splats stay in view.
  const double qq[4] = {0.985, 0.10, -0.12, 0.07};
  const double qn = std::sqrt(qq[0] * qq[0] + qq[1] * qq[1] + qq[2] * qq[2] + qq[3] * qq[3]);
  const Mat3<double> Q = cpu::quat_to_rotmat(qq[0] / qn, qq[1] / qn, qq[2] / qn, qq[3] / qn);
  const Mat3<double> R0 = cam.R;
  cam.R = R0 * transpose(Q);
  Gaussians& g = s.gaussians;
  const Mat3<double> Rt = transpose(cam.R);
  for (int i = 0; i < spec.n; ++i) {
    const Vec3<double> m{g.means[i * 3], g.means[i * 3 + 1], g.means[i * 3 + 2]};
    Vec3<double> w = Q * m;
    float* ls = &g.log_scales[i * 3];
    const int kind = i % 100;
    if (kind >= 20 && kind < 24) {  // just outside the view, large enough to reach into it
      const double z = 3.0 + 0.25 * (kind - 20);
      const double u = (kind % 2 ? -1.0 : 1.0) * (kind < 22 ? 0.80 : 0.15);
      const double v = (kind % 2 ? 1.0 : -1.0) * (kind < 22 ? 0.10 : 0.75);
      w = Rt * (Vec3<double>{u * z, v * z, z} - cam.t);
      for (int k = 0; k < 3; ++k) ls[k] = float(std::log(0.35 + 0.05 * k));
    } else if (kind == 30 || kind == 31) {  // needles
      ls[0] = float(std::log(0.2));
      ls[1] = ls[2] = float(std::log(0.002));
    } else if (kind == 40) {  // far below a pixel
      for (int k = 0; k < 3; ++k) ls[k] = float(std::log(1e-4));
    }
    for (int k = 0; k < 3; ++k) g.means[i * 3 + k] = float(w[k]);
  }
  if (storage_degree < g.sh_degree) {  // keep the leading coefficients of each splat
    const int K0 = g.K(), K1 = sh_coeffs(storage_degree);
    std::vector<float> sh(std::size_t(spec.n) * K1 * 3);
    for (int i = 0; i < spec.n; ++i)
      for (int k = 0; k < K1 * 3; ++k)
        sh[std::size_t(i) * K1 * 3 + k] = g.sh[std::size_t(i) * K0 * 3 + k];
    g.sh = std::move(sh);
    g.sh_degree = storage_degree;
  }
  return s;
}

// ---- Device state -------------------------------------------------------------------------------

struct DeviceModel {
  cuda::DeviceBuffer<float> means, log_scales, quats, raw_opacity, sh;
  explicit DeviceModel(const Gaussians& g)
      : means(test::to_device(g.means)),
        log_scales(test::to_device(g.log_scales)),
        quats(test::to_device(g.quats)),
        raw_opacity(test::to_device(g.raw_opacity)),
        sh(test::to_device(g.sh)) {}
  cuda::GaussianPtrs ptrs() const {
    return {means.data(), log_scales.data(), quats.data(), raw_opacity.data(), sh.data()};
  }
};

// Every output poisoned, so an entry the kernel forgets stays NaN (or -1 for the radii).
struct DeviceProjected {
  cuda::DeviceBuffer<float> means2d, depths, conics, colors, opacities;
  cuda::DeviceBuffer<int> radii;
  explicit DeviceProjected(std::size_t n)
      : means2d(test::poisoned<float>(n * 2)),
        depths(test::poisoned<float>(n)),
        conics(test::poisoned<float>(n * 3)),
        colors(test::poisoned<float>(n * 3)),
        opacities(test::poisoned<float>(n)),
        radii(test::poisoned<int>(n * 2)) {}
  cuda::ProjectedPtrs ptrs() {
    return {means2d.data(), depths.data(), conics.data(),
            radii.data(),   colors.data(), opacities.data()};
  }
};

struct DeviceGrads {
  cuda::DeviceBuffer<float> means, log_scales, quats, raw_opacity, sh;
  DeviceGrads(std::size_t n, int K)
      : means(test::poisoned<float>(n * 3)),
        log_scales(test::poisoned<float>(n * 3)),
        quats(test::poisoned<float>(n * 4)),
        raw_opacity(test::poisoned<float>(n)),
        sh(test::poisoned<float>(n * K * 3)) {}
  cuda::GaussianGradPtrs ptrs() {
    return {means.data(), log_scales.data(), quats.data(), raw_opacity.data(), sh.data()};
  }
  Gaussians download(int sh_degree) const {
    Gaussians g;
    g.sh_degree = sh_degree;
    g.means = means.download();
    g.log_scales = log_scales.download();
    g.quats = quats.download();
    g.raw_opacity = raw_opacity.download();
    g.sh = sh.download();
    return g;
  }
};

cuda::ProjectParams params(const test::Scene& s, const RasterSettings& rs) {
  cuda::ProjectParams p;
  p.n = int(s.gaussians.size());
  p.K = s.gaussians.K();
  p.sh_degree = rs.sh_degree;
  p.antialiased = rs.antialiased;
  p.cam = cuda::CameraParams::from(s.camera);
  return p;
}

// GPU forward, downloaded; `dev` keeps the device state for a backward.
cpu::Projected<float> run_fwd(const test::Scene& s,
                              const RasterSettings& rs,
                              const DeviceModel& model,
                              DeviceProjected& dev) {
  cuda::project_fwd(params(s, rs), model.ptrs(), dev.ptrs(), nullptr);
  SPLAT_CUDA_CHECK(cudaDeviceSynchronize());
  cpu::Projected<float> out;
  out.means2d = dev.means2d.download();
  out.depths = dev.depths.download();
  out.conics = dev.conics.download();
  out.radii = dev.radii.download();
  out.colors = dev.colors.download();
  out.opacities = dev.opacities.download();
  return out;
}

bool kept(const std::vector<int>& radii, std::size_t i) {
  return radii[i * 2] > 0 || radii[i * 2 + 1] > 0;
}

// The entries [i * stride, (i + 1) * stride) of every splat i with mask[i].
template <class T>
std::vector<T> select(const std::vector<T>& v, const std::vector<char>& mask, std::size_t stride) {
  std::vector<T> out;
  for (std::size_t i = 0; i < mask.size(); ++i)
    if (mask[i]) out.insert(out.end(), v.begin() + i * stride, v.begin() + (i + 1) * stride);
  return out;
}

// Splats whose radii differ between the backends. A float ceil() (or the opacity 1/255 test, or
// the screen-edge test) can only flip when the double value sits within ~1e-6 relative of the
// threshold: about 1e-5 of the splats at most. One per thousand plus one would pass on luck only.
std::vector<char> count_radius_mismatches(const std::vector<int>& got,
                                          const std::vector<int>& want,
                                          std::size_t n) {
  std::vector<char> mismatch(n, 0);
  std::size_t count = 0, kept_want = 0;
  for (std::size_t i = 0; i < n; ++i) {
    kept_want += kept(want, i);
    if (got[i * 2] == want[i * 2] && got[i * 2 + 1] == want[i * 2 + 1]) continue;
    mismatch[i] = 1;
    ++count;
    if (kept(got, i) && kept(want, i)) {  // both kept: a rounding flip moves a radius by one
      EXPECT_LE(std::abs(got[i * 2] - want[i * 2]), 1) << "splat " << i;
      EXPECT_LE(std::abs(got[i * 2 + 1] - want[i * 2 + 1]), 1) << "splat " << i;
    }
  }
  EXPECT_LE(count, 1 + n / 1000) << "radii differ for " << count << " of " << n << " splats";
  // Not vacuous: most splats are in view, and the culling paths ran.
  EXPECT_GT(kept_want, n / 2);
  EXPECT_LT(kept_want, n);
  return mismatch;
}

// ---- Tolerances ---------------------------------------------------------------------------------
// Each bound is about 10x the worst case measured on an H200 over every case below; float32 against
// double rounding is ~1e-7 relative, so anything short of a real bug stays well inside.

// |means2d| <= ~300 px from float camera-space coordinates: measured 2e-5 px.
constexpr test::Tolerance kMeans2d{5e-7, 1 - 1e-12, 2e-4, "float fx*x/z + cx at <= 300 px"};
constexpr test::Tolerance kDepths{3e-7, 1 - 1e-12, 3e-6, "float R m + t, depths <= 7"};
// The determinants are sums of squares (Cauchy-Binet), so even needles keep float accuracy;
// conic entries <= 1/eps2d = 3.3, measured 1.3e-6.
constexpr test::Tolerance kConics{2e-6, 1 - 1e-12, 2e-5, "float 2x2 covariance, conic <= 3.3"};
constexpr test::Tolerance kColors{1e-6, 1 - 1e-12, 3e-6, "float SH sums of <= 16 terms"};
constexpr test::Tolerance kOpacities{1e-6, 1 - 1e-12, 2e-6, "float sigmoid x compensation"};

// Backward: sums of chain-rule products of float values, in another order than the CPU's double.
constexpr test::Tolerance kGradSh{2e-6, 1 - 1e-12, 5e-6, "basis x v_color in float"};
constexpr test::Tolerance kGradOpacity{1e-6, 1 - 1e-12, 5e-7, "sigmoid' x compensation in float"};
// |v_means| reaches ~30 (1/z^2 Jacobian terms): measured 7e-5 absolute, 9e-8 relative.
constexpr test::Tolerance kGradMeans{1e-6, 1 - 1e-12, 1e-3, "float chain through J and cov2d"};
// Scales and rotation see the covariance gradient through M = Rq diag(s); needles (ratio 100)
// cancel most there: measured 1.5e-5 / 1.9e-5 relative, 1.2e-4 / 7e-4 absolute.
constexpr test::Tolerance kGradScales{2e-4, 1 - 1e-8, 2e-3, "float chain into M = Rq diag(s)"};
constexpr test::Tolerance kGradQuats{2e-4, 1 - 1e-8, 1e-2, "float chain into M = Rq diag(s)"};

// ---- Forward ------------------------------------------------------------------------------------

using Case = std::tuple<int, int, bool>;  // scene index, active SH degree, antialiased

class ProjectParity : public ::testing::TestWithParam<Case> {};

TEST_P(ProjectParity, Forward) {
  const auto [scene_index, degree, antialiased] = GetParam();
  const SceneSpec spec = kScenes[scene_index];
  const test::Scene s = make_scene(spec);
  RasterSettings rs;
  rs.sh_degree = degree;
  rs.antialiased = antialiased;
  const std::size_t n = s.gaussians.size();

  const DeviceModel model(s.gaussians);
  DeviceProjected dev(n);
  const cpu::Projected<float> got = run_fwd(s, rs, model, dev);
  const cpu::Projected<double> want = cpu::project_fwd(s.gaussians.cast<double>(), s.camera, rs);

  const std::vector<char> mismatch = count_radius_mismatches(got.radii, want.radii, n);
  std::vector<char> both(n, 0);
  for (std::size_t i = 0; i < n; ++i) {
    both[i] = !mismatch[i] && kept(want.radii, i);
    if (mismatch[i] || both[i]) continue;
    // Culled by both: every output entry is exactly zero, none left poisoned.
    EXPECT_TRUE(got.means2d[i * 2] == 0 && got.means2d[i * 2 + 1] == 0 && got.depths[i] == 0 &&
                got.conics[i * 3] == 0 && got.conics[i * 3 + 1] == 0 &&
                got.conics[i * 3 + 2] == 0 && got.colors[i * 3] == 0 &&
                got.colors[i * 3 + 1] == 0 && got.colors[i * 3 + 2] == 0 && got.opacities[i] == 0)
        << "culled splat " << i << " has a non-zero output";
  }
  test::expect_agree("means2d", select(got.means2d, both, 2), select(want.means2d, both, 2),
                     kMeans2d);
  test::expect_agree("depths", select(got.depths, both, 1), select(want.depths, both, 1), kDepths);
  test::expect_agree("conics", select(got.conics, both, 3), select(want.conics, both, 3), kConics);
  test::expect_agree("colors", select(got.colors, both, 3), select(want.colors, both, 3), kColors);
  test::expect_agree("opacities", select(got.opacities, both, 1), select(want.opacities, both, 1),
                     kOpacities);
}

// ---- Backward -----------------------------------------------------------------------------------

struct BackwardResult {
  Gaussians got;
  GaussiansT<double> want;
  std::vector<char> agree;  // splats both backends kept or both culled
  std::vector<int> radii;   // the GPU forward's
};

// GPU forward + backward against cpu::project_fwd<double> + cpu::project_bwd, with the same
// random vector-Jacobian product (v_means2d, v_conics, v_colors, v_opacities in [-1, 1]).
BackwardResult run_backward(const test::Scene& s, const RasterSettings& rs, std::uint32_t seed) {
  const std::size_t n = s.gaussians.size();
  const DeviceModel model(s.gaussians);
  DeviceProjected dev(n);
  const cpu::Projected<float> fwd = run_fwd(s, rs, model, dev);

  const std::vector<float> v_means2d = test::random_vector(n * 2, seed);
  const std::vector<float> v_conics = test::random_vector(n * 3, seed + 1);
  const std::vector<float> v_colors = test::random_vector(n * 3, seed + 2);
  const std::vector<float> v_opacities = test::random_vector(n, seed + 3);
  cuda::DeviceBuffer<float> d_means2d = test::to_device(v_means2d),
                            d_conics = test::to_device(v_conics),
                            d_colors = test::to_device(v_colors),
                            d_opacities = test::to_device(v_opacities);
  DeviceGrads grads(n, s.gaussians.K());
  cuda::project_bwd(model.ptrs(), {params(s, rs), dev.ptrs()},
                    {d_means2d.data(), d_conics.data(), d_colors.data(), d_opacities.data()},
                    grads.ptrs(), nullptr);
  SPLAT_CUDA_CHECK(cudaDeviceSynchronize());

  BackwardResult r;
  r.got = grads.download(s.gaussians.sh_degree);
  r.radii = fwd.radii;
  const GaussiansT<double> gd = s.gaussians.cast<double>();
  const cpu::Projected<double> want_fwd = cpu::project_fwd(gd, s.camera, rs);
  cpu::ProjectedGrad<double> v;
  v.means2d.assign(v_means2d.begin(), v_means2d.end());
  v.conics.assign(v_conics.begin(), v_conics.end());
  v.colors.assign(v_colors.begin(), v_colors.end());
  v.opacities.assign(v_opacities.begin(), v_opacities.end());
  cpu::project_bwd(gd, s.camera, rs, want_fwd, v, r.want);

  r.agree.assign(n, 0);
  std::size_t disagree = 0;
  for (std::size_t i = 0; i < n; ++i) {
    r.agree[i] = kept(fwd.radii, i) == kept(want_fwd.radii, i);
    disagree += !r.agree[i];
  }
  // Same reason and bound as the forward's radius mismatches.
  EXPECT_LE(disagree, 1 + n / 1000) << "culling differs for " << disagree << " of " << n;
  return r;
}

void expect_grads_agree(const BackwardResult& r, std::size_t K) {
  const std::vector<char>& m = r.agree;
  test::expect_agree("v_means", select(r.got.means, m, 3), select(r.want.means, m, 3), kGradMeans);
  test::expect_agree("v_log_scales", select(r.got.log_scales, m, 3),
                     select(r.want.log_scales, m, 3), kGradScales);
  test::expect_agree("v_quats", select(r.got.quats, m, 4), select(r.want.quats, m, 4), kGradQuats);
  test::expect_agree("v_raw_opacity", select(r.got.raw_opacity, m, 1),
                     select(r.want.raw_opacity, m, 1), kGradOpacity);
  test::expect_agree("v_sh", select(r.got.sh, m, K * 3), select(r.want.sh, m, K * 3), kGradSh);
}

TEST_P(ProjectParity, Backward) {
  const auto [scene_index, degree, antialiased] = GetParam();
  const test::Scene s = make_scene(kScenes[scene_index]);
  RasterSettings rs;
  rs.sh_degree = degree;
  rs.antialiased = antialiased;
  const BackwardResult r = run_backward(s, rs, 100 + 10 * scene_index + degree);
  expect_grads_agree(r, std::size_t(s.gaussians.K()));

  // Coefficients above the active degree get exact zeros (overwritten, not left poisoned).
  const std::size_t K = std::size_t(s.gaussians.K()), active = std::size_t(sh_coeffs(degree));
  std::size_t nonzero = 0;
  for (std::size_t i = 0; i < s.gaussians.size(); ++i)
    for (std::size_t k = active * 3; k < K * 3; ++k) nonzero += r.got.sh[i * K * 3 + k] != 0.0f;
  EXPECT_EQ(nonzero, 0u) << "inactive SH coefficients with a non-zero gradient";
}

INSTANTIATE_TEST_SUITE_P(Scenes,
                         ProjectParity,
                         ::testing::Combine(::testing::Range(0, int(kScenes.size())),
                                            ::testing::Range(0, 4),
                                            ::testing::Bool()),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           const SceneSpec& sc = kScenes[std::get<0>(info.param)];
                           return std::to_string(sc.n) + "_" + std::to_string(sc.width) + "x" +
                                  std::to_string(sc.height) + "_deg" +
                                  std::to_string(std::get<1>(info.param)) +
                                  (std::get<2>(info.param) ? "_aa" : "");
                         });

// A model stored at a lower degree than 3 (K = 4): the per-splat stride of sh follows K.
// Storage degrees below 3: degree 1 (12 floats a splat, float4 slices) and degree 2 (27 floats,
// one at a time: the kernels' scalar slice path).
TEST(ProjectParityStorage, StorageDegreesOneAndTwo) {
  for (const auto& [degree, antialiased] :
       {std::pair{1, false}, std::pair{1, true}, std::pair{2, true}}) {
    SCOPED_TRACE("storage degree " + std::to_string(degree) +
                 (antialiased ? ", antialiased" : ", classic"));
    const test::Scene s = make_scene(kScenes[1], degree);
    ASSERT_EQ(s.gaussians.K(), (degree + 1) * (degree + 1));
    RasterSettings rs;
    rs.sh_degree = degree;
    rs.antialiased = antialiased;
    const std::size_t n = s.gaussians.size();
    const DeviceModel model(s.gaussians);
    DeviceProjected dev(n);
    const cpu::Projected<float> got = run_fwd(s, rs, model, dev);
    const cpu::Projected<double> want = cpu::project_fwd(s.gaussians.cast<double>(), s.camera, rs);
    const std::vector<char> mismatch = count_radius_mismatches(got.radii, want.radii, n);
    std::vector<char> both(n, 0);
    for (std::size_t i = 0; i < n; ++i) both[i] = !mismatch[i] && kept(want.radii, i);
    test::expect_agree("colors", select(got.colors, both, 3), select(want.colors, both, 3),
                       kColors);
    expect_grads_agree(run_backward(s, rs, 7), std::size_t(s.gaussians.K()));
  }
}

// ---- Culling ------------------------------------------------------------------------------------

// Splats culled for each reason get radii 0, zero outputs and exactly zero gradients (even with
// a non-zero incoming gradient, as a rasterizer bug could produce), on both backends.
TEST(ProjectParityCulling, CulledSplatsGetZeroGradients) {
  test::Scene s = make_scene(kScenes[2]);
  Gaussians& g = s.gaussians;
  const Mat3<double> Rt = transpose(s.camera.R);
  auto place = [&](std::size_t i, Vec3<double> p) {  // camera-space position -> world mean
    const Vec3<double> m = Rt * (p - s.camera.t);
    for (int k = 0; k < 3; ++k) g.means[i * 3 + k] = float(m[k]);
  };
  std::vector<std::size_t> culled;
  for (std::size_t i = 5; i < g.size(); i += 37) {
    switch ((i / 37) % 5) {
      case 0:  // in front of the camera, before the near plane
        place(i, {0.1, 0.1, 0.005});
        break;
      case 1:  // behind the camera
        place(i, {0.2, -0.1, -1.0});
        break;
      case 2:  // zero quaternion
        for (int k = 0; k < 4; ++k) g.quats[i * 4 + k] = 0;
        break;
      case 3:  // opacity 3.4e-4 < 1/255
        g.raw_opacity[i] = -8.0f;
        break;
      case 4:  // far right of the image
        place(i, {30.0, 0.0, 3.0});
        g.log_scales[i * 3] = g.log_scales[i * 3 + 1] = g.log_scales[i * 3 + 2] = std::log(0.05f);
        break;
    }
    culled.push_back(i);
  }
  for (const bool antialiased : {false, true}) {
    SCOPED_TRACE(antialiased ? "antialiased" : "classic");
    RasterSettings rs;
    rs.sh_degree = 3;
    rs.antialiased = antialiased;
    const BackwardResult r = run_backward(s, rs, 21);
    for (const std::size_t i : culled) {
      EXPECT_TRUE(r.radii[i * 2] == 0 && r.radii[i * 2 + 1] == 0) << "splat " << i << " not culled";
      bool zero = r.got.raw_opacity[i] == 0.0f;
      for (int k = 0; k < 3; ++k) zero = zero && r.got.means[i * 3 + k] == 0.0f;
      for (int k = 0; k < 3; ++k) zero = zero && r.got.log_scales[i * 3 + k] == 0.0f;
      for (int k = 0; k < 4; ++k) zero = zero && r.got.quats[i * 4 + k] == 0.0f;
      for (int k = 0; k < g.K() * 3; ++k) zero = zero && r.got.sh[i * g.K() * 3 + k] == 0.0f;
      EXPECT_TRUE(zero) << "culled splat " << i << " has a non-zero gradient";
    }
    // Every splat either backend culled has all-zero gradients, not only the planted ones.
    for (std::size_t i = 0; i < g.size(); ++i) {
      if (kept(r.radii, i)) continue;
      float sum = std::abs(r.got.raw_opacity[i]);
      for (int k = 0; k < 3; ++k) sum += std::abs(r.got.means[i * 3 + k]);
      EXPECT_EQ(sum, 0.0f) << "splat " << i;
    }
    expect_grads_agree(r, std::size_t(g.K()));
  }
}

// ---- Adam on the SH coefficients inside the backward -----------------------------------------

// project_bwd with ShAdam against project_bwd, then adam_step on the SH group: the same bits for
// the coefficients and both moments, and for every other gradient. Active degree 2 (with 3 stored,
// the inactive coefficients still get Adam's update with a zero gradient), DC and higher bands with
// different rates, culled splats, moments from earlier steps, host and device scalars, and an
// abandoned step (abort flag raised), which must leave all three arrays alone. Storage degree 3
// (K = 16, 48 floats a splat) moves the slices as float4, degree 2 (27 floats) one float at a time.
// Sparse (AdamGroup::sparse): a third of the splats get no color gradient, and those, the culled
// ones and the inactive coefficients keep their bits.
std::vector<float> unseen_thirds(std::vector<float> v_colors, bool sparse) {
  for (std::size_t i = 0; sparse && i < v_colors.size() / 3; i += 3)
    v_colors[3 * i] = v_colors[3 * i + 1] = v_colors[3 * i + 2] = 0.0f;
  return v_colors;
}

void expect_sh_adam_same_bits(int storage_degree, bool sparse) {
  const test::Scene s = make_scene(kScenes[3], storage_degree);
  const std::size_t n = s.gaussians.size();
  const int K = s.gaussians.K();
  const std::size_t count = n * std::size_t(K) * 3;
  RasterSettings rs;
  rs.sh_degree = 2;
  rs.antialiased = true;
  const DeviceModel model(s.gaussians);
  DeviceProjected dev(n);
  const cpu::Projected<float> fwd = run_fwd(s, rs, model, dev);
  ASSERT_LT(std::count_if(fwd.radii.begin(), fwd.radii.end(), [](int r) { return r > 0; }),
            2 * long(n))
      << "some splats must be culled";
  cuda::DeviceBuffer<float> v_means2d = test::to_device(test::random_vector(n * 2, 31)),
                            v_conics = test::to_device(test::random_vector(n * 3, 32)),
                            v_colors = test::to_device(
                                unseen_thirds(test::random_vector(n * 3, 33), sparse)),
                            v_opacities = test::to_device(test::random_vector(n, 34));
  const cuda::ProjectedGradPtrs v{v_means2d.data(), v_conics.data(), v_colors.data(),
                                  v_opacities.data()};
  std::vector<float> m0 = test::random_vector(count, 35), v0 = test::random_vector(count, 36);
  for (float& x : m0) x *= 1e-3f;
  for (float& x : v0) x = 1e-6f * x * x;
  const long long step = 7;

  // The separate kernels, as a batch step runs them.
  DeviceGrads grads(n, K);
  cuda::DeviceBuffer<float> sh_a = test::to_device(s.gaussians.sh), m_a = test::to_device(m0),
                            v_a = test::to_device(v0);
  cuda::GaussianPtrs in_a = model.ptrs();
  in_a.sh = sh_a.data();
  cuda::project_bwd(in_a, {params(s, rs), dev.ptrs()}, v, grads.ptrs(), nullptr);
  cuda::AdamGroup group_a{sh_a.data(), grads.sh.data(), m_a.data(), v_a.data(),
                          count,       1e-3f,           K,          5e-5f};
  group_a.sparse = sparse;
  cuda::adam_step(&group_a, 1, step, nullptr);
  SPLAT_CUDA_CHECK(cudaDeviceSynchronize());
  const Gaussians want = grads.download(rs.sh_degree);
  const std::vector<float> want_sh = sh_a.download(), want_m = m_a.download(),
                           want_v = v_a.download();
  std::size_t moved = 0;
  for (std::size_t e = 0; e < count; ++e) moved += want_sh[e] != s.gaussians.sh[e];
  EXPECT_GT(moved, sparse ? count / 4 : count / 2)
      << "Adam must move most coefficients, or the comparison proves little";
  if (sparse) {  // the splats that got no gradient, all their coefficients, were left alone
    std::size_t unseen = 0;
    for (std::size_t i = 0; i < n; ++i) {
      if (!(fwd.radii[2 * i] <= 0 && fwd.radii[2 * i + 1] <= 0) && i % 3 != 0) continue;
      ++unseen;
      for (std::size_t e = i * K * 3; e < (i + 1) * K * 3; ++e)
        ASSERT_TRUE(want_sh[e] == s.gaussians.sh[e] && want_m[e] == m0[e] && want_v[e] == v0[e])
            << "splat " << i << " element " << e;
    }
    EXPECT_GT(unseen, n / 3);
  }

  for (const bool device_scalars : {false, true})
    for (const bool abandoned : {false, true}) {
      SCOPED_TRACE(std::string(device_scalars ? "device" : "host") + " scalars" +
                   (abandoned ? ", abandoned" : ""));
      DeviceGrads grads_b(n, K);
      cuda::DeviceBuffer<float> sh_b = test::to_device(s.gaussians.sh), m_b = test::to_device(m0),
                                v_b = test::to_device(v0);
      cuda::GaussianPtrs in_b = model.ptrs();
      in_b.sh = sh_b.data();
      cuda::ShAdam sh_adam;
      sh_adam.group = {sh_b.data(), nullptr, m_b.data(), v_b.data(), count, 1e-3f, K, 5e-5f};
      sh_adam.group.sparse = sparse;
      sh_adam.index = 0;
      sh_adam.scalars = cuda::adam_scalars(&sh_adam.group, 1, step);
      cuda::DeviceBuffer<cuda::AdamScalars> scalars_on_device(1);
      cuda::DeviceBuffer<int> abort(1);
      if (device_scalars) {
        scalars_on_device.upload(std::vector<cuda::AdamScalars>{sh_adam.scalars});
        sh_adam.scalars = {};  // must not be read
        sh_adam.device_scalars = scalars_on_device.data();
      }
      abort.upload(std::vector<int>{abandoned ? 1 : 0});
      sh_adam.abort = abort.data();
      cuda::project_bwd(in_b, {params(s, rs), dev.ptrs()}, v, grads_b.ptrs(), nullptr, &sh_adam);
      SPLAT_CUDA_CHECK(cudaDeviceSynchronize());
      const std::vector<float> got_sh = sh_b.download(), got_m = m_b.download(),
                               got_v = v_b.download();
      if (abandoned) {
        EXPECT_TRUE(got_sh == s.gaussians.sh && got_m == m0 && got_v == v0)
            << "an abandoned step changed the SH state";
        continue;
      }
      std::size_t differ = 0;
      for (std::size_t e = 0; e < count; ++e)
        differ += std::memcmp(&got_sh[e], &want_sh[e], 4) != 0 ||
                  std::memcmp(&got_m[e], &want_m[e], 4) != 0 ||
                  std::memcmp(&got_v[e], &want_v[e], 4) != 0;
      EXPECT_EQ(differ, 0u) << "of " << count << " coefficients";
      const Gaussians got = grads_b.download(rs.sh_degree);
      EXPECT_TRUE(got.means == want.means && got.log_scales == want.log_scales &&
                  got.quats == want.quats && got.raw_opacity == want.raw_opacity)
          << "the other gradients must not change";
    }
}

TEST(ProjectShAdam, SameBitsAsProjectBwdThenAdamFloat4) {
  expect_sh_adam_same_bits(3, false);
}
TEST(ProjectShAdam, SameBitsAsProjectBwdThenAdamScalar) {
  expect_sh_adam_same_bits(2, false);
}
TEST(ProjectShAdam, SparseSameBitsAsProjectBwdThenAdamFloat4) {
  expect_sh_adam_same_bits(3, true);
}
TEST(ProjectShAdam, SparseSameBitsAsProjectBwdThenAdamScalar) {
  expect_sh_adam_same_bits(2, true);
}

}  // namespace
}  // namespace splat
