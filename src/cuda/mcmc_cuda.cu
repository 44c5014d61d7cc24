// MCMC's position noise (Kheradmand et al. 2024), mirroring cpu/mcmc_cpu.cpp: the same counter
// draws (engine/mcmc.h) and the opacity gate from glibc's float sigmoid (detail::sigmoid_f). The
// refine tick's kernels are the strategy's (strategy/mcmc/mcmc_refine_cuda.cu).
#include <cuda_runtime.h>

#include <cstdint>

#include "core/error.h"
#include "cuda/check.h"
#include "cuda/launch.h"
#include "cuda/mcmc_cuda.h"
#include "cuda/project_math.cuh"
#include "engine/mcmc.h"

namespace splat::config {
inline constexpr int mcmc_block_size = 256;
}  // namespace splat::config

namespace splat::cuda {
namespace {

constexpr int kThreads = config::mcmc_block_size;

// ---- Noise -----------------------------------------------------------------------------------

// Paper eq. 10: the step is shaped by the splat's own covariance Sigma = R S^2 R^T and gated to
// nearly transparent splats, so opaque splats that fit the images stay put.
__global__ void noise_kernel(int n,
                             const float* __restrict__ log_scales,   // [N, 3]
                             const float* __restrict__ quats,        // [N, 4]
                             const float* __restrict__ raw_opacity,  // [N]
                             NoiseScalars noise,
                             const NoiseScalars* __restrict__ device_noise,
                             const int* __restrict__ abort,
                             float* __restrict__ means) {  // [N, 3]
  const int i = int(blockIdx.x * blockDim.x + threadIdx.x);
  if (i >= n || (abort && *abort)) return;
  if (device_noise) noise = *device_noise;
  const float noise_scale = noise.scale;
  const std::uint64_t seed = noise.seed;
  const float4 q = reinterpret_cast<const float4*>(quats)[i];
  const float qn = sqrtf(q.x * q.x + q.y * q.y + q.z * q.z + q.w * q.w);
  if (!(qn > 0)) return;  // degenerate rotation: the CPU leaves the splat alone
  const float qu[4] = {q.x / qn, q.y / qn, q.z / qn, q.w / qn};
  float R[3][3];
  detail::quat_to_rotmat(qu, R);
  float z[3], s2[3];
  for (int k = 0; k < 3; ++k) {
    z[k] = mcmc::normal(seed, mcmc::kNoise, 3ull * std::uint64_t(i) + k);
    s2[k] = expf(2.0f * log_scales[std::size_t(i) * 3 + k]);
  }
  // Sigma z = R (S^2 (R^T z)).
  float t[3];
  for (int k = 0; k < 3; ++k) t[k] = s2[k] * (R[0][k] * z[0] + R[1][k] * z[1] + R[2][k] * z[2]);
  const float step = noise_scale * mcmc::noise_gate(detail::sigmoid_f(raw_opacity[i]));
  for (int r = 0; r < 3; ++r)
    means[std::size_t(i) * 3 + r] += step * (R[r][0] * t[0] + R[r][1] * t[1] + R[r][2] * t[2]);
}

}  // namespace

void mcmc_inject_noise(
    int n, GaussianPtrs in, float* means, const NoiseStep& noise, cudaStream_t stream) {
  if (n <= 0) return;
  if (reinterpret_cast<std::uintptr_t>(in.quats) % 16 != 0)
    throw Error("mcmc_inject_noise: quaternions must be 16-byte aligned");
  noise_kernel<<<blocks_for(std::size_t(n), kThreads), kThreads, 0, stream>>>(
      n, in.log_scales, in.quats, in.raw_opacity, noise.scalars, noise.device_scalars, noise.abort,
      means);
  SPLAT_CUDA_CHECK_LAUNCH("mcmc_inject_noise");
}

}  // namespace splat::cuda
