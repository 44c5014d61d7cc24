#pragma once
// The Gaussian model: raw parameters, structure of arrays. It holds tensors and nothing else.
//   means       [N, 3]
//   log_scales  [N, 3]       scale = exp(log_scale)
//   quats       [N, 4]       (w, x, y, z), normalized on use
//   raw_opacity [N]          opacity = sigmoid(raw_opacity)
//   sh          [N, K, 3]    K = (sh_degree + 1)^2, DC first; color = max(0, 0.5 + SH(dir))
#include <array>
#include <cstddef>
#include <vector>

namespace splat {

inline constexpr int sh_coeffs(int degree) {
  return (degree + 1) * (degree + 1);
}

template <class T>
struct GaussiansT {
  int sh_degree = 3;  // storage degree (K = (sh_degree+1)^2 coefficients per channel)
  std::vector<T> means, log_scales, quats, raw_opacity, sh;

  std::size_t size() const { return raw_opacity.size(); }
  int K() const { return sh_coeffs(sh_degree); }
  // Floats per Gaussian of each group, in for_each_group order.
  std::array<std::size_t, 5> widths() const { return {3, 3, 4, 1, std::size_t(K()) * 3}; }
  void resize(std::size_t n) {
    const auto w = widths();
    std::size_t i = 0;
    for_each_group([&](const char*, std::vector<T>& v) { v.resize(n * w[i++]); });
  }

  // Visit every parameter group with its name: f(name, vector&). One list for export,
  // checkpoints, the optimizer and tests.
  template <class F>
  void for_each_group(F&& f) {
    f("means", means);
    f("log_scales", log_scales);
    f("quats", quats);
    f("raw_opacity", raw_opacity);
    f("sh", sh);
  }
  template <class F>
  void for_each_group(F&& f) const {
    f("means", means);
    f("log_scales", log_scales);
    f("quats", quats);
    f("raw_opacity", raw_opacity);
    f("sh", sh);
  }

  template <class U>
  GaussiansT<U> cast() const {
    GaussiansT<U> g;
    g.sh_degree = sh_degree;
    g.means.assign(means.begin(), means.end());
    g.log_scales.assign(log_scales.begin(), log_scales.end());
    g.quats.assign(quats.begin(), quats.end());
    g.raw_opacity.assign(raw_opacity.begin(), raw_opacity.end());
    g.sh.assign(sh.begin(), sh.end());
    return g;
  }
};

using Gaussians = GaussiansT<float>;

}  // namespace splat
