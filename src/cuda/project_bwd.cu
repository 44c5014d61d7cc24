// Projection backward: gradients of the projected quantities -> raw parameters, one thread per
// splat, no atomics (each splat's gradient entries are overwritten, by its thread or its block).
// The specification is cpu/project_cpu.h (project_bwd); the geometry is recomputed, not stored.
// With ShAdam (one-view steps), Adam updates the SH coefficients where their gradients are formed.
#include <cuda_runtime.h>

#include "cuda/adam_cuda.cuh"
#include "cuda/check.h"
#include "cuda/project_cuda.h"
#include "cuda/project_math.cuh"
#include "engine/pose.h"

namespace splat::cuda {

namespace {

constexpr int kBasisStride = 19;  // floats per splat of the SH Adam basis array: b[16], vc[3]

// What project_bwd does with the SH gradients it forms: writes them (v_sh), or updates the
// coefficients with Adam in place (ShAdam), densely or sparsely (AdamGroup::sparse). Compiled
// apart, so that the dense paths carry none of the sparse one's checks.
enum class ShMode { kGradients, kAdam, kSparseAdam };

// Gradients of one splat the forward kept. `sh_splat` is this thread's row of the block's shared
// stage: it holds the splat's SH coefficients [K, 3] on entry and, unless kAdamSh, their gradients
// b[k] * vc[c] on exit (the basis along the view direction times the color gradient that passes
// the clamp; zero above the active degree). With kAdamSh the coefficients stay and b, vc go to
// `basis_row` instead. Everything else goes straight to global memory. kPose (train.pose_opt):
// also the splat's terms of d loss / d [R | t] of the camera (engine/pose.h's pose_splat_grad)
// into view_terms.
template <bool kDeviceCam, bool kAdamSh, bool kFilter3d, bool kPose>
__device__ __forceinline__ void splat_bwd(const ProjectParams& p,
                                          int i,
                                          const float* __restrict__ means,        // [N, 3]
                                          const float* __restrict__ log_scales,   // [N, 3]
                                          const float* __restrict__ quats,        // [N, 4]
                                          const float* __restrict__ raw_opacity,  // [N]
                                          const float* __restrict__ conics,       // [N, 3]
                                          const float* __restrict__ v_means2d,    // [N, 2]
                                          const float* __restrict__ v_conics,     // [N, 3]
                                          const float* __restrict__ v_colors,     // [N, 3]
                                          const float* __restrict__ v_opacities,  // [N]
                                          float* __restrict__ v_means,            // [N, 3]
                                          float* __restrict__ v_log_scales,       // [N, 3]
                                          float* __restrict__ v_quats,            // [N, 4]
                                          float* __restrict__ v_raw_opacity,      // [N]
                                          float* sh_splat,                        // [K, 3] shared
                                          float* basis_row,                       // [19] shared
                                          float* __restrict__ view_terms) {       // [N, 12]
  const std::size_t i2 = std::size_t(i) * 2, i3 = std::size_t(i) * 3, i4 = std::size_t(i) * 4;
  const CameraParams cam = detail::launch_camera<kDeviceCam>(p);
  // The forward kept this splat, so the geometry is valid (the same float code ran there).
  const detail::SplatGeometry g = detail::splat_geometry(
      cam, means + i3, log_scales + i3, quats + i4, kFilter3d ? p.filter3d[i] : 0.f);
  float v_mean[3];  // d loss / d world-space mean

  // Color = max(0, 0.5 + sum_k b_k(dir) sh_k), dir = (m - campos) / |m - campos|: gradients go
  // into the coefficients and, through the basis and the normalization, into the mean.
  {
    const float d[3] = {means[i3] - cam.campos[0], means[i3 + 1] - cam.campos[1],
                        means[i3 + 2] - cam.campos[2]};
    const float idn = 1.f / sqrtf(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
    const float dir[3] = {d[0] * idn, d[1] * idn, d[2] * idn};
    float b[16];
    detail::sh_basis(p.sh_degree, dir[0], dir[1], dir[2], b);
    const int active = sh_coeffs(p.sh_degree);
    float col[3] = {0.5f, 0.5f, 0.5f};
#pragma unroll
    for (int k = 0; k < 16; ++k) {
      if (k < active) {
#pragma unroll
        for (int c = 0; c < 3; ++c) col[c] += b[k] * sh_splat[k * 3 + c];
      }
    }
    float vc[3];  // max(0, .) passes no gradient below zero
#pragma unroll
    for (int c = 0; c < 3; ++c) vc[c] = col[c] > 0.f ? v_colors[i3 + c] : 0.f;
    float w[16];  // d loss / d b_k
#pragma unroll
    for (int k = 0; k < 16; ++k) {
      w[k] = 0.f;
      if (k < active) {
#pragma unroll
        for (int c = 0; c < 3; ++c) {  // read the coefficient before its gradient replaces it
          w[k] += sh_splat[k * 3 + c] * vc[c];
          if constexpr (!kAdamSh) sh_splat[k * 3 + c] = b[k] * vc[c];
        }
      }
      if constexpr (kAdamSh) basis_row[k] = b[k];  // zero above the active degree
    }
    if constexpr (kAdamSh) {
#pragma unroll
      for (int c = 0; c < 3; ++c) basis_row[16 + c] = vc[c];
    } else {
      for (int k = active * 3; k < p.K * 3; ++k) sh_splat[k] = 0.f;  // inactive degrees
    }
    float v_dir[3];
    detail::sh_basis_vjp(p.sh_degree, dir[0], dir[1], dir[2], w, v_dir);
    // Through dir = d / |d|: (I - dir dir^T) / |d|.
    const float dd = dir[0] * v_dir[0] + dir[1] * v_dir[1] + dir[2] * v_dir[2];
#pragma unroll
    for (int k = 0; k < 3; ++k) v_mean[k] = (v_dir[k] - dir[k] * dd) * idn;
  }

  // Opacity = sigmoid(raw), times the Mip-Splatting factors: the 3D filter's compensation3d
  // (kFilter3d) and the 2D mip filter's sqrt(det_orig / det) (antialiased).
  const float sig = 1.f / (1.f + expf(-raw_opacity[i]));
  const float v_op3 = kFilter3d ? v_opacities[i] * g.compensation3d : v_opacities[i];
  float v_det = 0.f, v_det_orig = 0.f;
  float v_log_comp3d;  // d loss / d log(compensation3d), for the scales below
  if (p.antialiased) {
    v_raw_opacity[i] = v_op3 * g.compensation * sig * (1.f - sig);
    const float v_comp = v_op3 * sig;
    v_log_comp3d = v_comp * g.compensation;
    if (g.compensation > 0.f) {
      v_det_orig = v_comp * 0.5f / (g.compensation * g.det);
      v_det = -v_comp * 0.5f * g.compensation / g.det;
    }
  } else {
    v_raw_opacity[i] = v_op3 * sig * (1.f - sig);
    v_log_comp3d = v_op3 * sig;
  }

  // Conic = inverse(cov2d): dL/dcov = -Ci G Ci, G the symmetric gradient of the conic (the
  // off-diagonal b appears twice in the matrix, so G01 = v_b / 2). Plus the determinant terms:
  // d det(A) / dA = cofactor(A); both determinants see the same dA.
  const float Ci[2][2] = {{conics[i3], conics[i3 + 1]}, {conics[i3 + 1], conics[i3 + 2]}};
  const float G[2][2] = {{v_conics[i3], 0.5f * v_conics[i3 + 1]},
                         {0.5f * v_conics[i3 + 1], v_conics[i3 + 2]}};
  float CG[2][2];
#pragma unroll
  for (int r = 0; r < 2; ++r)
#pragma unroll
    for (int c = 0; c < 2; ++c) CG[r][c] = Ci[r][0] * G[0][c] + Ci[r][1] * G[1][c];
  const float cof_blur[2][2] = {{g.cov2d[2], -g.cov2d[1]}, {-g.cov2d[1], g.cov2d[0]}};
  const float cof_orig[2][2] = {{g.cov_orig[2], -g.cov_orig[1]}, {-g.cov_orig[1], g.cov_orig[0]}};
  float V[2][2];  // symmetric gradient w.r.t. the 2D covariance
#pragma unroll
  for (int r = 0; r < 2; ++r)
#pragma unroll
    for (int c = 0; c < 2; ++c)
      V[r][c] = -(CG[r][0] * Ci[0][c] + CG[r][1] * Ci[1][c]) + v_det * cof_blur[r][c] +
                v_det_orig * cof_orig[r][c];

  // cov2d = J Sc J^T with Sc = RM RM^T and A = J RM: dJ = 2 V J Sc = 2 (V A) RM^T and
  // dRM = 2 J^T V J RM = 2 J^T (V A) -- the CPU's dSc = J^T V J and dM = 2 R^T dSc R M, folded.
  float VA[2][3];
#pragma unroll
  for (int r = 0; r < 2; ++r)
#pragma unroll
    for (int c = 0; c < 3; ++c) VA[r][c] = V[r][0] * g.A[0][c] + V[r][1] * g.A[1][c];
  const float v_J00 = 2.f * (VA[0][0] * g.RM[0][0] + VA[0][1] * g.RM[0][1] + VA[0][2] * g.RM[0][2]);
  const float v_J02 = 2.f * (VA[0][0] * g.RM[2][0] + VA[0][1] * g.RM[2][1] + VA[0][2] * g.RM[2][2]);
  const float v_J11 = 2.f * (VA[1][0] * g.RM[1][0] + VA[1][1] * g.RM[1][1] + VA[1][2] * g.RM[1][2]);
  const float v_J12 = 2.f * (VA[1][0] * g.RM[2][0] + VA[1][1] * g.RM[2][1] + VA[1][2] * g.RM[2][2]);
  float v_RM[3][3];
#pragma unroll
  for (int c = 0; c < 3; ++c) {
    v_RM[0][c] = 2.f * g.J00 * VA[0][c];
    v_RM[1][c] = 2.f * g.J11 * VA[1][c];
    v_RM[2][c] = 2.f * (g.J02 * VA[0][c] + g.J12 * VA[1][c]);
  }

  // Jacobian entries -> camera-space mean. With the tangent clamped, t = z * limit, so J02 =
  // -fx L / z depends on z alone.
  const float x = g.p[0], y = g.p[1], z = g.p[2];
  const float iz = 1.f / z, iz2 = iz * iz, iz3 = iz2 * iz;
  float v_p[3] = {0.f, 0.f, 0.f};
  v_p[2] += -cam.fx * iz2 * v_J00 - cam.fy * iz2 * v_J11;
  if (g.clamp_x) {
    v_p[2] += -g.J02 * iz * v_J02;
  } else {
    v_p[0] += -cam.fx * iz2 * v_J02;
    v_p[2] += 2.f * cam.fx * x * iz3 * v_J02;
  }
  if (g.clamp_y) {
    v_p[2] += -g.J12 * iz * v_J12;
  } else {
    v_p[1] += -cam.fy * iz2 * v_J12;
    v_p[2] += 2.f * cam.fy * y * iz3 * v_J12;
  }
  // Projected mean (fx x/z + cx, fy y/z + cy).
  const float vmx = v_means2d[i2], vmy = v_means2d[i2 + 1];
  v_p[0] += cam.fx * iz * vmx;
  v_p[1] += cam.fy * iz * vmy;
  v_p[2] += -(cam.fx * x * vmx + cam.fy * y * vmy) * iz2;

  if constexpr (kPose) {
    // v_mean holds the view direction's part so far; RM = R M gives d / d R = v_RM M^T.
    float v_R_cov[9], terms[kPoseViewGrads] = {};
#pragma unroll
    for (int r = 0; r < 3; ++r)
#pragma unroll
      for (int k = 0; k < 3; ++k)
        v_R_cov[r * 3 + k] = v_RM[r][0] * g.Rq[k][0] * g.s[0] + v_RM[r][1] * g.Rq[k][1] * g.s[1] +
                             v_RM[r][2] * g.Rq[k][2] * g.s[2];
    pose_splat_grad(cam.R, cam.t, means + i3, v_p, v_R_cov, v_mean, terms);
#pragma unroll
    for (int k = 0; k < int(kPoseViewGrads); ++k)
      view_terms[std::size_t(i) * kPoseViewGrads + k] = terms[k];
  }

  // Camera transform p = R m + t and RM = R M: both pull back through R^T.
#pragma unroll
  for (int k = 0; k < 3; ++k) {
    v_mean[k] += cam.R[k] * v_p[0] + cam.R[3 + k] * v_p[1] + cam.R[6 + k] * v_p[2];
    v_means[i3 + k] = v_mean[k];
  }
  float v_M[3][3];
#pragma unroll
  for (int r = 0; r < 3; ++r)
#pragma unroll
    for (int c = 0; c < 3; ++c)
      v_M[r][c] = cam.R[r] * v_RM[0][c] + cam.R[3 + r] * v_RM[1][c] + cam.R[6 + r] * v_RM[2][c];

  // M = Rq diag(s), s = exp(log_scale).
  float Wq[3][3];  // d loss / d Rq
#pragma unroll
  for (int c = 0; c < 3; ++c) {
    float v_s = 0.f;
#pragma unroll
    for (int r = 0; r < 3; ++r) {
      v_s += g.Rq[r][c] * v_M[r][c];
      Wq[r][c] = v_M[r][c] * g.s[c];
    }
    if constexpr (kFilter3d) {
      // s = sqrt(s_raw^2 + var): ds / dlog s_raw = s_raw^2 / s, and
      // log compensation3d = sum(log s_raw - log s) has d / dlog s_raw = var / s^2.
      const float is = 1.f / g.s[c];
      v_log_scales[i3 + c] =
          v_s * (g.s_raw[c] * g.s_raw[c] * is) + v_log_comp3d * g.filter_var * is * is;
    } else {
      v_log_scales[i3 + c] = v_s * g.s[c];
    }
  }

  // Rotation matrix of the unit quaternion -> its components, then through q / |q|.
  const float w = g.qn[0], qx = g.qn[1], qy = g.qn[2], qz = g.qn[3];
  const float v_qn[4] = {
      2.f * (-qz * Wq[0][1] + qy * Wq[0][2] + qz * Wq[1][0] - qx * Wq[1][2] - qy * Wq[2][0] +
             qx * Wq[2][1]),
      2.f * (qy * Wq[0][1] + qz * Wq[0][2] + qy * Wq[1][0] - 2.f * qx * Wq[1][1] - w * Wq[1][2] +
             qz * Wq[2][0] + w * Wq[2][1] - 2.f * qx * Wq[2][2]),
      2.f * (-2.f * qy * Wq[0][0] + qx * Wq[0][1] + w * Wq[0][2] + qx * Wq[1][0] + qz * Wq[1][2] -
             w * Wq[2][0] + qz * Wq[2][1] - 2.f * qy * Wq[2][2]),
      2.f * (-2.f * qz * Wq[0][0] - w * Wq[0][1] + qx * Wq[0][2] + w * Wq[1][0] -
             2.f * qz * Wq[1][1] + qy * Wq[1][2] + qx * Wq[2][0] + qy * Wq[2][1])};
  const float qdot = g.qn[0] * v_qn[0] + g.qn[1] * v_qn[1] + g.qn[2] * v_qn[2] + g.qn[3] * v_qn[3];
  const float iqn = 1.f / g.qnorm;
#pragma unroll
  for (int k = 0; k < 4; ++k) v_quats[i4 + k] = (v_qn[k] - g.qn[k] * qdot) * iqn;
}

// One thread per splat. The SH coefficients and their gradients ([N, K, 3], up to 48 floats a
// splat) go through shared memory, read and written by the block as one contiguous, coalesced
// slice. Accessed straight from each thread, every warp instruction touches 32 separate sectors
// (three times slower on the H200; tools/gpu-machine/perf-log.md).
//
// kAdamSh: instead of writing the SH gradients, the block runs Adam over its slice (adam.cuh's
// element update, in the element order of adam_kernel, so the same bits), its coefficients from
// the stage, b and vc of each splat from a second shared array. That saves the gradients' write,
// and Adam's reads of them and of the coefficients: 12 of the 28 bytes per coefficient and step.
// Six blocks per SM (80 registers, a few bytes spilled) rather than five at 96 registers, the
// faster of the two (tools/gpu-machine/perf-log.md). kFilter3d: p.filter3d holds the 3D filter
// (model.antialiased); the default path compiles without it, registers as before.
template <bool kDeviceCam, ShMode kSh, bool kVec, bool kFilter3d, bool kPose>
__global__ void __launch_bounds__(config::project_bwd_block_size, 6)
    project_bwd_kernel(const ProjectParams p,
                       const float* __restrict__ means,        // [N, 3]
                       const float* __restrict__ log_scales,   // [N, 3]
                       const float* __restrict__ quats,        // [N, 4]
                       const float* __restrict__ raw_opacity,  // [N]
                       const float* __restrict__ sh,           // [N, K, 3] (kAdamSh: null)
                       const float* __restrict__ conics,       // [N, 3] forward output
                       const int* __restrict__ radii,          // [N, 2] forward output
                       const float* __restrict__ v_means2d,    // [N, 2]
                       const float* __restrict__ v_conics,     // [N, 3]
                       const float* __restrict__ v_colors,     // [N, 3]
                       const float* __restrict__ v_opacities,  // [N]
                       float* __restrict__ v_means,            // [N, 3]
                       float* __restrict__ v_log_scales,       // [N, 3]
                       float* __restrict__ v_quats,            // [N, 4]
                       float* __restrict__ v_raw_opacity,      // [N]
                       float* __restrict__ v_sh,               // [N, K, 3] (kAdamSh: unused)
                       const __grid_constant__ ShAdam adam,    // kAdamSh only
                       float* __restrict__ view_terms) {       // [N, 12] kPose only
  // [blockDim.x, stride]: an odd row stride keeps the per-thread rows on distinct banks. With
  // kAdamSh, [blockDim.x, kBasisStride] after it: b[16] and vc[3] of each splat, then the splats'
  // live flags.
  constexpr bool kAdamSh = kSh != ShMode::kGradients, kSparse = kSh == ShMode::kSparseAdam;
  extern __shared__ float stage[];
  const int K3 = p.K * 3, stride = K3 | 1;
  const int first = blockIdx.x * blockDim.x;
  const int count = min(int(blockDim.x), p.n - first);
  const int i = first + threadIdx.x;
  float* sh_splat = stage + threadIdx.x * stride;
  float* basis = stage + blockDim.x * stride;
  int* live = reinterpret_cast<int*>(basis + blockDim.x * kBasisStride);
  if (kAdamSh && adam.abort && *adam.abort) return;  // an abandoned step changes nothing
  const auto culled = [&](int s) {
    return radii[std::size_t(s) * 2] <= 0 && radii[std::size_t(s) * 2 + 1] <= 0;
  };

  // Sparse Adam: live[t] says whether splat first + t may have a nonzero SH gradient. A splat
  // the forward culled, or one whose color got no gradient, has none, and its coefficients enter
  // nothing else (the direction's gradient weighs them by that of the color): its slice is
  // neither read nor written, the stage holds zeros for it.
  if constexpr (kSparse) {
    if (i < p.n) {
      const std::size_t i3 = std::size_t(i) * 3;
      live[threadIdx.x] =
          !culled(i) && (v_colors[i3] != 0.f || v_colors[i3 + 1] != 0.f || v_colors[i3 + 2] != 0.f);
    }
    __syncthreads();
  }

  // kAdamSh reads the coefficients it updates through the group's pointer, never through the
  // read-only `sh`.
  const float* sh_block = (kAdamSh ? adam.group.param : sh) + std::size_t(first) * K3;
  constexpr int kW = kVec ? 4 : 1;  // floats per unit of the slice loops
  detail::for_each_slice_unit<kW, kVec ? 4 : 8>(
      K3, count,
      [&](int e, int j, int) {
        return kSparse && !live[j] ? detail::Floats<kW>{} : detail::load_floats<kW>(sh_block + e);
      },
      [&](int, int j, int off, const detail::Floats<kW>& f) {
#pragma unroll
        for (int c = 0; c < kW; ++c) stage[j * stride + off + c] = f.v[c];
      });
  __syncthreads();

  if (i < p.n) {
    float* basis_row = basis + threadIdx.x * kBasisStride;
    if (culled(i)) {
      // Culled: the forward passed nothing on.
      const std::size_t i3 = std::size_t(i) * 3, i4 = std::size_t(i) * 4;
#pragma unroll
      for (int k = 0; k < 3; ++k) v_means[i3 + k] = v_log_scales[i3 + k] = 0.f;
#pragma unroll
      for (int k = 0; k < 4; ++k) v_quats[i4 + k] = 0.f;
      v_raw_opacity[i] = 0.f;
      if constexpr (kPose) {
        for (int k = 0; k < int(kPoseViewGrads); ++k)
          view_terms[std::size_t(i) * kPoseViewGrads + k] = 0.f;
      }
      if constexpr (kAdamSh) {
        for (int k = 0; k < kBasisStride; ++k) basis_row[k] = 0.f;
      } else {
        for (int k = 0; k < K3; ++k) sh_splat[k] = 0.f;
      }
    } else {
      splat_bwd<kDeviceCam, kAdamSh, kFilter3d, kPose>(
          p, i, means, log_scales, quats, raw_opacity, conics, v_means2d, v_conics, v_colors,
          v_opacities, v_means, v_log_scales, v_quats, v_raw_opacity, sh_splat, basis_row,
          view_terms);
    }
    if constexpr (kSparse) {  // now: whether a color gradient passed the clamp (b[0] is not 0)
      const float* vc = basis_row + 16;
      live[threadIdx.x] = vc[0] != 0.f || vc[1] != 0.f || vc[2] != 0.f;
    }
  }
  __syncthreads();

  if constexpr (kAdamSh) {
    // adam_kernel's update of the SH group, element by element: coefficient k = off / 3 takes lr
    // for the DC term (k = 0) and lr_rest above (the host checks that the group's K is p.K).
    const AdamGroup& G = adam.group;
    const AdamScalars& S = adam.device_scalars ? *adam.device_scalars : adam.scalars;
    const float lr = S.lr[adam.index], lr_rest = S.lr_rest[adam.index];
    const int active = sh_coeffs(p.sh_degree);
    const std::size_t base = std::size_t(first) * K3;
    struct Moments {
      detail::Floats<kW> m, v;
    };
    detail::for_each_slice_unit<kW, kVec ? 2 : 4>(
        K3, count,
        [&](int e, int j, int) {
          if (kSparse && !live[j]) return Moments{};
          return Moments{detail::load_floats<kW>(G.m + base + e),
                         detail::load_floats<kW>(G.v + base + e)};
        },
        [&](int e, int j, int off, Moments mv) {
          if (kSparse && !live[j]) return;  // every gradient of the splat is zero: nothing changes
          const float* row = basis + j * kBasisStride;
          detail::Floats<kW> param;
#pragma unroll
          for (int u = 0; u < kW; ++u) {
            const int k = (off + u) / 3, c = off + u - 3 * k;
            const float g = k < active ? row[k] * row[16 + c] : 0.f;
            param.v[u] = stage[j * stride + off + u];
            detail::adam_element(param.v[u], g, mv.m.v[u], mv.v.v[u], k == 0 ? lr : lr_rest, S,
                                 kSparse);
          }
          detail::store_floats<kW>(G.param + base + e, param);
          detail::store_floats<kW>(G.m + base + e, mv.m);
          detail::store_floats<kW>(G.v + base + e, mv.v);
        });
  } else {
    float* v_sh_block = v_sh + std::size_t(first) * K3;
    detail::for_each_slice_unit<kW, 1>(
        K3, count, [&](int, int, int) { return 0; },
        [&](int e, int j, int off, int) {
          detail::Floats<kW> f;
#pragma unroll
          for (int c = 0; c < kW; ++c) f.v[c] = stage[j * stride + off + c];
          detail::store_floats<kW>(v_sh_block + e, f);
        });
  }
}

using Kernel = decltype(&project_bwd_kernel<false, ShMode::kGradients, false, false, false>);

template <bool kDeviceCam, ShMode kSh, bool kFilter3d, bool kPose>
Kernel select_vec(bool vec) {
  return vec ? project_bwd_kernel<kDeviceCam, kSh, true, kFilter3d, kPose>
             : project_bwd_kernel<kDeviceCam, kSh, false, kFilter3d, kPose>;
}

template <bool kDeviceCam, bool kFilter3d, bool kPose>
Kernel select_sh(ShMode sh, bool vec) {
  switch (sh) {
    case ShMode::kGradients:
      return select_vec<kDeviceCam, ShMode::kGradients, kFilter3d, kPose>(vec);
    case ShMode::kAdam:
      return select_vec<kDeviceCam, ShMode::kAdam, kFilter3d, kPose>(vec);
    case ShMode::kSparseAdam:
      return select_vec<kDeviceCam, ShMode::kSparseAdam, kFilter3d, kPose>(vec);
  }
  return nullptr;
}

template <bool kPose>
Kernel select_cam(bool device_cam, ShMode sh, bool vec, bool filter3d) {
  if (device_cam)
    return filter3d ? select_sh<true, true, kPose>(sh, vec)
                    : select_sh<true, false, kPose>(sh, vec);
  return filter3d ? select_sh<false, true, kPose>(sh, vec)
                  : select_sh<false, false, kPose>(sh, vec);
}

Kernel select_bwd_kernel(bool device_cam, ShMode sh, bool vec, bool filter3d, bool pose) {
  return pose ? select_cam<true>(device_cam, sh, vec, filter3d)
              : select_cam<false>(device_cam, sh, vec, filter3d);
}

}  // namespace

void project_bwd(GaussianPtrs in,
                 const ProjectState& fwd,
                 const ProjectedGradPtrs& v,
                 GaussianGradPtrs grads,
                 cudaStream_t stream,
                 const ShAdam* sh_adam,
                 float* view_terms) {
  const ProjectParams& p = fwd.params;
  detail::check_project_params(p, "project_bwd");
  if (sh_adam) {
    const AdamGroup& G = sh_adam->group;
    if (G.param != in.sh || !G.m || !G.v || G.n != std::size_t(p.n) * p.K * 3 || G.sh_K != p.K ||
        sh_adam->index < 0 || sh_adam->index >= kMaxAdamGroups)
      throw Error("project_bwd: the SH Adam group (" + std::to_string(G.n) + " elements, K " +
                  std::to_string(G.sh_K) + ", index " + std::to_string(sh_adam->index) +
                  ") is not the projected splats' coefficients [" + std::to_string(p.n) + ", " +
                  std::to_string(p.K) + ", 3]");
  }
  if (p.n <= 0) return;
  const int block = config::project_bwd_block_size;
  const int blocks = (p.n + block - 1) / block;
  const std::size_t stage_bytes =
      std::size_t(block) * (((p.K * 3) | 1) + (sh_adam ? kBasisStride : 0)) * sizeof(float) +
      (sh_adam ? std::size_t(block) * sizeof(int) : 0);
  const bool vec =
      sh_adam ? detail::slices_vectorize(p.K * 3, {in.sh, sh_adam->group.m, sh_adam->group.v})
              : detail::slices_vectorize(p.K * 3, {in.sh, grads.sh});
  const ShMode sh = !sh_adam                ? ShMode::kGradients
                    : sh_adam->group.sparse ? ShMode::kSparseAdam
                                            : ShMode::kAdam;
  const Kernel kernel =
      select_bwd_kernel(p.device_cam, sh, vec, p.filter3d != nullptr, view_terms != nullptr);
  kernel<<<blocks, block, stage_bytes, stream>>>(
      p, in.means, in.log_scales, in.quats, in.raw_opacity, sh_adam ? nullptr : in.sh,
      fwd.out.conics, fwd.out.radii, v.means2d, v.conics, v.colors, v.opacities, grads.means,
      grads.log_scales, grads.quats, grads.raw_opacity, grads.sh, sh_adam ? *sh_adam : ShAdam{},
      view_terms);
  SPLAT_CUDA_CHECK_LAUNCH("project_bwd_kernel");
}

}  // namespace splat::cuda
