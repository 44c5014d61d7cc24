// Photometric loss (1 - lambda) * data term + lambda * (1 - SSIM) and its image gradient in two
// tiled kernels, after fused-ssim (Mallick et al. 2024, "Taming 3DGS"). The specification is
// cpu/loss_cpu.h: SSIM of Wang et al. 2004 with an 11x11 Gaussian window (sigma 1.5), zero padding.
// Losses without the SSIM term (engine/loss.h) skip all of it: one elementwise kernel and a
// reduction. Every kernel is instantiated per data term (|d| or d^2).
//
// SSIM is a function of five blurred moments, so its gradient w.r.t. the image is the adjoint blur
// (the window is symmetric: the blur itself) of the partials w.r.t. mu_x, E[x^2] and E[xy]:
//   v_x = blur(d_mx) + 2 x blur(d_sxx) + y blur(d_sxy).
// Kernel 1 computes the moments and the partials per tile, kernel 2 blurs the partials. Each tile
// loads its 5-pixel halo into shared memory once and blurs separably there (11 + 11 taps instead
// of 121); with the halo each input is fetched about 2.6 times per kernel, mostly from L2.
#include <cuda_runtime.h>

#include <cstdint>
#include <string>
#include <type_traits>

#include "core/error.h"
#include "cuda/check.h"
#include "cuda/loss_cuda.h"
#include "cuda/warp.cuh"
#include "engine/ssim.h"

namespace splat::config {
// Output tile of both loss kernels. 16x16 keeps the halo overhead at (26 * 26) / 256 = 2.6 loads
// per pixel (32x8 would need 42 * 18 / 256 = 3.0) and one thread per output pixel.
inline constexpr int loss_tile_w = 16;
inline constexpr int loss_tile_h = 16;
}  // namespace splat::config

namespace splat::cuda {
namespace {

constexpr int kR = kSsimRadius;  // window radius, 5
constexpr int kTaps = 2 * kR + 1;
constexpr int kTileW = config::loss_tile_w, kTileH = config::loss_tile_h;
constexpr int kThreads = kTileW * kTileH;
constexpr int kWarps = kThreads / 32;
constexpr int kRegionW = kTileW + 2 * kR, kRegionH = kTileH + 2 * kR;  // tile plus halo
// Partials per channel written by kernel 1 and blurred by kernel 2: d_mx, d_sxx, d_sxy.
constexpr int kPartials = 3;
// Shared-memory row stride of kernel 2's partial planes. The horizontal pass gives each half-warp
// one region row; a stride of 16 (mod 32 banks) puts the two rows of a warp in disjoint banks
// (the natural 26 makes every tap a 2-way bank conflict, and that pass dominates the kernel).
constexpr int kPartialStride = 48;
static_assert(kPartialStride >= kRegionW && kPartialStride % 32 == 16, "see kPartialStride");
static_assert(kTileW == 16, "the bank layouts assume one region row per half-warp");
static_assert(kThreads % 32 == 0, "block reductions work per warp");
// Kernel 2 held to 64 registers, four blocks per SM: three (at 80) and five (spills) were both
// slower on the H200 (tools/gpu-machine/perf-log.md, the loss kernels).
constexpr int kGradBlocks = 4;

// The normalized 1D window, computed once on the host in double by the same function the CPU
// reference uses, passed by value so every tap is a constant-bank broadcast.
struct Window {
  float w[kTaps];
};

Window make_window() {
  const auto wd = ssim_window<double>();
  Window win{};
  for (int k = 0; k < kTaps; ++k) win.w[k] = float(wd[k]);
  return win;
}

struct LossScalars {
  // (1 - lambda) / (H W 3), times data_grad_factor: d loss / d data_grad (below)
  float data_scale;
  float ssim_scale;  // -lambda / (H W 3): d loss / d SSIM map entry
};

// The data term of one entry d = image - target, and its derivative without the constant factor
// (2 for d^2) that the host folds into the scale.
template <DataTerm kData>
__device__ __forceinline__ float data_term(float d) {
  if constexpr (kData == DataTerm::Squared)
    return d * d;
  else
    return fabsf(d);
}
template <DataTerm kData>
__device__ __forceinline__ float data_grad(float x, float y) {
  if constexpr (kData == DataTerm::Squared)
    return x - y;
  else
    return float((x > y) - (x < y));
}
constexpr double data_grad_factor(DataTerm data) {
  return data == DataTerm::Squared ? 2.0 : 1.0;
}

// The two kinds of target: float RGB, every pixel counted; or a training image's bytes.
struct FloatTarget {
  const float* rgb;  // [H, W, 3]
  __device__ float value(std::size_t pix, int ch) const { return rgb[pix * 3 + ch]; }
  __device__ float weight(std::size_t) const { return 1.0f; }
};
struct BytesTarget {
  const std::uint8_t* pixels;  // [H, W, format.channels]
  TargetFormat format;
  const float* k255 = nullptr;  // k / 255 for every byte k, in shared memory (use_byte_table)
  __device__ float value(std::size_t pix, int ch) const {
    return target_sample(format, pixels + pix * format.channels, ch,
                         [t = k255](std::uint8_t k) { return t[k]; });
  }
  __device__ float weight(std::size_t pix) const {
    return target_weight(format, pixels + pix * format.channels);
  }
};

// A byte target reads k / 255 from a table each block fills once (the same correctly rounded
// quotients) instead of dividing at every read: two divisions per sample were a third of the loss
// stage's time. Every thread of the block calls it; a float target needs none.
__device__ __forceinline__ void use_byte_table(FloatTarget&, float*, int) {}
__device__ __forceinline__ void use_byte_table(BytesTarget& t, float* table, int tid) {
  for (int k = tid; k < 256; k += kThreads) table[k] = div_rn(float(k), 255.0f);
  __syncthreads();
  t.k255 = table;
}

// H W / counted pixels (see LossTarget::norm).
__device__ __forceinline__ float norm_of(const float* norm) {
  return norm ? *norm : 1.0f;
}

std::size_t loss_blocks(int width, int height) {
  return std::size_t((width + kTileW - 1) / kTileW) * std::size_t((height + kTileH - 1) / kTileH);
}

// sums[0, 1] = nrm times the column sums of block_sums [num_blocks, 2], in double and in a fixed
// order (no atomics: the same bits on every run). Called by every thread of one block (tid: its
// rank).
__device__ void reduce_block_sums(int tid,
                                  const float* __restrict__ block_sums,  // [num_blocks, 2]
                                  int num_blocks,
                                  float nrm,
                                  float* __restrict__ sums) {  // [2]
  __shared__ double s_red[2][kWarps];
  double a = 0, b = 0;
  for (int i = tid; i < num_blocks; i += kThreads)
    a += block_sums[2 * i], b += block_sums[2 * i + 1];
  a = warp_sum(a);
  b = warp_sum(b);
  if ((tid & 31) == 0) {
    s_red[0][tid >> 5] = a;
    s_red[1][tid >> 5] = b;
  }
  __syncthreads();
  if (tid == 0) {
    double ta = 0, tb = 0;
    for (int w = 0; w < kWarps; ++w) ta += s_red[0][w], tb += s_red[1][w];
    sums[0] = float(ta * nrm);
    sums[1] = float(tb * nrm);
  }
}

// Kernel 1: per tile and channel, the five blurred moments, the SSIM map and its partials w.r.t.
// the moments (already scaled by -lambda / n); per block, sum data(d) and sum SSIM, written to
// block_sums (no atomics, so the loss is deterministic).
// Masked pixels (weight 0) enter the windows as zero in both image and target, like the padding,
// and add nothing to either sum.
template <class TargetT, DataTerm kData>
__global__ void __launch_bounds__(kThreads)
    loss_moments_kernel(int width,
                        int height,
                        LossScalars scal,
                        Window win,
                        const float* __restrict__ image,  // [H, W, 3]
                        TargetT target,
                        const float* __restrict__ norm,    // [1] or nullptr
                        float* __restrict__ partials,      // [kPartials, 3, H, W]
                        float* __restrict__ block_sums) {  // [blocks, 2]
  // All three channels of (image, target) with halo; out-of-image entries are the zero padding.
  // Interleaved as float2, one 8-byte load per tap and half-warp wavefronts that never conflict.
  __shared__ float2 s_xy[3][kRegionH][kRegionW];
  // Horizontally blurred mu_x, mu_y, E[x^2], E[y^2], E[xy] of one channel, every region row.
  __shared__ float s_h[5][kRegionH][kTileW];
  __shared__ float s_red[2][kWarps];

  const int tx = threadIdx.x, ty = threadIdx.y, tid = ty * kTileW + tx;
  const int x0 = int(blockIdx.x) * kTileW - kR, y0 = int(blockIdx.y) * kTileH - kR;
  const std::size_t plane = std::size_t(width) * height;
  __shared__ float s_k255[256];
  use_byte_table(target, s_k255, tid);

  // A region row is 3 * kRegionW consecutive floats in global memory: consecutive threads read
  // consecutive addresses.
  for (int i = tid; i < kRegionH * kRegionW * 3; i += kThreads) {
    const int r = i / (kRegionW * 3), c = i - r * (kRegionW * 3);
    const int px = c / 3, ch = c - px * 3;
    const int gx = x0 + px, gy = y0 + r;
    float xv = 0.0f, yv = 0.0f;
    if (gx >= 0 && gx < width && gy >= 0 && gy < height) {
      const std::size_t gp = std::size_t(gy) * width + gx;
      const float wv = target.weight(gp);
      xv = wv * image[gp * 3 + ch];
      yv = wv * target.value(gp, ch);
    }
    s_xy[ch][r][px] = make_float2(xv, yv);
  }
  __syncthreads();

  const int gx = int(blockIdx.x) * kTileW + tx, gy = int(blockIdx.y) * kTileH + ty;
  const bool inside = gx < width && gy < height;
  const std::size_t pix = inside ? std::size_t(gy) * width + gx : 0;
  const float w = inside ? target.weight(pix) : 0.0f;
  const float ssim_scale = scal.ssim_scale * norm_of(norm);
  float data = 0.0f, ssim_sum = 0.0f;

  for (int ch = 0; ch < 3; ++ch) {
    for (int i = tid; i < kRegionH * kTileW; i += kThreads) {
      const int r = i / kTileW, c = i - r * kTileW;
      float mx = 0, my = 0, sxx = 0, syy = 0, sxy = 0;
#pragma unroll
      for (int k = 0; k < kTaps; ++k) {
        const float2 xy = s_xy[ch][r][c + k];
        const float w = win.w[k], a = xy.x, b = xy.y;
        mx += w * a;
        my += w * b;
        sxx += w * (a * a);
        syy += w * (b * b);
        sxy += w * (a * b);
      }
      s_h[0][r][c] = mx;
      s_h[1][r][c] = my;
      s_h[2][r][c] = sxx;
      s_h[3][r][c] = syy;
      s_h[4][r][c] = sxy;
    }
    __syncthreads();

    float mx = 0, my = 0, sxx = 0, syy = 0, sxy = 0;
#pragma unroll
    for (int k = 0; k < kTaps; ++k) {
      const float w = win.w[k];
      mx += w * s_h[0][ty + k][tx];
      my += w * s_h[1][ty + k][tx];
      sxx += w * s_h[2][ty + k][tx];
      syy += w * s_h[3][ty + k][tx];
      sxy += w * s_h[4][ty + k][tx];
    }
    if (inside) {
      constexpr float C1 = 0.01f * 0.01f, C2 = 0.03f * 0.03f;
      const float a1 = 2.0f * mx * my + C1, a2 = 2.0f * (sxy - mx * my) + C2;
      const float b1 = mx * mx + my * my + C1;
      const float b2 = (sxx - mx * mx) + (syy - my * my) + C2;
      const float inv_b = 1.0f / (b1 * b2);
      const float s = a1 * a2 * inv_b;
      ssim_sum += w * s;
      // d s / d (mu_x, E[x^2], E[xy]), as in cpu/loss_cpu.h.
      const float g = ssim_scale * w;
      const float d_mx =
          g * (2.0f * my * (a2 - a1) * inv_b - 2.0f * mx * s * (1.0f / b1 - 1.0f / b2));
      const float d_sxx = g * (-s / b2);
      const float d_sxy = g * (2.0f * a1 * inv_b);
      partials[(0 * 3 + ch) * plane + pix] = d_mx;
      partials[(1 * 3 + ch) * plane + pix] = d_sxx;
      partials[(2 * 3 + ch) * plane + pix] = d_sxy;
    }
    // Outside the image both are the zero padding, so this adds 0 there; a masked pixel's
    // entries are 0 too.
    const float2 center = s_xy[ch][ty + kR][tx + kR];
    data += data_term<kData>(center.x - center.y);
    __syncthreads();  // the next channel overwrites s_h
  }

  data = warp_sum(data);
  ssim_sum = warp_sum(ssim_sum);
  if ((tid & 31) == 0) {
    s_red[0][tid >> 5] = data;
    s_red[1][tid >> 5] = ssim_sum;
  }
  __syncthreads();
  if (tid == 0) {
    float a = 0, b = 0;
    for (int w = 0; w < kWarps; ++w) a += s_red[0][w], b += s_red[1][w];
    const std::size_t block = std::size_t(blockIdx.y) * gridDim.x + blockIdx.x;
    block_sums[2 * block + 0] = a;
    block_sums[2 * block + 1] = b;
  }
}

// Kernel 2: v_image = (1 - lambda) data'(d) / n + blur(d_mx) + 2 x blur(d_sxx) + y blur(d_sxy).
// Block (0, 0) also reduces kernel 1's per-block sums in double, in a fixed order.
template <class TargetT, DataTerm kData>
__global__ void __launch_bounds__(kThreads, kGradBlocks)
    loss_grad_kernel(int width,
                     int height,
                     LossScalars scal,
                     Window win,
                     const float* __restrict__ image,  // [H, W, 3]
                     TargetT target,
                     const float* __restrict__ norm,        // [1] or nullptr
                     const float* __restrict__ partials,    // [kPartials, 3, H, W]
                     const float* __restrict__ block_sums,  // [blocks, 2]
                     int num_blocks,
                     float* __restrict__ v_image,             // [H, W, 3]
                     float* __restrict__ sums) {              // [2]: sum data(d), sum SSIM
  __shared__ float s_p[kPartials][kRegionH][kPartialStride];  // one channel's partials with halo
  __shared__ float s_h[kPartials][kRegionH][kTileW];          // ... blurred horizontally

  const int tx = threadIdx.x, ty = threadIdx.y, tid = ty * kTileW + tx;
  const int x0 = int(blockIdx.x) * kTileW - kR, y0 = int(blockIdx.y) * kTileH - kR;
  const std::size_t plane = std::size_t(width) * height;
  __shared__ float s_k255[256];
  use_byte_table(target, s_k255, tid);
  const int gx = int(blockIdx.x) * kTileW + tx, gy = int(blockIdx.y) * kTileH + ty;
  const bool inside = gx < width && gy < height;
  const std::size_t pix = inside ? std::size_t(gy) * width + gx : 0;
  const float nrm = norm_of(norm);
  const float data_scale = scal.data_scale * nrm;

  // One channel's partials with halo, kLoads per thread (rows of kRegionW consecutive floats per
  // partial plane): all of a thread's loads are issued before its stores to s_p.
  constexpr int kRegion = kPartials * kRegionH * kRegionW,
                kLoads = (kRegion + kThreads - 1) / kThreads;
  float fetched[kLoads];
  const auto fetch = [&](int ch) {
#pragma unroll
    for (int l = 0; l < kLoads; ++l) {
      const int i = tid + l * kThreads;
      const int q = i / (kRegionH * kRegionW), rem = i - q * (kRegionH * kRegionW);
      const int r = rem / kRegionW, c = rem - r * kRegionW;
      const int px = x0 + c, py = y0 + r;
      fetched[l] = i < kRegion && px >= 0 && px < width && py >= 0 && py < height
                       ? partials[(q * 3 + ch) * plane + std::size_t(py) * width + px]
                       : 0.0f;
    }
  };
  const auto stage = [&] {
#pragma unroll
    for (int l = 0; l < kLoads; ++l) {
      const int i = tid + l * kThreads;
      if (i >= kRegion) break;
      const int q = i / (kRegionH * kRegionW), rem = i - q * (kRegionH * kRegionW);
      const int r = rem / kRegionW, c = rem - r * kRegionW;
      s_p[q][r][c] = fetched[l];
    }
  };
  fetch(0);
  stage();
  __syncthreads();
  for (int ch = 0; ch < 3; ++ch) {
    for (int i = tid; i < kRegionH * kTileW; i += kThreads) {
      const int r = i / kTileW, c = i - r * kTileW;
      float a = 0, b = 0, d = 0;
#pragma unroll
      for (int k = 0; k < kTaps; ++k) {
        const float w = win.w[k];
        a += w * s_p[0][r][c + k];
        b += w * s_p[1][r][c + k];
        d += w * s_p[2][r][c + k];
      }
      s_h[0][r][c] = a;
      s_h[1][r][c] = b;
      s_h[2][r][c] = d;
    }
    __syncthreads();
    if (ch + 1 < 3) {  // s_p is free: every thread is past the horizontal pass
      fetch(ch + 1);
      stage();
    }

    float bmx = 0, bsxx = 0, bsxy = 0;
#pragma unroll
    for (int k = 0; k < kTaps; ++k) {
      const float w = win.w[k];
      bmx += w * s_h[0][ty + k][tx];
      bsxx += w * s_h[1][ty + k][tx];
      bsxy += w * s_h[2][ty + k][tx];
    }
    if (inside) {
      const std::size_t gi = pix * 3 + ch;
      const float x = image[gi], y = target.value(pix, ch);
      const float dg = data_grad<kData>(x, y);
      // A masked pixel's gradient is 0 (its x entered the windows as 0); elsewhere x' = x.
      v_image[gi] = target.weight(pix) * (data_scale * dg + bmx + 2.0f * x * bsxx + y * bsxy);
    }
    __syncthreads();  // s_h is free for the next channel's horizontal pass, s_p holds its partials
  }

  if (blockIdx.x == 0 && blockIdx.y == 0) reduce_block_sums(tid, block_sums, num_blocks, nrm, sums);
}

// No SSIM: v_image = sign(d) / n or 2 d / n (scale = 1 / n or 2 / n, times the mask's norm and
// weight), d = image - target, one thread per entry; per block, sum w |d| or sum w d^2 into
// block_sums (and 0 for the SSIM column).
template <class TargetT, DataTerm kData>
__global__ void __launch_bounds__(kThreads)
    data_loss_kernel(std::size_t n,
                     float scale,
                     const float* __restrict__ image,  // [H, W, 3]
                     TargetT target,
                     const float* __restrict__ norm,    // [1] or nullptr
                     float* __restrict__ v_image,       // [H, W, 3]
                     float* __restrict__ block_sums) {  // [blocks, 2]
  __shared__ float s_red[kWarps];
  const int tid = int(threadIdx.x);
  const std::size_t i = std::size_t(blockIdx.x) * kThreads + std::size_t(tid);
  __shared__ float s_k255[256];
  use_byte_table(target, s_k255, tid);
  float term = 0.0f;
  if (i < n) {
    const std::size_t pix = i / 3;
    const float w = target.weight(pix), g = scale * norm_of(norm) * w;
    const float d = image[i] - target.value(pix, int(i % 3));
    if constexpr (kData == DataTerm::Squared) {
      term = w * d * d;
      v_image[i] = g * d;
    } else {
      term = w * fabsf(d);
      v_image[i] = g * float((d > 0.0f) - (d < 0.0f));
    }
  }
  term = warp_sum(term);
  if ((tid & 31) == 0) s_red[tid >> 5] = term;
  __syncthreads();
  if (tid == 0) {
    float a = 0;
    for (int w = 0; w < kWarps; ++w) a += s_red[w];
    block_sums[2 * blockIdx.x + 0] = a;
    block_sums[2 * blockIdx.x + 1] = 0.0f;
  }
}

// One block: sums = the column sums of block_sums (data_loss_kernel's), times the mask's norm.
__global__ void __launch_bounds__(kThreads)
    loss_sums_kernel(const float* __restrict__ block_sums,  // [blocks, 2]
                     int num_blocks,
                     const float* __restrict__ norm,  // [1] or nullptr
                     float* __restrict__ sums) {      // [2]
  reduce_block_sums(int(threadIdx.x), block_sums, num_blocks, norm_of(norm), sums);
}

// Calls f(std::integral_constant<DataTerm, data>{}): kernels instantiated per data term.
template <class F>
void with_data_term(DataTerm data, F&& f) {
  if (data == DataTerm::Squared)
    f(std::integral_constant<DataTerm, DataTerm::Squared>{});
  else
    f(std::integral_constant<DataTerm, DataTerm::Abs>{});
}

template <class TargetT>
void launch_loss(const LossParams& p,
                 const float* image,
                 TargetT target,
                 const float* norm,
                 const LossBuffers& out,
                 cudaStream_t stream) {
  float *v_image = out.v_image, *sums = out.sums, *scratch = out.scratch;
  if (p.width <= 0 || p.height <= 0)
    throw Error("photometric_loss: image size " + std::to_string(p.width) + "x" +
                std::to_string(p.height) + " is empty");
  if (!(p.ssim_lambda >= 0.0f && p.ssim_lambda <= 1.0f))
    throw Error("photometric_loss: ssim_lambda " + std::to_string(p.ssim_lambda) +
                " is outside [0, 1]");
  const LossTerms& terms = loss_terms(p.kind);
  const std::size_t plane = std::size_t(p.width) * p.height;
  const double inv_n = 1.0 / (3.0 * double(plane));
  if (!terms.ssim) {  // the data term alone
    const std::size_t n = 3 * plane, blocks = (n + kThreads - 1) / kThreads;
    float* block_sums = scratch;  // [blocks, 2], fewer floats than the SSIM partials take
    with_data_term(terms.data, [&](auto data) {
      data_loss_kernel<TargetT, decltype(data)::value><<<unsigned(blocks), kThreads, 0, stream>>>(
          n, float(data_grad_factor(data) * inv_n), image, target, norm, v_image, block_sums);
    });
    SPLAT_CUDA_CHECK_LAUNCH("data_loss_kernel");
    loss_sums_kernel<<<1, kThreads, 0, stream>>>(block_sums, int(blocks), norm, sums);
    SPLAT_CUDA_CHECK_LAUNCH("loss_sums_kernel");
    return;
  }
  const std::size_t blocks = loss_blocks(p.width, p.height);
  const LossScalars scal{
      float(data_grad_factor(terms.data) * (1.0 - double(p.ssim_lambda)) * inv_n),
      float(-double(p.ssim_lambda) * inv_n)};
  const Window win = make_window();
  float* partials = scratch;                                         // [kPartials, 3, H, W]
  float* block_sums = scratch + std::size_t(kPartials) * 3 * plane;  // [blocks, 2]

  const dim3 grid((p.width + kTileW - 1) / kTileW, (p.height + kTileH - 1) / kTileH),
      block(kTileW, kTileH);
  with_data_term(terms.data, [&](auto data) {
    loss_moments_kernel<TargetT, decltype(data)::value><<<grid, block, 0, stream>>>(
        p.width, p.height, scal, win, image, target, norm, partials, block_sums);
    SPLAT_CUDA_CHECK_LAUNCH("loss_moments_kernel");
    loss_grad_kernel<TargetT, decltype(data)::value>
        <<<grid, block, 0, stream>>>(p.width, p.height, scal, win, image, target, norm, partials,
                                     block_sums, int(blocks), v_image, sums);
    SPLAT_CUDA_CHECK_LAUNCH("loss_grad_kernel");
  });
}

}  // namespace

std::size_t loss_scratch_floats(int width, int height) {
  if (width <= 0 || height <= 0) return 0;
  return std::size_t(kPartials) * 3 * std::size_t(width) * height + 2 * loss_blocks(width, height);
}

void photometric_loss(const LossParams& p,
                      const float* image,
                      const LossTarget& target,
                      const LossBuffers& out,
                      cudaStream_t stream) {
  launch_loss(p, image, BytesTarget{target.pixels, target.format}, target.norm, out, stream);
}

void photometric_loss(const LossParams& p,
                      const float* image,
                      const float* target,
                      const LossBuffers& out,
                      cudaStream_t stream) {
  launch_loss(p, image, FloatTarget{target}, nullptr, out, stream);
}

}  // namespace splat::cuda
