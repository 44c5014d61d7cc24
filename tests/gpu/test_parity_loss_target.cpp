// The CUDA loss on training images as stored (8-bit RGBA): straight alpha composited inside the
// kernel must give the bits of the same loss on the host-composited float target, and a mask must
// match cpu::photometric_loss with weights (in double), give zero gradient under the mask and
// ignore the target there.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "core/image.h"
#include "cpu/loss_cpu.h"
#include "cuda/loss_cuda.h"
#include "engine/target.h"
#include "parity_util.h"

namespace splat::test {
namespace {

// A smooth RGBA8 picture (so SSIM is in its training regime) with a random fourth byte: alpha in
// 0..255 for compositing, or a mask of disc-shaped holes (0) in 255 for masking.
Image8 make_target(int w, int h, AlphaUse use, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> byte(0, 255);
  Image8 img(w, h, 4);
  img.alpha = use;
  img.background = {1.0f, 0.5f, 0.0f};
  const float cx = 0.3f * w, cy = 0.6f * h, r = 0.2f * float(std::min(w, h)) + 2.0f;
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      std::uint8_t* p = &img.data[(std::size_t(y) * w + x) * 4];
      for (int c = 0; c < 3; ++c)
        p[c] = std::uint8_t(127 + 100 * std::sin(0.2f * x + c) * std::cos(0.15f * y - c) +
                            byte(rng) % 20);
      const bool hole = (x - cx) * (x - cx) + (y - cy) * (y - cy) < r * r || (x * 7 + y) % 23 == 0;
      p[3] = use == AlphaUse::mask ? (hole ? 0 : 255) : std::uint8_t(byte(rng));
    }
  return img;
}

std::vector<float> render_near(const Image& target, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-0.05f, 0.05f);
  std::vector<float> image(target.data.size());
  for (std::size_t i = 0; i < image.size(); ++i)
    image[i] = std::clamp(target.data[i] + u(rng), 0.0f, 1.0f);
  return image;
}

struct GpuLoss {
  std::vector<float> v_image, sums;
  double l1 = 0, ssim = 0;
};

// From the bytes (format of img) when bytes is set, else from the float target.
GpuLoss run(const std::vector<float>& image,
            const Image8& img,
            bool bytes,
            float lambda,
            cudaStream_t stream) {
  const int w = img.width, h = img.height;
  const std::size_t n = std::size_t(w) * h * 3;
  auto d_image = to_device(image);
  auto d_bytes = to_device(img.data);
  auto d_float = to_device(target_image(img).data);
  const double norm = double(img.pixels()) / double(img.counted_pixels());
  auto d_norm = to_device(std::vector<float>{float(norm)});
  auto v_image = poisoned<float>(n);
  auto sums = poisoned<float>(2);
  auto scratch = poisoned<float>(cuda::loss_scratch_floats(w, h));
  const cuda::LossParams p{w, h, lambda};
  if (bytes)
    cuda::photometric_loss(p, d_image.data(),
                           cuda::LossTarget{d_bytes.data(), target_format(img), d_norm.data()},
                           {v_image.data(), sums.data(), scratch.data()}, stream);
  else
    cuda::photometric_loss(p, d_image.data(), d_float.data(),
                           {v_image.data(), sums.data(), scratch.data()}, stream);
  SPLAT_CUDA_CHECK(cudaStreamSynchronize(stream));
  GpuLoss r;
  r.v_image = v_image.download();
  r.sums = sums.download();
  r.l1 = double(r.sums[0]) / double(n);  // as the backend reads them: norm already applied
  r.ssim = double(r.sums[1]) / double(n);
  return r;
}

class ParityLossTarget : public ::testing::Test {
 protected:
  void SetUp() override { SPLAT_CUDA_CHECK(cudaStreamCreate(&stream_)); }
  void TearDown() override { cudaStreamDestroy(stream_); }
  cudaStream_t stream_ = nullptr;
};

constexpr int kSizes[][2] = {{64, 48}, {97, 61}, {33, 200}, {7, 5}};

// The kernel's composite (engine/target.h, rounded once per operation) is the host's, bit for bit:
// the loss from RGBA bytes equals the loss from the target composited on the host.
TEST_F(ParityLossTarget, CompositedInTheKernelEqualsCompositedOnTheHost) {
  std::uint32_t seed = 10;
  for (const auto& s : kSizes) {
    SCOPED_TRACE(std::to_string(s[0]) + "x" + std::to_string(s[1]));
    const Image8 img = make_target(s[0], s[1], AlphaUse::composite, ++seed);
    const std::vector<float> image = render_near(target_image(img), ++seed);
    const GpuLoss a = run(image, img, true, 0.2f, stream_);
    const GpuLoss b = run(image, img, false, 0.2f, stream_);
    EXPECT_EQ(a.sums, b.sums);
    EXPECT_EQ(a.v_image, b.v_image);
  }
}

TEST_F(ParityLossTarget, MaskedLossMatchesTheCpuReference) {
  std::uint32_t seed = 20;
  for (const auto& s : kSizes)
    for (const float lambda : {0.0f, 0.2f, 1.0f}) {
      SCOPED_TRACE(std::to_string(s[0]) + "x" + std::to_string(s[1]) + " lambda " +
                   std::to_string(lambda));
      const Image8 img = make_target(s[0], s[1], AlphaUse::mask, ++seed);
      ASSERT_LT(img.counted_pixels(), img.pixels());
      ASSERT_GT(img.counted_pixels(), 0u);
      const std::vector<float> image = render_near(target_image(img), ++seed);
      const GpuLoss got = run(image, img, true, lambda, stream_);

      const Image t = target_image(img);
      const std::vector<float> wf = target_weights(img);
      const std::vector<double> image_ref(image.begin(), image.end()),
          target_ref(t.data.begin(), t.data.end()), weights(wf.begin(), wf.end());
      const auto want =
          cpu::photometric_loss<double>(image_ref, target_ref, s[0], s[1], double(lambda), true,
                                        LossKind::L1Ssim, weights.data());
      // Tolerances as ParityLoss (test_parity_loss.cpp): float sums and moments against double.
      EXPECT_NEAR(got.l1, want.l1, 2e-6 * want.l1 + 1e-9) << "L1 mean over the kept pixels";
      EXPECT_NEAR(got.ssim, want.ssim, 2e-6) << "SSIM mean over the kept pixels";
      double scale = 0;
      for (double v : want.v_image) scale = std::max(scale, std::abs(v));
      expect_agree("v_image", got.v_image, want.v_image,
                   {2e-5, 1.0 - 1e-8, 2e-4 * scale,
                    "float32 moments and partials vs double; a masked pixel read into a window "
                    "moves its neighbours' gradients by ~1e-2 of the scale"});
      for (std::size_t i = 0; i < img.pixels(); ++i) {
        if (img.data[4 * i + 3] != 0) continue;
        for (int c = 0; c < 3; ++c) ASSERT_EQ(got.v_image[3 * i + c], 0.0f) << "pixel " << i;
      }
    }
}

TEST_F(ParityLossTarget, TargetUnderTheMaskChangesNothing) {
  const Image8 img = make_target(97, 61, AlphaUse::mask, 31);
  const std::vector<float> image = render_near(target_image(img), 32);
  Image8 other = img;
  for (std::size_t i = 0; i < other.pixels(); ++i)
    if (other.data[4 * i + 3] == 0)
      for (int c = 0; c < 3; ++c) other.data[4 * i + c] = std::uint8_t(255 - other.data[4 * i + c]);
  const GpuLoss a = run(image, img, true, 0.2f, stream_);
  const GpuLoss b = run(image, other, true, 0.2f, stream_);
  EXPECT_EQ(a.sums, b.sums);
  EXPECT_EQ(a.v_image, b.v_image);
}

}  // namespace
}  // namespace splat::test
