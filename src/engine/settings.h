#pragma once
// Rasterization settings shared by every backend. Plain data: no backend types here.
#include <array>

namespace splat {

namespace config {
inline constexpr float eps2d = 0.3f;               // low-pass added to the 2D covariance, px^2
inline constexpr float near_plane = 0.01f;         // camera z below this is culled
inline constexpr float alpha_min = 1.0f / 255.0f;  // contributions below are skipped
inline constexpr float alpha_max = 0.99f;          // alpha is clamped here
inline constexpr float transmittance_min = 1e-4f;  // stop before T would reach this
inline constexpr float max_extent_sigma = 3.33f;   // screen radius cap, in standard deviations
}  // namespace config

struct RasterSettings {
  int sh_degree = 3;  // active SH degree (<= the model's storage degree)
  std::array<float, 3> background{1.0f, 1.0f, 1.0f};
  bool antialiased = false;  // Mip-Splatting opacity compensation
  // Where alpha is clamped. Training keeps splat's convention; `splat eval --alpha-max` scores a
  // peer's model with the peer's (gsplat: 0.999).
  float alpha_max = config::alpha_max;
  // Test-only: no alpha skip, no early stop, every splat covers the whole image. Makes the
  // image a smooth function of the parameters so central finite differences apply.
  bool smooth_cutoff = false;
  bool operator==(const RasterSettings&) const = default;
};

}  // namespace splat
