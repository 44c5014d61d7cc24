#pragma once
// Device math shared by project_fwd.cu and project_bwd.cu: the per-splat EWA geometry and the real
// spherical-harmonics basis. Mirrors cpu/project_cpu.h (splat_geometry) and cpu/sh.h in float; the
// backward recomputes the geometry instead of storing it, as the CPU reference does.
#include <cstdint>
#include <initializer_list>
#include <string>

#include "core/error.h"
#include "core/gaussians.h"
#include "cuda/project_cuda.h"
#include "engine/settings.h"

namespace splat::config {
// Threads per block, a splat per thread. Both passes stage each block's SH coefficients in shared
// memory ([block, K*3 (+1 pad)] floats, 25 KB at K = 16); the backward also its SH gradients, or
// with ShAdam, each splat's basis and color gradient (19 floats more per splat).
inline constexpr int project_fwd_block_size = 128;
inline constexpr int project_bwd_block_size = 128;
}  // namespace splat::config

namespace splat::cuda::detail {

// sigmoid<float> of the CPU reference (1 / (1 + expf(-x))) with a correctly rounded expf.
__device__ __forceinline__ float sigmoid_f(float x) {
  return 1.0f / (1.0f + float(exp(-double(x))));
}

// Validate at the public boundary: the active degree must fit the stored coefficients.
inline void check_project_params(const ProjectParams& p, const char* who) {
  if (p.n < 0 || p.sh_degree < 0 || p.sh_degree > 3 || p.K > 16 || sh_coeffs(p.sh_degree) > p.K)
    throw Error(std::string(who) + ": " + std::to_string(p.n) + " splats, active SH degree " +
                std::to_string(p.sh_degree) + " with " + std::to_string(p.K) +
                " stored coefficients per channel");
}

// kW consecutive floats, moved as one float4 when kW is 4 (the address then 16-byte aligned).
template <int kW>
struct Floats {
  float v[kW];
};
template <int kW>
__device__ __forceinline__ Floats<kW> load_floats(const float* p) {
  if constexpr (kW == 4) {
    const float4 q = *reinterpret_cast<const float4*>(p);
    return {{q.x, q.y, q.z, q.w}};
  } else {
    static_assert(kW == 1, "one float or four");
    return {{*p}};
  }
}
template <int kW>
__device__ __forceinline__ void store_floats(float* p, const Floats<kW>& f) {
  if constexpr (kW == 4)
    *reinterpret_cast<float4*>(p) = make_float4(f.v[0], f.v[1], f.v[2], f.v[3]);
  else
    *p = f.v[0];
}

// Visits a block's contiguous [count, K3] slice in units of kW consecutive elements (K3 a multiple
// of kW, so a unit never spans two rows): value = load(e, j, off) for kBatch of a thread's units,
// then use(e, j, off, value) for each, with e the unit's first element, row j = e / K3 (the splat)
// and column off = e % K3 (coefficient off / 3, channel off % 3), tracked incrementally instead of
// divided (the loads' copy costs nothing where load ignores it). Consecutive threads take
// consecutive units, so the global accesses coalesce; the batch keeps kBatch loads in flight where
// a load followed by its use waited out the memory latency once per element (48 per thread at
// degree 3).
template <int kW, int kBatch, class Load, class Use>
__device__ __forceinline__ void for_each_slice_unit(int K3, int count, Load&& load, Use&& use) {
  const int units = count * K3 / kW, step = int(blockDim.x);
  const int dj = step * kW / K3, doff = step * kW % K3;
  const auto advance = [&](int& j, int& off) {
    j += dj;
    off += doff;
    if (off >= K3) off -= K3, ++j;
  };
  int j = int(threadIdx.x) * kW / K3, off = int(threadIdx.x) * kW % K3;
  int load_j = j, load_off = off;
  for (int u0 = threadIdx.x; u0 < units; u0 += kBatch * step) {
    decltype(load(0, 0, 0)) value[kBatch];
#pragma unroll
    for (int b = 0; b < kBatch; ++b) {
      if (u0 + b * step < units) value[b] = load((u0 + b * step) * kW, load_j, load_off);
      advance(load_j, load_off);
    }
#pragma unroll
    for (int b = 0; b < kBatch; ++b) {
      if (u0 + b * step < units) use((u0 + b * step) * kW, j, off, value[b]);
      advance(j, off);
    }
  }
}

// Whether a block's slices of K3 floats per splat move as float4: K3 a multiple of 4 and every
// array 16-byte aligned (block starts are then aligned too: whole splats of K3 floats).
inline bool slices_vectorize(int K3, std::initializer_list<const void*> arrays) {
  bool ok = K3 % 4 == 0;
  for (const void* a : arrays) ok = ok && reinterpret_cast<std::uintptr_t>(a) % 16 == 0;
  return ok;
}

// The camera of a launch: from the kernel parameters, or (kDeviceCam, a replayed graph) from
// ProjectParams::device_cam, copied into registers once.
template <bool kDeviceCam>
__device__ __forceinline__ CameraParams launch_camera(const ProjectParams& p) {
  if constexpr (kDeviceCam) return *p.device_cam;
  return p.cam;
}

// Everything the forward computes for one splat and the backward needs again.
struct SplatGeometry {
  bool valid;
  float qn[4], qnorm;        // normalized quaternion (w, x, y, z) and the raw norm
  float Rq[3][3];            // rotation of the splat
  float s[3];                // scales, with the 3D filter: sqrt(exp(log_scale)^2 + var)
  float s_raw[3];            // exp(log_scale)
  float filter_var;          // Mip-Splatting 3D filter variance (0: none)
  float compensation3d;      // prod(s_raw / s): the 3D filter's opacity factor
  float RM[3][3];            // R_cam Rq diag(s): camera-space covariance = RM RM^T
  float p[3];                // mean in camera space
  float J00, J02, J11, J12;  // EWA Jacobian (J01 = J10 = 0), with the field-of-view clamp
  bool clamp_x, clamp_y;     // tangent clamped
  float A[2][3];             // J RM: cov2d before the low-pass = A A^T
  float cov_orig[3];         // A A^T (a, b, c)
  float cov2d[3];            // A A^T + eps2d I (a, b, c)
  float det, det_orig;
  float compensation;  // sqrt(det_orig / det), Mip-Splatting's 2D mip filter
};

// Rotation matrix of the unit quaternion (w, x, y, z).
__device__ __forceinline__ void quat_to_rotmat(const float q[4], float r[3][3]) {
  const float w = q[0], x = q[1], y = q[2], z = q[3];
  r[0][0] = 1.f - 2.f * (y * y + z * z);
  r[0][1] = 2.f * (x * y - w * z);
  r[0][2] = 2.f * (x * z + w * y);
  r[1][0] = 2.f * (x * y + w * z);
  r[1][1] = 1.f - 2.f * (x * x + z * z);
  r[1][2] = 2.f * (y * z - w * x);
  r[2][0] = 2.f * (x * z - w * y);
  r[2][1] = 2.f * (y * z + w * x);
  r[2][2] = 1.f - 2.f * (x * x + y * y);
}

// The 2D covariance of splat i: 3D covariance, camera transform, EWA Jacobian (Zwicker et al.
// 2002) with x/z and y/z clamped to 1.3x the half field of view, low-pass eps2d. No early exits:
// `valid` says whether the CPU reference would keep the splat (same three tests, same order of
// meaning), and the backward relies on every field being set.
//
// Float instead of the CPU's double, so the 2x2 determinants avoid cancellation: with
// A = J R_cam M (2x3), cov2d_orig = A A^T and, by Cauchy-Binet, det(A A^T) is the sum of the
// squared 2x2 minors of A -- non-negative and accurate for needles, where a*c - b*b would cancel.
// det after the low-pass is det_orig + eps*(a + c) + eps^2, again a sum of non-negative terms.
// filter_var is the splat's 3D filter variance (engine/filter3d.h), 0 for none.
__device__ __forceinline__ SplatGeometry splat_geometry(const CameraParams& cam,
                                                        const float* __restrict__ mean,       // [3]
                                                        const float* __restrict__ log_scale,  // [3]
                                                        const float* __restrict__ quat,       // [4]
                                                        float filter_var) {
  SplatGeometry g;
  const float m[3] = {mean[0], mean[1], mean[2]};
#pragma unroll
  for (int r = 0; r < 3; ++r)
    g.p[r] = cam.R[r * 3] * m[0] + cam.R[r * 3 + 1] * m[1] + cam.R[r * 3 + 2] * m[2] + cam.t[r];

  const float q[4] = {quat[0], quat[1], quat[2], quat[3]};
  g.qnorm = sqrtf(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
  const float iqn = 1.f / g.qnorm;
#pragma unroll
  for (int k = 0; k < 4; ++k) g.qn[k] = q[k] * iqn;
  quat_to_rotmat(g.qn, g.Rq);
  g.filter_var = filter_var;
  g.compensation3d = 1.f;
#pragma unroll
  for (int k = 0; k < 3; ++k) {
    g.s_raw[k] = expf(log_scale[k]);
    g.s[k] = g.s_raw[k];
    if (filter_var > 0.f) {
      g.s[k] = sqrtf(g.s_raw[k] * g.s_raw[k] + filter_var);
      g.compensation3d *= g.s_raw[k] / g.s[k];
    }
  }
#pragma unroll
  for (int r = 0; r < 3; ++r)
#pragma unroll
    for (int c = 0; c < 3; ++c)
      g.RM[r][c] = (cam.R[r * 3] * g.Rq[0][c] + cam.R[r * 3 + 1] * g.Rq[1][c] +
                    cam.R[r * 3 + 2] * g.Rq[2][c]) *
                   g.s[c];

  // Jacobian of the perspective projection at the mean; the clamp keeps splats far outside the
  // image from getting huge screen footprints (3DGS / gsplat convention, 30% past the edges).
  const float x = g.p[0], y = g.p[1], z = g.p[2];
  const float W = float(cam.width), H = float(cam.height);
  const float tan_x = 0.5f * W / cam.fx, tan_y = 0.5f * H / cam.fy;
  const float lim_xp = (W - cam.cx) / cam.fx + 0.3f * tan_x;
  const float lim_xn = cam.cx / cam.fx + 0.3f * tan_x;
  const float lim_yp = (H - cam.cy) / cam.fy + 0.3f * tan_y;
  const float lim_yn = cam.cy / cam.fy + 0.3f * tan_y;
  const float u = x / z, v = y / z;
  g.clamp_x = u > lim_xp || u < -lim_xn;
  g.clamp_y = v > lim_yp || v < -lim_yn;
  const float tx = z * fminf(fmaxf(u, -lim_xn), lim_xp);
  const float ty = z * fminf(fmaxf(v, -lim_yn), lim_yp);
  g.J00 = cam.fx / z;
  g.J02 = -cam.fx * tx / (z * z);
  g.J11 = cam.fy / z;
  g.J12 = -cam.fy * ty / (z * z);

#pragma unroll
  for (int c = 0; c < 3; ++c) {
    g.A[0][c] = g.J00 * g.RM[0][c] + g.J02 * g.RM[2][c];
    g.A[1][c] = g.J11 * g.RM[1][c] + g.J12 * g.RM[2][c];
  }
  const float(&A)[2][3] = g.A;
  g.cov_orig[0] = A[0][0] * A[0][0] + A[0][1] * A[0][1] + A[0][2] * A[0][2];
  g.cov_orig[1] = A[0][0] * A[1][0] + A[0][1] * A[1][1] + A[0][2] * A[1][2];
  g.cov_orig[2] = A[1][0] * A[1][0] + A[1][1] * A[1][1] + A[1][2] * A[1][2];
  const float m01 = A[0][0] * A[1][1] - A[0][1] * A[1][0];
  const float m02 = A[0][0] * A[1][2] - A[0][2] * A[1][0];
  const float m12 = A[0][1] * A[1][2] - A[0][2] * A[1][1];
  g.det_orig = m01 * m01 + m02 * m02 + m12 * m12;
  constexpr float eps = config::eps2d;
  g.cov2d[0] = g.cov_orig[0] + eps;
  g.cov2d[1] = g.cov_orig[1];
  g.cov2d[2] = g.cov_orig[2] + eps;
  g.det = g.det_orig + eps * (g.cov_orig[0] + g.cov_orig[2]) + eps * eps;
  g.compensation = sqrtf(fmaxf(0.f, g.det_orig / g.det));
  // Same tests as the CPU: depth below the near plane, zero quaternion, non-positive det (NaN
  // inputs fail the last two).
  g.valid = !(z < config::near_plane) && g.qnorm > 0.f && g.det > 0.f;
  return g;
}

// Real SH basis up to degree 3 in the 3DGS / gsplat sign convention (cpu/sh.h): b[k] for
// k < (degree+1)^2, zero above. Constant indices only, so b stays in registers.
__device__ __forceinline__ void sh_basis(int degree, float x, float y, float z, float b[16]) {
#pragma unroll
  for (int k = 0; k < 16; ++k) b[k] = 0.f;
  b[0] = 0.28209479177387814f;
  if (degree >= 1) {
    const float c1 = 0.48860251190291987f;
    b[1] = -c1 * y;
    b[2] = c1 * z;
    b[3] = -c1 * x;
  }
  if (degree >= 2) {
    const float c4 = 1.0925484305920792f, c6a = 0.94617469575756008f, c6b = 0.31539156525252005f,
                c8 = 0.54627421529603959f;
    b[4] = c4 * x * y;
    b[5] = -c4 * y * z;
    b[6] = c6a * z * z - c6b;
    b[7] = -c4 * x * z;
    b[8] = c8 * (x * x - y * y);
  }
  if (degree >= 3) {
    const float c9 = 0.59004358992664352f, c10 = 2.8906114426405538f, c11a = 2.2852289973223288f,
                c11b = 0.45704579946446572f, c12a = 1.8658816629505768f, c12b = 1.1195289977703462f,
                c14 = 1.4453057213202769f;
    const float xx = x * x, yy = y * y, zz = z * z;
    b[9] = -c9 * y * (3.f * xx - yy);
    b[10] = c10 * x * y * z;
    b[11] = y * (c11b - c11a * zz);
    b[12] = z * (c12a * zz - c12b);
    b[13] = x * (c11b - c11a * zz);
    b[14] = c14 * z * (xx - yy);
    b[15] = -c9 * x * (xx - 3.f * yy);
  }
}

// sum_k w[k] * d b[k] / d dir for k < (degree+1)^2: the vector-Jacobian product of the basis,
// without materializing the 16 gradient vectors (cpu/sh.h lists them one by one).
__device__ __forceinline__ void sh_basis_vjp(
    int degree, float x, float y, float z, const float w[16], float v_dir[3]) {
  float vx = 0.f, vy = 0.f, vz = 0.f;
  if (degree >= 1) {
    const float c1 = 0.48860251190291987f;
    vx -= c1 * w[3];
    vy -= c1 * w[1];
    vz += c1 * w[2];
  }
  if (degree >= 2) {
    const float c4 = 1.0925484305920792f, c6a = 0.94617469575756008f, c8 = 0.54627421529603959f;
    vx += c4 * y * w[4] - c4 * z * w[7] + 2.f * c8 * x * w[8];
    vy += c4 * x * w[4] - c4 * z * w[5] - 2.f * c8 * y * w[8];
    vz += -c4 * y * w[5] + 2.f * c6a * z * w[6] - c4 * x * w[7];
  }
  if (degree >= 3) {
    const float c9 = 0.59004358992664352f, c10 = 2.8906114426405538f, c11a = 2.2852289973223288f,
                c11b = 0.45704579946446572f, c12a = 1.8658816629505768f, c12b = 1.1195289977703462f,
                c14 = 1.4453057213202769f;
    const float xx = x * x, yy = y * y, zz = z * z;
    vx += -c9 * 6.f * x * y * w[9] + c10 * y * z * w[10] + (c11b - c11a * zz) * w[13] +
          2.f * c14 * x * z * w[14] - c9 * (3.f * xx - 3.f * yy) * w[15];
    vy += -c9 * (3.f * xx - 3.f * yy) * w[9] + c10 * x * z * w[10] + (c11b - c11a * zz) * w[11] -
          2.f * c14 * y * z * w[14] + c9 * 6.f * x * y * w[15];
    vz += c10 * x * y * w[10] - 2.f * c11a * y * z * w[11] + (3.f * c12a * zz - c12b) * w[12] -
          2.f * c11a * x * z * w[13] + c14 * (xx - yy) * w[14];
  }
  v_dir[0] = vx;
  v_dir[1] = vy;
  v_dir[2] = vz;
}

}  // namespace splat::cuda::detail
