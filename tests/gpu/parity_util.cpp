#include "parity_util.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

#include "cuda/cuda_backend.h"
#include "cuda/testing.h"

namespace splat::test {

Scene random_scene(int n, int width, int height, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  auto uni = [&](float lo, float hi) { return lo + (hi - lo) * u(rng); };
  Scene s;
  // Camera at (0, 0, -4) looking at the origin (+z), off-center principal point.
  const double fx = 0.9 * width, fy = 0.9 * width;
  std::array<double, 16> w2c = {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 4, 0, 0, 0, 1};
  s.camera = Camera::from_w2c(w2c, width, height, fx, fy, 0.52 * width, 0.47 * height);
  Gaussians& g = s.gaussians;
  g.sh_degree = 3;
  g.resize(n);
  for (int i = 0; i < n; ++i) {
    float* m = &g.means[i * 3];
    m[0] = uni(-1.5f, 1.5f) * float(width) / float(height > 0 ? height : 1) * 0.7f;
    m[1] = uni(-1.2f, 1.2f);
    m[2] = uni(-1.5f, 2.0f);
    if (i % 97 == 13) m[2] = -4.5f;  // behind the camera
    if (i % 101 == 7) m[0] = 40.0f;  // far outside the view
    for (int k = 0; k < 3; ++k) g.log_scales[i * 3 + k] = std::log(uni(0.01f, 0.15f));
    for (int k = 0; k < 4; ++k) g.quats[i * 4 + k] = uni(-1.0f, 1.0f);
    g.raw_opacity[i] = std::log(1.0f / uni(0.05f, 0.95f) - 1.0f) * -1.0f;
    for (int k = 0; k < g.K() * 3; ++k)
      g.sh[std::size_t(i) * g.K() * 3 + k] = uni(-0.5f, 0.5f) * (k < 3 ? 1.0f : 0.3f);
  }
  return s;
}

Agreement agreement(const std::vector<float>& got, const std::vector<double>& want) {
  Agreement a;
  double num = 0, den = 0, dot = 0, gg = 0;
  for (std::size_t i = 0; i < want.size() && i < got.size(); ++i) {
    if (!std::isfinite(got[i])) {
      ++a.non_finite;
      continue;
    }
    const double e = double(got[i]) - want[i];
    num += e * e;
    den += want[i] * want[i];
    dot += double(got[i]) * want[i];
    gg += double(got[i]) * got[i];
    if (std::abs(e) > a.max_abs) a.max_abs = std::abs(e), a.worst = i;
  }
  a.rel_l2 = den > 0 ? std::sqrt(num / den) : std::sqrt(num);
  a.cosine = (den > 0 && gg > 0) ? dot / std::sqrt(den * gg) : (num == 0 ? 1.0 : 0.0);
  return a;
}

void expect_agree(const std::string& what,
                  const std::vector<float>& got,
                  const std::vector<double>& want,
                  const Tolerance& tol) {
  ASSERT_EQ(got.size(), want.size()) << what;
  const Agreement a = agreement(got, want);
  EXPECT_TRUE(a.non_finite == 0 && a.rel_l2 <= tol.rel_l2 && a.cosine >= tol.min_cosine &&
              a.max_abs <= tol.max_abs)
      << what << ": rel L2 " << a.rel_l2 << " (tol " << tol.rel_l2 << "), cosine " << a.cosine
      << " (min " << tol.min_cosine << "), max abs " << a.max_abs << " (tol " << tol.max_abs
      << ") at element " << a.worst << ": got " << (got.empty() ? 0.0f : got[a.worst]) << ", want "
      << (want.empty() ? 0.0 : want[a.worst]) << "; non-finite " << a.non_finite << " [" << tol.why
      << "]";
}

std::vector<float> random_vector(std::size_t n, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

void expect_zero_tails(const Backend& b,
                       std::size_t n,
                       const std::string& tag,
                       bool sh_grads_held) {
  const int widths[5] = {3, 3, 4, 1, 48};
  const std::vector<cuda::DeviceArrayView> arrays = cuda::model_arrays(b);
  ASSERT_EQ(arrays.size(), 20u) << tag;
  for (std::size_t a = 0; a < arrays.size(); ++a) {
    const cuda::DeviceArrayView& v = arrays[a];
    const std::string what = tag + " array " + std::to_string(a);
    if (a == 9 && !sh_grads_held) {
      EXPECT_EQ(v.capacity, 0u) << what << ": SH gradients allocated by one-view steps";
      continue;
    }
    ASSERT_EQ(v.size, n * std::size_t(widths[a % 5])) << what;
    ASSERT_GE(v.capacity, v.size) << what;
    const std::size_t from = v.size;
    std::vector<float> host(v.capacity - from);
    if (!host.empty())
      SPLAT_CUDA_CHECK(cudaMemcpy(host.data(), v.data + from, host.size() * sizeof(float),
                                  cudaMemcpyDeviceToHost));
    const auto nz = std::find_if(host.begin(), host.end(), [](float x) { return x != 0.0f; });
    EXPECT_TRUE(nz == host.end()) << what << " nonzero at float " << (from + (nz - host.begin()))
                                  << " of capacity " << v.capacity;
  }
}

bool bit_equal(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

std::vector<std::vector<float>> groups(const Gaussians& g) {
  std::vector<std::vector<float>> out;
  g.for_each_group([&](const char*, const std::vector<float>& v) { out.push_back(v); });
  return out;
}

}  // namespace splat::test
