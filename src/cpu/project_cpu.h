#pragma once
// Projection stage: 3D Gaussians -> 2D conics, depths, screen radii and view-dependent colors.
// EWA splatting (Zwicker et al. 2002) as in 3DGS (Kerbl et al. 2023), conventions pinned by
// ../shared/golden/README.md. Forward and backward live side by side so the math reads once.
#include <algorithm>
#include <cmath>
#include <limits>
#include <span>
#include <type_traits>
#include <vector>

#include "core/camera.h"
#include "core/gaussians.h"
#include "cpu/sh.h"
#include "engine/pose.h"
#include "engine/settings.h"

namespace splat::cpu {

template <class T>
struct Projected {
  std::vector<T> means2d;  // [N, 2]
  std::vector<T> depths;   // [N]
  std::vector<T> conics;   // [N, 3] inverse 2D covariance (a, b, c)
  std::vector<int> radii;  // [N, 2] pixels; 0 = culled
  std::vector<T> colors;   // [N, 3]
  std::vector<T>
      opacities;  // [N] sigmoid(raw), times the 3D filter's and the 2D mip filter's factors
  std::size_t size() const { return depths.size(); }
};

template <class T>
struct ProjectedGrad {
  std::vector<T> means2d, conics, colors, opacities;  // same shapes as Projected
  // [N, 2] sum over pixels of |the pixel's d loss / d mean2d| per axis; empty unless asked for
  // (rasterize_bwd's abs_means2d).
  std::vector<T> means2d_abs;
};

template <class T>
struct Intrinsics {
  T fx, fy, cx, cy;
  int width, height;
  Mat3<T> R;
  Vec3<T> t, center;
  explicit Intrinsics(const Camera& c)
      : fx(T(c.fx)), fy(T(c.fy)), cx(T(c.cx)), cy(T(c.cy)), width(c.width), height(c.height) {
    for (int i = 0; i < 3; ++i) {
      for (int j = 0; j < 3; ++j) R[i][j] = T(c.R[i][j]);
      t[i] = T(c.t[i]);
      center[i] = T(c.center()[i]);
    }
  }
};

// Rotation matrix of the unit quaternion (w, x, y, z).
template <class T>
Mat3<T> quat_to_rotmat(T w, T x, T y, T z) {
  Mat3<T> r;
  r[0] = {1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)};
  r[1] = {2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)};
  r[2] = {2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)};
  return r;
}

// Everything the forward computes for one splat and the backward needs again.
template <class T>
struct SplatGeometry {
  bool valid = false;
  T qn[4], qnorm;         // normalized quaternion and the raw norm
  Mat3<T> Rq;             // rotation of the splat
  Vec3<T> s;              // scales, with the 3D filter: sqrt(exp(log_scale)^2 + filter var)
  Vec3<T> s_raw;          // exp(log_scale)
  T filter_var = 0;       // Mip-Splatting 3D filter variance (0 = none)
  T compensation3d = 1;   // prod(s_raw / s): the 3D filter's opacity factor
  Mat3<T> cov_cam;        // 3D covariance in camera space
  Vec3<T> p;              // mean in camera space
  T J[2][3];              // EWA Jacobian (with the field-of-view clamp)
  bool clamp_x, clamp_y;  // tangent clamped
  T cov2d[3];             // J cov J^T + eps2d I  (a, b, c)
  T det, det_orig;
  T compensation;  // the 2D mip filter's opacity factor
};

// The 2D covariance of one splat (3D covariance, camera transform, EWA Jacobian, low-pass).
// Per-splat geometry is computed in double whatever the storage type: a needle-shaped splat makes
// det(cov2d) cancel catastrophically, and the oracle should not add float error of its own there.
// filter_var is the splat's Mip-Splatting 3D filter variance (engine/filter3d.h), 0 for none.
template <class P>
SplatGeometry<double> splat_geometry(const GaussiansT<P>& g,
                                     std::size_t i,
                                     const Intrinsics<double>& cam,
                                     double filter_var = 0) {
  using T = double;
  SplatGeometry<T> s;
  const Vec3<T> m{g.means[i * 3], g.means[i * 3 + 1], g.means[i * 3 + 2]};
  s.p = cam.R * m + cam.t;
  if (s.p.z < T(config::near_plane)) return s;
  const T q[4] = {g.quats[i * 4], g.quats[i * 4 + 1], g.quats[i * 4 + 2], g.quats[i * 4 + 3]};
  s.qnorm = std::sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
  if (!(s.qnorm > T(0))) return s;
  for (int k = 0; k < 4; ++k) s.qn[k] = q[k] / s.qnorm;
  s.Rq = quat_to_rotmat(s.qn[0], s.qn[1], s.qn[2], s.qn[3]);
  s.filter_var = filter_var;
  for (int k = 0; k < 3; ++k) {
    s.s_raw[k] = std::exp(g.log_scales[i * 3 + k]);
    s.s[k] = s.s_raw[k];
    if (filter_var > T(0)) {
      s.s[k] = std::sqrt(s.s_raw[k] * s.s_raw[k] + filter_var);
      s.compensation3d *= s.s_raw[k] / s.s[k];
    }
  }
  Mat3<T> M;  // Rq * diag(s); world covariance = M M^T
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 3; ++c) M[r][c] = s.Rq[r][c] * s.s[c];
  const Mat3<T> RM = cam.R * M;
  s.cov_cam = RM * transpose(RM);

  // Jacobian of the perspective projection at the mean, with x/z and y/z clamped to the field of
  // view plus 30% so splats far outside the image do not get huge screen footprints.
  const T x = s.p.x, y = s.p.y, z = s.p.z;
  const T tan_x = T(0.5) * cam.width / cam.fx, tan_y = T(0.5) * cam.height / cam.fy;
  const T lim_xp = (cam.width - cam.cx) / cam.fx + T(0.3) * tan_x;
  const T lim_xn = cam.cx / cam.fx + T(0.3) * tan_x;
  const T lim_yp = (cam.height - cam.cy) / cam.fy + T(0.3) * tan_y;
  const T lim_yn = cam.cy / cam.fy + T(0.3) * tan_y;
  const T u = x / z, v = y / z;
  s.clamp_x = u > lim_xp || u < -lim_xn;
  s.clamp_y = v > lim_yp || v < -lim_yn;
  const T tx = z * std::clamp(u, -lim_xn, lim_xp);
  const T ty = z * std::clamp(v, -lim_yn, lim_yp);
  s.J[0][0] = cam.fx / z, s.J[0][1] = 0, s.J[0][2] = -cam.fx * tx / (z * z);
  s.J[1][0] = 0, s.J[1][1] = cam.fy / z, s.J[1][2] = -cam.fy * ty / (z * z);

  T JC[2][3] = {};
  for (int r = 0; r < 2; ++r)
    for (int c = 0; c < 3; ++c)
      for (int k = 0; k < 3; ++k) JC[r][c] += s.J[r][k] * s.cov_cam[k][c];
  T cov[2][2] = {};
  for (int r = 0; r < 2; ++r)
    for (int c = 0; c < 2; ++c)
      for (int k = 0; k < 3; ++k) cov[r][c] += JC[r][k] * s.J[c][k];
  s.det_orig = cov[0][0] * cov[1][1] - cov[0][1] * cov[0][1];
  s.cov2d[0] = cov[0][0] + T(config::eps2d);
  s.cov2d[1] = cov[0][1];
  s.cov2d[2] = cov[1][1] + T(config::eps2d);
  s.det = s.cov2d[0] * s.cov2d[2] - s.cov2d[1] * s.cov2d[1];
  if (!(s.det > T(0))) return s;
  // Mip-Splatting: scale opacity by the ratio of the footprints before and after the low-pass.
  s.compensation = std::sqrt(std::max(T(0), s.det_orig / s.det));
  s.valid = true;
  return s;
}

// The 3D filter variances per splat ([N], engine/filter3d.h) or empty for none.
template <class P>
using FilterVars = std::type_identity_t<std::span<const P>>;

// A screen radius converted as the GPU converts it (cvt.rzi.s32: saturating, NaN to 0), so that a
// splat far larger than the screen covers all of it on both backends (an out-of-range float to
// int conversion is undefined behaviour in C++).
template <class T>
int radius_px(T r) {
  if (!(r == r)) return 0;
  if (r >= T(2147483647.0)) return std::numeric_limits<int>::max();
  if (r <= T(-2147483648.0)) return std::numeric_limits<int>::min();
  return int(r);
}

template <class P>
Projected<P> project_fwd(const GaussiansT<P>& g,
                         const Camera& camera,
                         const RasterSettings& rs,
                         FilterVars<P> filter = {}) {
  using T = double;
  const Intrinsics<T> cam(camera);
  const std::size_t n = g.size();
  const int K = g.K();
  Projected<P> out;
  out.means2d.assign(n * 2, P(0));
  out.depths.assign(n, P(0));
  out.conics.assign(n * 3, P(0));
  out.radii.assign(n * 2, 0);
  out.colors.assign(n * 3, P(0));
  out.opacities.assign(n, P(0));
#pragma omp parallel for schedule(static)
  for (std::size_t i = 0; i < n; ++i) {
    const SplatGeometry<T> s = splat_geometry(g, i, cam, filter.empty() ? T(0) : T(filter[i]));
    if (!s.valid) continue;
    T opacity = sigmoid(g.raw_opacity[i]) * s.compensation3d;
    if (rs.antialiased) opacity *= s.compensation;
    // Screen extent per axis out to where alpha falls to 1/255 (at most 3.33 sigma), so tile
    // binning never drops a contribution the rasterizer would keep.
    T extent = T(config::max_extent_sigma);
    if (!rs.smooth_cutoff) {
      if (opacity < T(config::alpha_min)) continue;
      extent = std::min(extent, std::sqrt(T(2) * std::log(opacity / T(config::alpha_min))));
    }
    const T mx = cam.fx * s.p.x / s.p.z + cam.cx, my = cam.fy * s.p.y / s.p.z + cam.cy;
    int rx = radius_px(std::ceil(extent * std::sqrt(s.cov2d[0])));
    int ry = radius_px(std::ceil(extent * std::sqrt(s.cov2d[2])));
    if (rs.smooth_cutoff) {  // cover the whole image
      rx = radius_px(std::ceil(std::abs(mx)) + T(cam.width + 1));
      ry = radius_px(std::ceil(std::abs(my)) + T(cam.height + 1));
    }
    if (rx <= 0 && ry <= 0) continue;
    if (mx + rx <= 0 || mx - rx >= cam.width || my + ry <= 0 || my - ry >= cam.height) continue;

    out.means2d[i * 2] = mx;
    out.means2d[i * 2 + 1] = my;
    out.depths[i] = s.p.z;
    out.conics[i * 3] = s.cov2d[2] / s.det;
    out.conics[i * 3 + 1] = -s.cov2d[1] / s.det;
    out.conics[i * 3 + 2] = s.cov2d[0] / s.det;
    out.radii[i * 2] = rx;
    out.radii[i * 2 + 1] = ry;
    out.opacities[i] = opacity;

    const Vec3<T> m{g.means[i * 3], g.means[i * 3 + 1], g.means[i * 3 + 2]};
    const Vec3<T> dir = normalize(m - cam.center);
    ShBasis<T> basis;
    sh_basis(rs.sh_degree, dir, basis);
    const int active = sh_coeffs(rs.sh_degree);
    for (int c = 0; c < 3; ++c) {
      T col = T(0.5);
      for (int k = 0; k < active; ++k) col += basis[k] * g.sh[(i * K + k) * 3 + c];
      out.colors[i * 3 + c] = std::max(T(0), col);
    }
  }
  return out;
}

// Backpropagates gradients of the projected quantities into the raw parameters. `grads` has the
// model's shapes and is overwritten. With v_view (train.pose_opt), it also gets d loss / d [R | t]
// of the camera ([12], engine/pose.h's layout): each splat's terms (pose_splat_grad), summed in
// splat order in double.
template <class P>
void project_bwd(const GaussiansT<P>& g,
                 const Camera& camera,
                 const RasterSettings& rs,
                 const Projected<P>& fwd,
                 const ProjectedGrad<P>& v,
                 GaussiansT<P>& grads,
                 FilterVars<P> filter = {},
                 std::vector<double>* v_view = nullptr) {
  using T = double;
  const Intrinsics<T> cam(camera);
  const std::size_t n = g.size();
  const int K = g.K();
  grads.sh_degree = g.sh_degree;
  grads.resize(n);
  grads.for_each_group([](const char*, std::vector<P>& a) { std::fill(a.begin(), a.end(), P(0)); });
  std::vector<double> view_terms(v_view ? n * kPoseViewGrads : 0, 0.0);  // [N, 12]
#pragma omp parallel for schedule(static)
  for (std::size_t i = 0; i < n; ++i) {
    if (fwd.radii[i * 2] <= 0 && fwd.radii[i * 2 + 1] <= 0) continue;
    const SplatGeometry<T> s = splat_geometry(g, i, cam, filter.empty() ? T(0) : T(filter[i]));
    Vec3<T> v_p{};  // d loss / d camera-space mean
    Vec3<T> v_mean{};
    Vec3<T> v_dir_mean{};  // the part of v_mean through the colour's view direction

    // Color: SH evaluated along the view direction; the direction depends on the mean.
    {
      const Vec3<T> m{g.means[i * 3], g.means[i * 3 + 1], g.means[i * 3 + 2]};
      const Vec3<T> d = m - cam.center;
      const T dn = norm(d);
      const Vec3<T> dir = d * (T(1) / dn);
      ShBasis<T> basis;
      std::array<Vec3<T>, 16> dbasis;
      sh_basis(rs.sh_degree, dir, basis, &dbasis);
      const int active = sh_coeffs(rs.sh_degree);
      Vec3<T> v_dir{};
      for (int c = 0; c < 3; ++c) {
        T col = T(0.5);
        for (int k = 0; k < active; ++k) col += basis[k] * g.sh[(i * K + k) * 3 + c];
        const T vc = col > T(0) ? v.colors[i * 3 + c] : T(0);  // max(0, .) passes no gradient below
        for (int k = 0; k < active; ++k) {
          grads.sh[(i * K + k) * 3 + c] = basis[k] * vc;
          v_dir += dbasis[k] * (g.sh[(i * K + k) * 3 + c] * vc);
        }
      }
      v_dir_mean = (v_dir - dir * dot(dir, v_dir)) * (T(1) / dn);
      v_mean += v_dir_mean;
    }

    // Opacity = sigmoid(raw) * compensation3d [* compensation when antialiased].
    const T sig = sigmoid(g.raw_opacity[i]);
    const T v_op = v.opacities[i];
    const T comp2d = rs.antialiased ? s.compensation : T(1);
    grads.raw_opacity[i] = v_op * s.compensation3d * comp2d * sig * (T(1) - sig);
    // d loss / d log(compensation3d), for the scales below.
    const T v_log_comp3d = v_op * sig * s.compensation3d * comp2d;
    T v_det = 0, v_det_orig = 0;
    if (rs.antialiased) {
      const T v_comp = v_op * sig * s.compensation3d;
      if (s.compensation > T(0)) {
        v_det_orig = v_comp * T(0.5) / (s.compensation * s.det);
        v_det = -v_comp * T(0.5) * s.compensation / s.det;
      }
    }

    // Conic = inverse(cov2d): dL/dcov = -conic G conic, G the symmetric gradient of the conic
    // (the off-diagonal b appears twice in the matrix, so G01 = v_b / 2).
    const T cn[3] = {fwd.conics[i * 3], fwd.conics[i * 3 + 1], fwd.conics[i * 3 + 2]};
    const T Ci[2][2] = {{cn[0], cn[1]}, {cn[1], cn[2]}};
    const T G[2][2] = {{v.conics[i * 3], v.conics[i * 3 + 1] / 2},
                       {v.conics[i * 3 + 1] / 2, v.conics[i * 3 + 2]}};
    T V[2][2] = {};  // symmetric gradient w.r.t. the 2D covariance
    for (int r = 0; r < 2; ++r)
      for (int c = 0; c < 2; ++c)
        for (int a = 0; a < 2; ++a)
          for (int b = 0; b < 2; ++b) V[r][c] -= Ci[r][a] * G[a][b] * Ci[b][c];
    // det(A) has gradient det(A) * A^-1 = cofactor; both determinants see the same dA.
    const T cof_blur[2][2] = {{s.cov2d[2], -s.cov2d[1]}, {-s.cov2d[1], s.cov2d[0]}};
    const T a0 = s.cov2d[0] - T(config::eps2d), c0 = s.cov2d[2] - T(config::eps2d);
    const T cof_orig[2][2] = {{c0, -s.cov2d[1]}, {-s.cov2d[1], a0}};
    for (int r = 0; r < 2; ++r)
      for (int c = 0; c < 2; ++c) V[r][c] += v_det * cof_blur[r][c] + v_det_orig * cof_orig[r][c];

    // cov2d = J Sc J^T: dSc = J^T V J, dJ = 2 V J Sc.
    Mat3<T> v_cov_cam;
    for (int a = 0; a < 3; ++a)
      for (int b = 0; b < 3; ++b)
        for (int r = 0; r < 2; ++r)
          for (int c = 0; c < 2; ++c) v_cov_cam[a][b] += s.J[r][a] * V[r][c] * s.J[c][b];
    T v_J[2][3] = {};
    for (int r = 0; r < 2; ++r)
      for (int c = 0; c < 3; ++c)
        for (int k = 0; k < 2; ++k)
          for (int l = 0; l < 3; ++l) v_J[r][c] += 2 * V[r][k] * s.J[k][l] * s.cov_cam[l][c];

    // Jacobian entries -> camera-space mean. With the tangent clamped, t = z * limit.
    const T x = s.p.x, y = s.p.y, z = s.p.z, iz = T(1) / z, iz2 = iz * iz, iz3 = iz2 * iz;
    v_p.z += -cam.fx * iz2 * v_J[0][0] - cam.fy * iz2 * v_J[1][1];
    if (s.clamp_x) {
      v_p.z += -s.J[0][2] * iz * v_J[0][2];  // J02 = -fx*L/z
    } else {
      v_p.x += -cam.fx * iz2 * v_J[0][2];
      v_p.z += 2 * cam.fx * x * iz3 * v_J[0][2];
    }
    if (s.clamp_y) {
      v_p.z += -s.J[1][2] * iz * v_J[1][2];
    } else {
      v_p.y += -cam.fy * iz2 * v_J[1][2];
      v_p.z += 2 * cam.fy * y * iz3 * v_J[1][2];
    }
    // Projected mean (fx x/z + cx, fy y/z + cy).
    const T vmx = v.means2d[i * 2], vmy = v.means2d[i * 2 + 1];
    v_p.x += cam.fx * iz * vmx;
    v_p.y += cam.fy * iz * vmy;
    v_p.z += -(cam.fx * x * vmx + cam.fy * y * vmy) * iz2;

    // Camera transform: p = R m + t, Sc = R S R^T.
    const Mat3<T> Rt = transpose(cam.R);
    v_mean += Rt * v_p;
    const Mat3<T> v_cov = Rt * v_cov_cam * cam.R;
    for (int k = 0; k < 3; ++k) grads.means[i * 3 + k] = v_mean[k];
    if (v_view) {
      const Mat3<T> v_R_cov = v_cov_cam * s.cov_cam * cam.R;  // times 2 below
      T R[9], vc[9];
      for (int r = 0; r < 3; ++r)
        for (int c = 0; c < 3; ++c) R[r * 3 + c] = cam.R[r][c], vc[r * 3 + c] = 2 * v_R_cov[r][c];
      const T t[3] = {cam.t.x, cam.t.y, cam.t.z};
      const T x[3] = {g.means[i * 3], g.means[i * 3 + 1], g.means[i * 3 + 2]};
      const T vp[3] = {v_p.x, v_p.y, v_p.z}, vx[3] = {v_dir_mean.x, v_dir_mean.y, v_dir_mean.z};
      pose_splat_grad(R, t, x, vp, vc, vx, &view_terms[i * kPoseViewGrads]);
    }

    // S = M M^T, M = Rq diag(s): dM = 2 dS M.
    Mat3<T> M;
    for (int r = 0; r < 3; ++r)
      for (int c = 0; c < 3; ++c) M[r][c] = s.Rq[r][c] * s.s[c];
    Mat3<T> v_M;
    for (int r = 0; r < 3; ++r)
      for (int c = 0; c < 3; ++c)
        for (int k = 0; k < 3; ++k) v_M[r][c] += 2 * v_cov[r][k] * M[k][c];
    Mat3<T> W;  // d loss / d Rq
    for (int c = 0; c < 3; ++c) {
      T v_s = 0;
      for (int r = 0; r < 3; ++r) {
        v_s += s.Rq[r][c] * v_M[r][c];
        W[r][c] = v_M[r][c] * s.s[c];
      }
      if (s.filter_var > T(0)) {
        // s = sqrt(s_raw^2 + var): ds / dlog s_raw = s_raw^2 / s, and
        // log compensation3d = sum(log s_raw - log s) has d / dlog s_raw = var / s^2.
        grads.log_scales[i * 3 + c] = v_s * (s.s_raw[c] * s.s_raw[c] / s.s[c]) +
                                      v_log_comp3d * s.filter_var / (s.s[c] * s.s[c]);
      } else {
        grads.log_scales[i * 3 + c] = v_s * s.s[c];
      }
    }
    // Rotation matrix of the unit quaternion -> its components, then through the normalization.
    const T w = s.qn[0], qx = s.qn[1], qy = s.qn[2], qz = s.qn[3];
    const T v_qn[4] = {2 * (-qz * W[0][1] + qy * W[0][2] + qz * W[1][0] - qx * W[1][2] -
                            qy * W[2][0] + qx * W[2][1]),
                       2 * (qy * W[0][1] + qz * W[0][2] + qy * W[1][0] - 2 * qx * W[1][1] -
                            w * W[1][2] + qz * W[2][0] + w * W[2][1] - 2 * qx * W[2][2]),
                       2 * (-2 * qy * W[0][0] + qx * W[0][1] + w * W[0][2] + qx * W[1][0] +
                            qz * W[1][2] - w * W[2][0] + qz * W[2][1] - 2 * qy * W[2][2]),
                       2 * (-2 * qz * W[0][0] - w * W[0][1] + qx * W[0][2] + w * W[1][0] -
                            2 * qz * W[1][1] + qy * W[1][2] + qx * W[2][0] + qy * W[2][1])};
    T qdot = 0;
    for (int k = 0; k < 4; ++k) qdot += s.qn[k] * v_qn[k];
    for (int k = 0; k < 4; ++k) grads.quats[i * 4 + k] = (v_qn[k] - s.qn[k] * qdot) / s.qnorm;
  }
  if (v_view) {
    v_view->assign(kPoseViewGrads, 0.0);
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t k = 0; k < kPoseViewGrads; ++k)
        (*v_view)[k] += view_terms[i * kPoseViewGrads + k];
  }
}

}  // namespace splat::cpu
