#pragma once
// The finite-difference machinery of the CPU gradient checks (test_gradcheck.cpp, test_pose.cpp):
// small smooth random scenes, central differences in double, and the comparison of a gradient
// with its finite differences.
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "cpu/pipeline.h"

namespace splat::gradcheck {

using Vec = std::vector<double>;

inline constexpr double kStep = 1e-6;       // FD step, relative to max(1, |x|)
inline constexpr double kSsimLambda = 0.2;  // the training loss weight (DESIGN.md section 3)

// ---- Scenes -------------------------------------------------------------------------------------

struct Scene {
  GaussiansT<double> g;
  Camera cam;
  RasterSettings rs;
  std::vector<double> filter;  // Mip-Splatting 3D filter variances [N], or empty
};

// A 3D filter on every splat, variance 0.001..0.01 (filtered scales 0.06..0.22 from 0.05..0.2),
// so that both the scale and the opacity factor of the filter move the outputs.
inline void add_filter3d(Scene& s, std::uint32_t seed) {
  std::mt19937 rng(seed);
  s.filter.resize(s.g.size());
  for (double& v : s.filter) v = std::uniform_real_distribution<>(0.001, 0.01)(rng);
}

// A small random scene: 40x28 (not a multiple of the 16 px tile), off-center principal point, a
// rotated camera, splats at depth 1.5..4 whose means project inside the central 80% of the image,
// unnormalized random quaternions, scales 0.05..0.2, opacities 0.1..0.85, SH degree 3.
inline Scene make_scene(std::uint32_t seed, int n, bool antialiased) {
  std::mt19937 rng(seed);
  auto uniform = [&](double lo, double hi) {
    return std::uniform_real_distribution<>(lo, hi)(rng);
  };
  std::normal_distribution<> normal(0.0, 1.0);

  Scene s;
  const double q[4] = {0.95, 0.10, -0.25, 0.15};  // a camera turned about all three axes
  const double qn = std::sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
  const Mat3<double> R = cpu::quat_to_rotmat(q[0] / qn, q[1] / qn, q[2] / qn, q[3] / qn);
  std::array<double, 16> w2c{};
  const double t[3] = {0.2, -0.1, 0.4};
  for (int r = 0; r < 3; ++r) {
    for (int c = 0; c < 3; ++c) w2c[r * 4 + c] = R[r][c];
    w2c[r * 4 + 3] = t[r];
  }
  w2c[15] = 1;
  s.cam = Camera::from_w2c(w2c, 40, 28, 34.0, 36.0, 18.7, 14.9);

  s.g.sh_degree = 3;
  s.g.resize(n);
  const int K = s.g.K();
  const Mat3<double> Rt = transpose(s.cam.R);
  for (int i = 0; i < n; ++i) {
    const double z = uniform(1.5, 4.0);
    const double px = uniform(0.1, 0.9) * s.cam.width, py = uniform(0.1, 0.9) * s.cam.height;
    const Vec3<double> p{(px - s.cam.cx) / s.cam.fx * z, (py - s.cam.cy) / s.cam.fy * z, z};
    const Vec3<double> m = Rt * (p - s.cam.t);
    for (int k = 0; k < 3; ++k) s.g.means[i * 3 + k] = m[k];
    for (int k = 0; k < 3; ++k) s.g.log_scales[i * 3 + k] = std::log(uniform(0.05, 0.2));
    double q2 = 0;
    do {  // a random direction, but not so short that normalizing amplifies the step
      q2 = 0;
      for (int k = 0; k < 4; ++k) {
        s.g.quats[i * 4 + k] = normal(rng);
        q2 += s.g.quats[i * 4 + k] * s.g.quats[i * 4 + k];
      }
    } while (q2 < 0.25);
    s.g.raw_opacity[i] = logit(uniform(0.1, 0.85));
    for (int c = 0; c < 3; ++c) {
      s.g.sh[(i * K) * 3 + c] = uniform(-0.2, 1.2);
      for (int k = 1; k < K; ++k) s.g.sh[(i * K + k) * 3 + c] = uniform(-0.12, 0.12);
    }
  }

  s.rs.sh_degree = 3;
  s.rs.background = {0.3f, 0.5f, 0.8f};  // not white, so the background term has a gradient
  s.rs.antialiased = antialiased;
  s.rs.smooth_cutoff = true;
  return s;
}

// The preconditions that make the render smooth near the scene, checked rather than assumed.
inline ::testing::AssertionResult is_smooth(const Scene& s) {
  const cpu::Projected<double> p = cpu::project_fwd(s.g, s.cam, s.rs, s.filter);
  for (std::size_t i = 0; i < p.size(); ++i) {
    if (p.radii[i * 2] <= 0) return ::testing::AssertionFailure() << "splat " << i << " culled";
    const double mx = p.means2d[i * 2], my = p.means2d[i * 2 + 1];
    if (mx < 0 || mx > s.cam.width || my < 0 || my > s.cam.height)
      return ::testing::AssertionFailure() << "splat " << i << " outside the image";
    if (p.opacities[i] >= 0.9)
      return ::testing::AssertionFailure() << "splat " << i << " opacity " << p.opacities[i];
    for (int c = 0; c < 3; ++c)
      if (p.colors[i * 3 + c] < 0.05)  // away from the max(0, .) kink
        return ::testing::AssertionFailure() << "splat " << i << " color " << p.colors[i * 3 + c];
  }
  return ::testing::AssertionSuccess();
}

// ---- Finite differences and gradient comparison -------------------------------------------------

// The FD loops make thousands of tiny forward calls, where OpenMP fork/join would cost more than
// the work (milliseconds per parallel region on a loaded machine), so they run on one thread. The
// analytic backward, outside, keeps the default thread count.
class SingleThreaded {
 public:
  SingleThreaded() : saved_(omp_get_max_threads()) { omp_set_num_threads(1); }
  ~SingleThreaded() { omp_set_num_threads(saved_); }
  SingleThreaded(const SingleThreaded&) = delete;
  SingleThreaded& operator=(const SingleThreaded&) = delete;

 private:
  int saved_;
};

// Central difference of <w, F(x)> w.r.t. every element of x (perturbed in place, then restored).
// The outputs are differenced before weighting so that the ones a step leaves untouched cancel
// exactly instead of adding rounding noise.
template <class F>
Vec fd_gradient(Vec& x, const Vec& w, F&& outputs) {
  const SingleThreaded serial;
  Vec grad(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double x0 = x[i], h = kStep * std::max(1.0, std::abs(x0));
    x[i] = x0 + h;
    const Vec plus = outputs();
    x[i] = x0 - h;
    const Vec minus = outputs();
    x[i] = x0;
    double d = 0;
    for (std::size_t k = 0; k < w.size(); ++k) d += w[k] * (plus[k] - minus[k]);
    grad[i] = d / ((x0 + h) - (x0 - h));  // the step actually taken
  }
  return grad;
}

// Three views of one error. 1 - cos is about (angle)^2 / 2 and blind to scale, so it says whether a
// failure is in direction or only in magnitude; it is computed to about 1e-15, which floors its
// tolerance. The max error catches one bad element that the L2 sums would dilute.
struct Tolerance {
  double rel_l2;         // ||got - fd|| / ||fd||
  double one_minus_cos;  // 1 - cos(got, fd)
  double max_rel;        // max |got - fd| / max |fd|
};

// Fails naming the group, with every measure and the worst element.
inline void expect_grad_close(const std::string& what,
                              const Vec& got,
                              const Vec& fd,
                              const Tolerance& tol) {
  ASSERT_EQ(got.size(), fd.size()) << what;
  double diff2 = 0, fd2 = 0, got2 = 0, dot = 0, fd_max = 0, err_max = 0;
  std::size_t worst = 0;
  for (std::size_t i = 0; i < fd.size(); ++i) {
    const double e = got[i] - fd[i];
    diff2 += e * e;
    fd2 += fd[i] * fd[i];
    got2 += got[i] * got[i];
    dot += got[i] * fd[i];
    fd_max = std::max(fd_max, std::abs(fd[i]));
    if (std::abs(e) > err_max) err_max = std::abs(e), worst = i;
  }
  // An all-zero gradient would pass every relative test vacuously.
  ASSERT_GT(fd2, 0.0) << what << ": finite differences are all zero";
  const double rel_l2 = std::sqrt(diff2 / fd2);
  const double cosine = got2 > 0 ? dot / std::sqrt(got2 * fd2) : 0.0;
  const double max_rel = err_max / fd_max;
  auto vs = [](double value, double limit) {
    char buf[48];
    std::snprintf(buf, sizeof buf, "%.2e (tol %.0e)", value, limit);
    return std::string(buf);
  };
  EXPECT_TRUE(rel_l2 <= tol.rel_l2 && 1 - cosine <= tol.one_minus_cos && max_rel <= tol.max_rel)
      << what << ": rel L2 " << vs(rel_l2, tol.rel_l2) << ", 1 - cos "
      << vs(1 - cosine, tol.one_minus_cos) << ", max err / max |fd| " << vs(max_rel, tol.max_rel)
      << " at element " << worst << ": got " << got[worst] << ", fd " << fd[worst];
}

}  // namespace splat::gradcheck
