// The fused CUDA photometric loss against cpu::photometric_loss<double>: the data-term and SSIM
// sums and the image gradient, for float and 8-bit targets, lambda 0, 0.2 and 1, image sizes that
// are not tile multiples and images smaller than the 11x11 window, with either data term (l1_ssim,
// l2_ssim); and the l1 and l2 losses (no SSIM).
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "cpu/loss_cpu.h"
#include "cuda/loss_cuda.h"
#include "parity_util.h"

namespace splat::test {
namespace {

enum class Content {
  Independent,  // image and target unrelated, uniform in [0, 1]: SSIM near 0, large gradients
  Close,        // image = smooth target + small noise: SSIM near 1, the training regime
};

struct Pair {
  std::vector<float> image, target;     // [H, W, 3]; target holds u8 / 255 when u8 is set
  std::vector<std::uint8_t> target_u8;  // [H, W, 3], only when u8
  std::vector<double> target_ref;       // the target the CPU reference sees
};

Pair make_pair(int w, int h, Content content, bool u8, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  const std::size_t n = std::size_t(w) * h * 3;
  Pair p;
  p.image.resize(n);
  p.target.resize(n);
  p.target_ref.resize(n);
  if (u8) p.target_u8.resize(n);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int c = 0; c < 3; ++c) {
        const std::size_t i = (std::size_t(y) * w + x) * 3 + c;
        float t =
            content == Content::Independent
                ? u(rng)
                : 0.5f + 0.35f * std::sin(0.21f * x + 0.9f * c) * std::cos(0.13f * y - 0.4f * c) +
                      0.1f * (u(rng) - 0.5f);
        t = std::clamp(t, 0.0f, 1.0f);
        if (u8) {
          p.target_u8[i] = std::uint8_t(std::lround(t * 255.0f));
          p.target[i] = float(p.target_u8[i]) / 255.0f;
          p.target_ref[i] = double(p.target_u8[i]) / 255.0;
        } else {
          p.target[i] = t;
          p.target_ref[i] = t;
        }
        p.image[i] = content == Content::Independent
                         ? u(rng)
                         : std::clamp(p.target[i] + 0.05f * (2.0f * u(rng) - 1.0f), 0.0f, 1.0f);
      }
  // Float targets: every 7th entry equal, so sign(0) = 0 of the L1 gradient is exercised. (Not for
  // 8-bit targets: float(u8 / 255) and the reference's double u8 / 255 differ in the last bits.)
  if (!u8)
    for (std::size_t i = 0; i < n; i += 7) p.image[i] = p.target[i];
  return p;
}

struct GpuLoss {
  double l1 = 0, ssim = 0;  // l1: the data term's mean, |d| or d^2
  std::vector<float> v_image;
  std::vector<float> sums;
};

GpuLoss run_gpu(const Pair& pr,
                int w,
                int h,
                float lambda,
                bool u8,
                cudaStream_t stream,
                LossKind kind = LossKind::L1Ssim) {
  const std::size_t n = std::size_t(w) * h * 3;
  auto image = to_device(pr.image);
  auto target = to_device(pr.target);
  auto target_u8 = to_device(u8 ? pr.target_u8 : std::vector<std::uint8_t>{0});
  // Poisoned: a missed v_image write, an accumulated (not overwritten) sum or a read of scratch
  // that kernel 1 did not write shows up as NaN.
  auto v_image = poisoned<float>(n);
  auto sums = poisoned<float>(2);
  auto scratch = poisoned<float>(cuda::loss_scratch_floats(w, h));
  cuda::LossParams p;
  p.width = w;
  p.height = h;
  p.ssim_lambda = lambda;
  p.kind = kind;
  if (u8)
    cuda::photometric_loss(p, image.data(), cuda::LossTarget{target_u8.data(), TargetFormat{}},
                           {v_image.data(), sums.data(), scratch.data()}, stream);
  else
    cuda::photometric_loss(p, image.data(), target.data(),
                           {v_image.data(), sums.data(), scratch.data()}, stream);
  SPLAT_CUDA_CHECK(cudaStreamSynchronize(stream));
  GpuLoss r;
  r.v_image = v_image.download();
  r.sums = sums.download();
  r.l1 = double(r.sums[0]) / double(n);
  r.ssim = double(r.sums[1]) / double(n);
  return r;
}

// The data term's mean, mean |d| or mean d^2, in double.
double data_mean(const std::vector<double>& image, const std::vector<double>& target, LossKind k) {
  double sum = 0;
  for (std::size_t i = 0; i < image.size(); ++i) {
    const double d = image[i] - target[i];
    sum += loss_terms(k).data == DataTerm::Squared ? d * d : std::abs(d);
  }
  return sum / double(image.size());
}

// A loss with the SSIM term (l1_ssim, l2_ssim).
void check_case(int w,
                int h,
                float lambda,
                bool u8,
                Content content,
                std::uint32_t seed,
                cudaStream_t stream,
                LossKind kind = LossKind::L1Ssim) {
  SCOPED_TRACE(std::string(to_string(kind)) + " " + std::to_string(w) + "x" + std::to_string(h) +
               " lambda " + std::to_string(lambda) + (u8 ? " u8" : " float") +
               (content == Content::Close ? " close" : " independent"));
  const Pair pr = make_pair(w, h, content, u8, seed);
  const std::vector<double> image_ref(pr.image.begin(), pr.image.end());
  const auto want =
      cpu::photometric_loss<double>(image_ref, pr.target_ref, w, h, double(lambda), true, kind);
  const GpuLoss got = run_gpu(pr, w, h, lambda, u8, stream, kind);

  ASSERT_TRUE(std::isfinite(got.sums[0]) && std::isfinite(got.sums[1])) << "sums not written";
  // Per-block float sums of at most 768 terms, then a double reduction: ~1e-7 relative (seen
  // 1.3e-7 on an H200).
  const double data = data_mean(image_ref, pr.target_ref, kind);
  EXPECT_NEAR(got.l1, data, 2e-6 * data + 1e-9) << "data term mean";
  // SSIM entries carry float cancellation in E[x^2] - mu^2 (~1e-5 relative where the variance is
  // near C2); averaged, the mean is good to a few 1e-7 (seen 1.9e-7 on an H200). A shifted window
  // or a wrong border moves it by more than 1e-3 on these sizes.
  EXPECT_NEAR(got.ssim, want.ssim, 2e-6) << "SSIM mean";

  double scale = 0;
  for (double v : want.v_image) scale = std::max(scale, std::abs(v));
  expect_agree("v_image", got.v_image, want.v_image,
               {2e-5, 1.0 - 1e-8, 2e-4 * scale,
                "float32 moments and partials vs double, ~1e-6 relative; a wrong sign(d) costs "
                "2 (1 - lambda) / n, a missing factor 2 of d^2 half the data term, a border "
                "error ~1e-2 of the scale"});
}

// l1 or l2: the data term's sum and gradient against the double reference, and an SSIM sum of
// exactly 0 (written, though nothing computes it: the buffers start poisoned).
void check_data_case(
    int w, int h, LossKind kind, bool u8, std::uint32_t seed, cudaStream_t stream) {
  SCOPED_TRACE(std::to_string(w) + "x" + std::to_string(h) + " " + std::string(to_string(kind)) +
               (u8 ? " u8" : " float"));
  Pair pr = make_pair(w, h, Content::Close, u8, seed);
  // An image entry equal to float(u8 / 255) has sign(d) = 0 here but not in the reference, whose
  // u8 / 255 is the double: one ulp up, both signs are +1 (p ~ 6e-7 per entry, left to chance
  // the 232k entries of the l1 cases would fail about one seed in seven).
  if (u8)
    for (std::size_t i = 0; i < pr.image.size(); ++i)
      if (pr.image[i] == pr.target[i]) pr.image[i] = std::nextafter(pr.image[i], 2.0f);
  const std::vector<double> image_ref(pr.image.begin(), pr.image.end());
  const auto want = cpu::photometric_loss<double>(image_ref, pr.target_ref, w, h, 0.2, true, kind);
  const GpuLoss got = run_gpu(pr, w, h, 0.2f, u8, stream, kind);

  ASSERT_TRUE(std::isfinite(got.sums[0])) << "sum not written";
  EXPECT_EQ(got.sums[1], 0.0f) << "SSIM sum of a loss without SSIM";
  // got.l1 is the data term's mean (sums[0] / n) whatever the kind. Per-block float sums of 256
  // terms, then a double reduction: ~1e-7 relative, as for l1_ssim's L1 sum.
  EXPECT_NEAR(got.l1, want.loss, 2e-6 * want.loss + 1e-9) << "data term mean";
  double scale = 0;
  for (double v : want.v_image) scale = std::max(scale, std::abs(v));
  expect_agree("v_image", got.v_image, want.v_image,
               {2e-6, 1.0 - 1e-10, 1e-5 * scale,
                "sign(d) / n is exact up to the float 1 / n, 2 d / n rounds once or twice "
                "(~1e-7 relative); a wrong sign or factor costs the whole scale"});
}

class ParityLoss : public ::testing::Test {
 protected:
  void SetUp() override { SPLAT_CUDA_CHECK(cudaStreamCreate(&stream_)); }
  void TearDown() override { cudaStreamDestroy(stream_); }
  cudaStream_t stream_ = nullptr;
};

constexpr int kSizes[][2] = {{64, 48}, {97, 61}, {160, 120}, {250, 170}, {33, 200}};
constexpr float kLambdas[] = {0.0f, 0.2f, 1.0f};

TEST_F(ParityLoss, FloatTarget) {
  std::uint32_t seed = 100;
  for (const auto& s : kSizes)
    for (float lambda : kLambdas)
      for (Content c : {Content::Independent, Content::Close})
        check_case(s[0], s[1], lambda, false, c, ++seed, stream_);
}

TEST_F(ParityLoss, U8Target) {
  std::uint32_t seed = 200;
  for (const auto& s : kSizes)
    for (float lambda : kLambdas)
      for (Content c : {Content::Independent, Content::Close})
        check_case(s[0], s[1], lambda, true, c, ++seed, stream_);
}

// Smaller than the window and than one tile: every pixel sees the zero padding, on several sides.
TEST_F(ParityLoss, TinyImages) {
  constexpr int kTiny[][2] = {{7, 5}, {1, 1}, {3, 17}, {16, 16}, {17, 1}, {11, 11}};
  std::uint32_t seed = 300;
  for (const auto& s : kTiny)
    for (float lambda : kLambdas)
      for (bool u8 : {false, true})
        check_case(s[0], s[1], lambda, u8, Content::Independent, ++seed, stream_);
}

TEST_F(ParityLoss, L1AndL2) {
  std::uint32_t seed = 400;
  for (LossKind kind : {LossKind::L1, LossKind::L2})
    for (const auto& s : kSizes)
      for (bool u8 : {false, true}) check_data_case(s[0], s[1], kind, u8, ++seed, stream_);
  for (LossKind kind : {LossKind::L1, LossKind::L2})  // one pixel: a single partial block
    check_data_case(1, 1, kind, false, ++seed, stream_);
}

// l2_ssim: the SSIM kernels' squared data term, on the sizes and targets of l1_ssim's cases.
TEST_F(ParityLoss, L2Ssim) {
  std::uint32_t seed = 500;
  for (const auto& s : kSizes)
    for (float lambda : kLambdas)
      for (bool u8 : {false, true})
        check_case(s[0], s[1], lambda, u8, Content::Close, ++seed, stream_, LossKind::L2Ssim);
  for (const auto& s : {std::array{7, 5}, std::array{1, 1}, std::array{17, 1}})
    check_case(s[0], s[1], 0.2f, false, Content::Independent, ++seed, stream_, LossKind::L2Ssim);
}

// l1 (l2) is l1_ssim's (l2_ssim's) data term with lambda 0 (and ignores lambda): the same
// gradient bits, since the SSIM partials are then scaled by -0 and add zeros, and 1 - 0 is exact;
// the data sums are fixed-order reductions of differently cut blocks: near, not equal.
TEST_F(ParityLoss, DataLossIsSsimLossAtLambdaZero) {
  const int w = 97, h = 61;
  const Pair pr = make_pair(w, h, Content::Close, false, 11);
  for (const auto& [with_ssim, alone] :
       {std::pair{LossKind::L1Ssim, LossKind::L1}, std::pair{LossKind::L2Ssim, LossKind::L2}}) {
    const GpuLoss a = run_gpu(pr, w, h, 0.0f, false, stream_, with_ssim);
    const GpuLoss b = run_gpu(pr, w, h, 0.7f, false, stream_, alone);
    EXPECT_NEAR(a.sums[0], b.sums[0], 1e-6 * a.sums[0]) << to_string(alone);
    EXPECT_EQ(a.v_image, b.v_image) << to_string(alone);
  }
}

// No float atomics: two runs agree bit for bit.
TEST_F(ParityLoss, Deterministic) {
  const int w = 250, h = 170;
  const Pair pr = make_pair(w, h, Content::Close, false, 7);
  for (const LossTerms& row : kLosses) {
    const LossKind kind = row.kind;
    const GpuLoss a = run_gpu(pr, w, h, 0.2f, false, stream_, kind);
    const GpuLoss b = run_gpu(pr, w, h, 0.2f, false, stream_, kind);
    EXPECT_EQ(a.sums, b.sums) << to_string(kind);
    EXPECT_EQ(a.v_image, b.v_image) << to_string(kind);
  }
}

// The float and 8-bit paths are one implementation: the same target values give the same bits.
TEST_F(ParityLoss, U8MatchesFloatPath) {
  const int w = 97, h = 61;
  const Pair pr = make_pair(w, h, Content::Close, true, 9);
  const GpuLoss a = run_gpu(pr, w, h, 0.2f, true, stream_);
  const GpuLoss b = run_gpu(pr, w, h, 0.2f, false, stream_);
  EXPECT_EQ(a.sums, b.sums);
  EXPECT_EQ(a.v_image, b.v_image);
}

TEST_F(ParityLoss, RejectsEmptyImage) {
  cuda::LossParams p;
  p.width = 0;
  p.height = 10;
  EXPECT_THROW(cuda::photometric_loss(p, nullptr, nullptr, {}, stream_), Error);
  EXPECT_EQ(cuda::loss_scratch_floats(0, 10), 0u);
}

}  // namespace
}  // namespace splat::test
