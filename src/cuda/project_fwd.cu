// Projection forward: 3D Gaussians -> 2D conics, depths, screen radii and view-dependent colors,
// one thread per splat. EWA splatting (Zwicker et al. 2002) as in 3DGS (Kerbl et al. 2023); the
// specification is cpu/project_cpu.h (project_fwd), conventions in ../shared/golden/README.md.
#include <cuda_runtime.h>

#include "cuda/check.h"
#include "cuda/project_cuda.h"
#include "cuda/project_math.cuh"

namespace splat::cuda {

namespace {

// One thread per splat. The block's SH coefficients ([count, K, 3], up to 48 floats a splat) come
// in as one contiguous, coalesced slice through shared memory, as in project_bwd: read straight
// from each thread, every warp instruction touched 32 separate sectors.
// kFilter3d: p.filter3d holds the 3D filter (model.antialiased); the default path compiles
// without it.
template <bool kDeviceCam, bool kVec, bool kFilter3d>
__global__ void __launch_bounds__(config::project_fwd_block_size)
    project_fwd_kernel(const ProjectParams p,
                       const float* __restrict__ means,        // [N, 3]
                       const float* __restrict__ log_scales,   // [N, 3]
                       const float* __restrict__ quats,        // [N, 4]
                       const float* __restrict__ raw_opacity,  // [N]
                       const float* __restrict__ sh,           // [N, K, 3]
                       float* __restrict__ means2d,            // [N, 2]
                       float* __restrict__ depths,             // [N]
                       float* __restrict__ conics,             // [N, 3]
                       int* __restrict__ radii,                // [N, 2]
                       float* __restrict__ colors,             // [N, 3]
                       float* __restrict__ opacities) {        // [N]
  extern __shared__ float
      stage[];  // [blockDim.x, K*3 | 1]: odd rows keep threads on distinct banks
  const int K3 = p.K * 3, stride = K3 | 1;
  const int first = blockIdx.x * blockDim.x;
  const float* sh_block = sh + std::size_t(first) * K3;
  constexpr int kW = kVec ? 4 : 1;
  detail::for_each_slice_unit<kW, kVec ? 4 : 8>(
      K3, min(int(blockDim.x), p.n - first),
      [&](int e, int, int) { return detail::load_floats<kW>(sh_block + e); },
      [&](int, int j, int off, const detail::Floats<kW>& f) {
#pragma unroll
        for (int c = 0; c < kW; ++c) stage[j * stride + off + c] = f.v[c];
      });
  __syncthreads();

  const int i = first + threadIdx.x;
  if (i >= p.n) return;
  const std::size_t i2 = std::size_t(i) * 2, i3 = std::size_t(i) * 3;
  const CameraParams cam = detail::launch_camera<kDeviceCam>(p);

  const detail::SplatGeometry g =
      detail::splat_geometry(cam, means + i3, log_scales + i3, quats + std::size_t(i) * 4,
                             kFilter3d ? p.filter3d[i] : 0.f);

  // Culled unless every test below passes; a culled splat still gets every output written.
  bool keep = g.valid;
  float opacity = 1.f / (1.f + expf(-raw_opacity[i]));
  // Mip-Splatting (Yu et al. 2024): the 3D filter's and the 2D mip filter's opacity factors.
  if constexpr (kFilter3d) opacity *= g.compensation3d;
  if (p.antialiased) opacity *= g.compensation;
  keep = keep && !(opacity < config::alpha_min);
  // Screen extent per axis out to where alpha falls to 1/255 (at most 3.33 sigma), so tile
  // binning never drops a contribution the rasterizer would keep.
  const float extent =
      fminf(config::max_extent_sigma, sqrtf(2.f * logf(opacity / config::alpha_min)));
  const float z = g.p[2];
  const float mx = cam.fx * g.p[0] / z + cam.cx, my = cam.fy * g.p[1] / z + cam.cy;
  int rx = 0, ry = 0;
  if (keep) {
    rx = int(ceilf(extent * sqrtf(g.cov2d[0])));
    ry = int(ceilf(extent * sqrtf(g.cov2d[2])));
    keep = !(rx <= 0 && ry <= 0) && !(mx + rx <= 0.f || mx - rx >= float(cam.width) ||
                                      my + ry <= 0.f || my - ry >= float(cam.height));
  }

  if (!keep) {
    means2d[i2] = means2d[i2 + 1] = 0.f;
    depths[i] = 0.f;
    conics[i3] = conics[i3 + 1] = conics[i3 + 2] = 0.f;
    radii[i2] = radii[i2 + 1] = 0;
    colors[i3] = colors[i3 + 1] = colors[i3 + 2] = 0.f;
    opacities[i] = 0.f;
    return;
  }

  means2d[i2] = mx;
  means2d[i2 + 1] = my;
  depths[i] = z;
  const float idet = 1.f / g.det;
  conics[i3] = g.cov2d[2] * idet;
  conics[i3 + 1] = -g.cov2d[1] * idet;
  conics[i3 + 2] = g.cov2d[0] * idet;
  radii[i2] = rx;
  radii[i2 + 1] = ry;
  opacities[i] = opacity;

  // View-dependent color: SH along the unit direction from the camera center to the mean.
  const float d[3] = {means[i3] - cam.campos[0], means[i3 + 1] - cam.campos[1],
                      means[i3 + 2] - cam.campos[2]};
  const float idn = 1.f / sqrtf(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
  float b[16];
  detail::sh_basis(p.sh_degree, d[0] * idn, d[1] * idn, d[2] * idn, b);
  const int active = sh_coeffs(p.sh_degree);
  const float* coef = stage + threadIdx.x * stride;
  float col[3] = {0.5f, 0.5f, 0.5f};
#pragma unroll
  for (int k = 0; k < 16; ++k) {
    if (k < active) {
#pragma unroll
      for (int c = 0; c < 3; ++c) col[c] += b[k] * coef[k * 3 + c];
    }
  }
#pragma unroll
  for (int c = 0; c < 3; ++c) colors[i3 + c] = fmaxf(0.f, col[c]);
}

}  // namespace

void project_fwd(const ProjectParams& p, GaussianPtrs in, ProjectedPtrs out, cudaStream_t stream) {
  detail::check_project_params(p, "project_fwd");
  if (p.n <= 0) return;
  const int blocks = (p.n + config::project_fwd_block_size - 1) / config::project_fwd_block_size;
  const bool vec = detail::slices_vectorize(p.K * 3, {in.sh});
  using Kernel = decltype(&project_fwd_kernel<false, false, false>);
  // [device camera][float4 slices][3D filter]
  constexpr Kernel kernels[2][2][2] = {
      {{project_fwd_kernel<false, false, false>, project_fwd_kernel<false, false, true>},
       {project_fwd_kernel<false, true, false>, project_fwd_kernel<false, true, true>}},
      {{project_fwd_kernel<true, false, false>, project_fwd_kernel<true, false, true>},
       {project_fwd_kernel<true, true, false>, project_fwd_kernel<true, true, true>}}};
  const Kernel kernel = kernels[p.device_cam != nullptr][vec][p.filter3d != nullptr];
  const std::size_t stage_bytes =
      std::size_t(config::project_fwd_block_size) * ((p.K * 3) | 1) * sizeof(float);
  kernel<<<blocks, config::project_fwd_block_size, stage_bytes, stream>>>(
      p, in.means, in.log_scales, in.quats, in.raw_opacity, in.sh, out.means2d, out.depths,
      out.conics, out.radii, out.colors, out.opacities);
  SPLAT_CUDA_CHECK_LAUNCH("project_fwd_kernel");
}

}  // namespace splat::cuda
