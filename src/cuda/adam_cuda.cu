// Adam (Kingma & Ba 2015) over every parameter group in one launch; mirrors cpu::adam_update
// (torch.optim.Adam: bias-corrected moments, eps added after the square root). The pass is
// memory-bound (param, grad, m, v read, param, m, v written: 24 bytes per element), so the groups
// share one launch and elements move as float4 where all four arrays allow it. The gradient is
// only read: every step's backward overwrites it (project_bwd writes every entry).
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "core/error.h"
#include "cuda/adam_cuda.cuh"
#include "cuda/adam_cuda.h"
#include "cuda/check.h"

namespace splat::config {
inline constexpr int adam_block_size = 256;
}  // namespace splat::config

namespace splat::cuda {
namespace {

constexpr int kThreads = config::adam_block_size;

// Every group travels in the kernel parameters (constant bank). Blocks
// [block_begin[g], block_begin[g + 1]) serve group g; one unit per thread is one element, or four
// when the group is vectorized.
struct AdamLaunch {
  AdamGroup groups[kMaxAdamGroups];
  unsigned block_begin[kMaxAdamGroups + 1];
  bool vec4[kMaxAdamGroups];
  int count;
  AdamScalars scalars;
  const AdamScalars* device_scalars;  // overrides `scalars` when set
  const int* abort;                   // nonzero: the step was abandoned, change nothing
};

// The gradient with the group's regularizer added, from the parameter before this update.
__device__ __forceinline__ float regularized(const AdamGroup& G, float g, float p) {
  if (G.reg == AdamReg::SigmoidSlope) {
    const double s = 1.0 / (1.0 + exp(-double(p)));
    return g + float(G.reg_coef * s * (1 - s));
  }
  if (G.reg == AdamReg::Exp) return g + float(G.reg_coef * exp(double(p)));
  return g;
}

// Learning rates of consecutive elements from index i: the SH array is [N, K, 3] and coefficient
// k = (i / 3) % K = 0 is the DC term (lr), the higher bands get lr_rest. The division happens once
// per thread; the walk to the next elements is by increments.
struct LrWalk {
  float lr, lr_rest;
  int K, k, c;  // K = 0: one rate for the whole group
  __device__ LrWalk(const AdamGroup& G, float lr_, float lr_rest_, std::size_t i)
      : lr(lr_), lr_rest(lr_rest_), K(G.sh_K), k(0), c(0) {
    if (K > 0) {
      const std::size_t q = i / 3;
      c = int(i - q * 3);
      k = int(q % std::size_t(K));
    }
  }
  __device__ float current() const { return k == 0 ? lr : lr_rest; }
  __device__ void next() {
    if (K > 0 && ++c == 3) {
      c = 0;
      if (++k == K) k = 0;
    }
  }
};

__global__ void __launch_bounds__(kThreads) adam_kernel(const __grid_constant__ AdamLaunch L) {
  // At most kMaxAdamGroups comparisons, uniform across the block.
  int gi = 0;
  while (gi + 1 < L.count && blockIdx.x >= L.block_begin[gi + 1]) ++gi;
  const AdamGroup& G = L.groups[gi];
  const std::size_t unit = std::size_t(blockIdx.x - L.block_begin[gi]) * kThreads + threadIdx.x;
  const std::size_t first = L.vec4[gi] ? unit * 4 : unit,
                    last = min(G.n, L.vec4[gi] ? first + 4 : first + 1);
  if (first >= G.n) return;
  if (L.abort && *L.abort) return;  // an abandoned step: the next backward overwrites its gradients
  const AdamScalars& S = L.device_scalars ? *L.device_scalars : L.scalars;
  LrWalk lr(G, S.lr[gi], S.lr_rest[gi], first);
  if (L.vec4[gi] && last == first + 4) {
    float4 p = reinterpret_cast<const float4*>(G.param)[unit];
    const float4 g = reinterpret_cast<const float4*>(G.grad)[unit];
    float4 m = reinterpret_cast<const float4*>(G.m)[unit];
    float4 v = reinterpret_cast<const float4*>(G.v)[unit];
    detail::adam_element(p.x, regularized(G, g.x, p.x), m.x, v.x, lr.current(), S, G.sparse);
    lr.next();
    detail::adam_element(p.y, regularized(G, g.y, p.y), m.y, v.y, lr.current(), S, G.sparse);
    lr.next();
    detail::adam_element(p.z, regularized(G, g.z, p.z), m.z, v.z, lr.current(), S, G.sparse);
    lr.next();
    detail::adam_element(p.w, regularized(G, g.w, p.w), m.w, v.w, lr.current(), S, G.sparse);
    reinterpret_cast<float4*>(G.param)[unit] = p;
    reinterpret_cast<float4*>(G.m)[unit] = m;
    reinterpret_cast<float4*>(G.v)[unit] = v;
  } else {
    for (std::size_t i = first; i < last; ++i, lr.next())
      detail::adam_element(G.param[i], regularized(G, G.grad[i], G.param[i]), G.m[i], G.v[i],
                           lr.current(), S, G.sparse);
  }
}

bool aligned16(const void* p) {
  return reinterpret_cast<std::uintptr_t>(p) % 16 == 0;
}

}  // namespace

AdamScalars adam_scalars(const AdamGroup* groups, int count, long long step, float grad_scale) {
  if (step < 1) throw Error("adam_step: step " + std::to_string(step) + " (the count is 1-based)");
  AdamScalars S;
  for (int g = 0; g < count && g < kMaxAdamGroups; ++g) {
    S.lr[g] = groups[g].lr;
    S.lr_rest[g] = groups[g].lr_rest;
  }
  // Bias corrections in double on the host, as the reference computes them.
  const double t = double(step);
  const double bc1 = 1.0 - std::pow(kAdamBeta1, t), bc2 = 1.0 - std::pow(kAdamBeta2, t);
  S.inv_bc1 = float(1.0 / bc1);
  S.inv_sqrt_bc2 = float(1.0 / std::sqrt(bc2));
  S.grad_scale = grad_scale;
  return S;
}

void adam_step(const AdamGroup* groups,
               int count,
               long long step,
               cudaStream_t stream,
               float grad_scale,
               const AdamScalars* device_scalars,
               const int* abort) {
  if (count < 0 || count > kMaxAdamGroups)
    throw Error("adam_step: " + std::to_string(count) + " parameter groups (at most " +
                std::to_string(kMaxAdamGroups) + ")");
  AdamLaunch L{};
  L.count = count;
  L.scalars = adam_scalars(groups, count, step, grad_scale);
  L.device_scalars = device_scalars;
  L.abort = abort;
  std::size_t blocks = 0;
  for (int g = 0; g < count; ++g) {
    const AdamGroup& G = groups[g];
    if (G.n > 0 && (!G.param || !G.grad || !G.m || !G.v))
      throw Error("adam_step: group " + std::to_string(g) + " has " + std::to_string(G.n) +
                  " elements but a null pointer");
    if (G.sh_K < 0)
      throw Error("adam_step: group " + std::to_string(g) + " has sh_K " + std::to_string(G.sh_K));
    L.groups[g] = G;
    L.vec4[g] = aligned16(G.param) && aligned16(G.grad) && aligned16(G.m) && aligned16(G.v);
    const std::size_t units = L.vec4[g] ? (G.n + 3) / 4 : G.n;
    L.block_begin[g] = unsigned(blocks);
    blocks += (units + kThreads - 1) / kThreads;
    if (blocks > std::size_t(std::numeric_limits<int>::max()))
      throw Error("adam_step: " + std::to_string(blocks) + " blocks exceed the grid limit");
  }
  L.block_begin[count] = unsigned(blocks);
  if (blocks == 0) return;
  adam_kernel<<<unsigned(blocks), kThreads, 0, stream>>>(L);
  SPLAT_CUDA_CHECK_LAUNCH("adam_kernel");
}

}  // namespace splat::cuda
