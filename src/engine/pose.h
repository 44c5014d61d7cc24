#pragma once
// Camera pose refinement (train.pose_opt, as gsplat's pose_opt): every training image i has a
// small rigid correction Delta_i = [dR | dt] of its camera-to-world pose, c2w' = c2w Delta_i,
// learnt jointly with the splats, so that small errors of SfM poses stop blurring the model.
// Held-out views, renders and model files use the given poses. In world-to-camera terms (the
// renderer's [R | t]) the corrected camera is
//   R' = dR^T R,   t' = dR^T (t - dt),
// i.e. a camera-space point p = R x + t becomes dR^T (p - dt).
//
// The correction has 9 numbers (gsplat's parametrization): dt (3), then a 6D rotation delta r (6)
// added to the identity's first two rows, dR = gram_schmidt((1, 0, 0) + r[0:3], (0, 1, 0) +
// r[3:6]) (Zhou et al. 2019, "On the continuity of rotation representations"); zero is the
// identity. The loss gradient reaches it from the renderer's d loss / d [R' | t'] (summed over the
// splats by the projection backward, cpu/project_cpu.h and cuda/project_bwd.cu), through
// pose_backward below; each image's correction has its own Adam, updated in the steps that render
// it (its own step count, so its bias correction counts its own updates). Everything here runs in
// double on both backends, through these functions.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/camera.h"
#include "engine/adam.h"
#include "engine/hd.h"

namespace splat {

// Floats per image: dt (3), the 6D rotation delta (6).
inline constexpr std::size_t kPoseFloats = 9;
// Doubles of d loss / d [R' | t'] of one view: R' row-major (9), then t' (3).
inline constexpr std::size_t kPoseViewGrads = 12;

// The corrections of every training image, their Adam moments and each image's Adam step count.
// Empty: pose refinement is off.
struct PoseState {
  std::vector<float> params;        // [images, 9]
  std::vector<float> m;             // first moments, shape of params
  std::vector<float> v;             // second moments
  std::vector<std::int32_t> steps;  // [images] Adam updates each correction has had

  bool empty() const { return params.empty(); }
  std::size_t images() const { return params.size() / kPoseFloats; }
  // The identity correction of every image (all zeros), with zero moments and steps.
  static PoseState identity(std::size_t images) {
    PoseState s;
    s.params.assign(images * kPoseFloats, 0.0f);
    s.m = s.params;
    s.v = s.params;
    s.steps.assign(images, 0);
    return s;
  }
};

namespace pose_detail {
SPLAT_HD inline double dot3(const double* a, const double* b) {
  return a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
}
SPLAT_HD inline void cross3(const double* a, const double* b, double* c) {
  c[0] = a[1] * b[2] - a[2] * b[1];
  c[1] = a[2] * b[0] - a[0] * b[2];
  c[2] = a[0] * b[1] - a[1] * b[0];
}
}  // namespace pose_detail

// The rotation of a correction d ([9]): rows b1, b2, b3 of Gram-Schmidt on the 6D rotation, into
// dR (row-major [9]). Also returns the norms |a1|, |u| the backward needs.
template <class P>
SPLAT_HD inline void pose_rotation(const P* d, double* dR, double* norms = nullptr) {
  using namespace pose_detail;
  const double a1[3] = {1.0 + double(d[3]), double(d[4]), double(d[5])};
  const double a2[3] = {double(d[6]), 1.0 + double(d[7]), double(d[8])};
  const double n1 = std::sqrt(dot3(a1, a1));
  double* b1 = dR;
  double* b2 = dR + 3;
  for (int k = 0; k < 3; ++k) b1[k] = a1[k] / n1;
  const double s = dot3(b1, a2);
  double u[3];
  for (int k = 0; k < 3; ++k) u[k] = a2[k] - s * b1[k];
  const double n2 = std::sqrt(dot3(u, u));
  for (int k = 0; k < 3; ++k) b2[k] = u[k] / n2;
  cross3(b1, b2, dR + 6);
  if (norms) norms[0] = n1, norms[1] = n2;
}

// The corrected world-to-camera [R' | t'] (row-major R [9], t [3]) of the given [R | t] and d.
template <class P>
SPLAT_HD inline void pose_camera(
    const double* R, const double* t, const P* d, double* Rc, double* tc) {
  double dR[9];
  pose_rotation(d, dR);
  const double q[3] = {t[0] - double(d[0]), t[1] - double(d[1]), t[2] - double(d[2])};
  for (int i = 0; i < 3; ++i) {  // dR^T: column i of dR
    for (int j = 0; j < 3; ++j)
      Rc[i * 3 + j] = dR[i] * R[j] + dR[3 + i] * R[3 + j] + dR[6 + i] * R[6 + j];
    tc[i] = dR[i] * q[0] + dR[3 + i] * q[1] + dR[6 + i] * q[2];
  }
}

// One splat's terms of d loss / d [R | t] ([12], added to v_view), for the camera it was
// projected with: through p = R x + t (v_p = d loss / d p, x the mean), through the camera-space
// covariance R S R^T (v_R_cov: its part of d loss / d R, row-major; the cpu forms it as
// 2 v_cov (R S R^T) R, the cuda kernel as d loss / d (R M) M^T with S = M M^T), and through the
// colour's view direction x - c with c = -R^T t (v_x = d loss / d x through the direction:
// d / d R += t v_x^T, d / d t += R v_x).
template <class T>
SPLAT_HD inline void pose_splat_grad(
    const T* R, const T* t, const T* x, const T* v_p, const T* v_R_cov, const T* v_x, T* v_view) {
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j)
      v_view[i * 3 + j] += v_p[i] * x[j] + v_R_cov[i * 3 + j] + t[i] * v_x[j];
    v_view[9 + i] += v_p[i] + R[i * 3] * v_x[0] + R[i * 3 + 1] * v_x[1] + R[i * 3 + 2] * v_x[2];
  }
}

// d loss / d d ([9], overwritten) from the view's v_view = d loss / d [R' | t'] ([12]), for the
// camera [R | t] that d corrected.
template <class P>
SPLAT_HD inline void pose_backward(
    const double* R, const double* t, const P* d, const double* v_view, double* v_d) {
  using namespace pose_detail;
  double dR[9], norms[2];
  pose_rotation(d, dR, norms);
  const double* G = v_view;  // d loss / d R'
  const double* g = v_view + 9;
  const double q[3] = {t[0] - double(d[0]), t[1] - double(d[1]), t[2] - double(d[2])};
  // R' = dR^T R, t' = dR^T q: d loss / d dR = (G R^T + g q^T)^T, d loss / d dt = -dR g.
  double vR[9];
  for (int a = 0; a < 3; ++a)
    for (int b = 0; b < 3; ++b)  // (G R^T)^T [a][b] = sum_k G[b][k] R[a][k]
      vR[a * 3 + b] = G[b * 3] * R[a * 3] + G[b * 3 + 1] * R[a * 3 + 1] +
                      G[b * 3 + 2] * R[a * 3 + 2] + q[a] * g[b];
  for (int k = 0; k < 3; ++k)
    v_d[k] = -(dR[k * 3] * g[0] + dR[k * 3 + 1] * g[1] + dR[k * 3 + 2] * g[2]);
  // Back through Gram-Schmidt: b3 = b1 x b2, b2 = u / |u|, u = a2 - (b1.a2) b1, b1 = a1 / |a1|.
  const double *b1 = dR, *b2 = dR + 3;
  double v_b1[3], v_b2[3], c[3];
  cross3(b2, vR + 6, c);  // d (b1 x b2) / d b1 applied to v_b3: b2 x v_b3
  for (int k = 0; k < 3; ++k) v_b1[k] = vR[k] + c[k];
  cross3(vR + 6, b1, c);  // ... / d b2: v_b3 x b1
  for (int k = 0; k < 3; ++k) v_b2[k] = vR[3 + k] + c[k];
  const double a2[3] = {double(d[6]), 1.0 + double(d[7]), double(d[8])};
  const double s = dot3(b1, a2), p2 = dot3(b2, v_b2);
  double v_u[3];
  for (int k = 0; k < 3; ++k) v_u[k] = (v_b2[k] - b2[k] * p2) / norms[1];
  const double bu = dot3(b1, v_u);
  for (int k = 0; k < 3; ++k) {
    v_d[6 + k] = v_u[k] - b1[k] * bu;     // d u / d a2 = I - b1 b1^T
    v_b1[k] += -s * v_u[k] - a2[k] * bu;  // d u / d b1 = -(s I + b1 a2^T)
  }
  const double p1 = dot3(b1, v_b1);
  for (int k = 0; k < 3; ++k) v_d[3 + k] = (v_b1[k] - b1[k] * p1) / norms[0];
}

// One image's update in a step that rendered it: the gradient of its correction d ([9]) from the
// view's v_view ([12], the batch's mean), plus reg * d (pose_reg: an L2 pull toward the identity,
// torch Adam's weight_decay, which gsplat gives its pose_adjust), then Adam at learning rate lr,
// the image's own step count `step` advanced by one. In double, rounded to float once per value,
// as cpu::adam_update.
template <class P>
SPLAT_HD inline void pose_update(const double* R,
                                 const double* t,
                                 const double* v_view,
                                 double lr,
                                 double reg,
                                 P* d,
                                 P* m,
                                 P* v,
                                 std::int32_t* step) {
  double grad[kPoseFloats];
  pose_backward(R, t, d, v_view, grad);
  const double n = double(++*step);
  const double bc1 = 1.0 - std::pow(kAdamBeta1, n), bc2 = 1.0 - std::pow(kAdamBeta2, n);
  for (std::size_t k = 0; k < kPoseFloats; ++k) {
    const double g = grad[k] + reg * double(d[k]);
    m[k] = P(kAdamBeta1 * double(m[k]) + (1 - kAdamBeta1) * g);
    v[k] = P(kAdamBeta2 * double(v[k]) + (1 - kAdamBeta2) * g * g);
    d[k] = P(double(d[k]) - lr * (double(m[k]) / bc1) / (std::sqrt(double(v[k]) / bc2) + kAdamEps));
  }
}

// A camera's world-to-camera [R | t] as engine/pose.h's arrays (R row-major [9], t [3]).
inline void camera_pose(const Camera& c, double* R, double* t) {
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j) R[i * 3 + j] = c.R[i][j];
    t[i] = c.t[i];
  }
}

// The camera with its pose corrected by d ([9]): R' and t' of pose_camera, the intrinsics kept.
template <class P>
Camera posed_camera(const Camera& c, const P* d) {
  double R[9], t[3], Rc[9], tc[3];
  camera_pose(c, R, t);
  pose_camera(R, t, d, Rc, tc);
  Camera out = c;
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j) out.R[i][j] = Rc[i * 3 + j];
    out.t[i] = tc[i];
  }
  return out;
}

}  // namespace splat
