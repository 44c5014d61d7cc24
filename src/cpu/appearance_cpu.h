#pragma once
// The affine appearance transform of engine/appearance.h, forward and backward, on an [H, W, 3]
// image, pixel by pixel through engine/appearance.h's appearance_pixel(_bwd). With g' = dL/dr'
// per pixel:
//   dL/dA = sum over pixels g' r^T,   dL/db = sum over pixels g',   dL/dr = A^T g'.
#include <array>
#include <cstddef>
#include <vector>

#include "engine/appearance.h"

namespace splat::cpu {

// r' = A r + b for every pixel; m is [3, 4] row-major [A | b].
template <class T, class M>
std::vector<T> appearance_fwd(const M* m, const std::vector<T>& image) {
  std::vector<T> out(image.size());
  const std::size_t np = image.size() / 3;
#pragma omp parallel for schedule(static)
  for (std::size_t p = 0; p < np; ++p) appearance_pixel(m, &image[p * 3], &out[p * 3]);
  return out;
}

// From d loss / d r' (v_out, [H, W, 3]): d loss / d r into v_image, and d loss / d [A | b] added
// to v_m ([3, 4]). The pixel sums run in double, as the loss's do.
template <class T, class M>
void appearance_bwd(const M* m,
                    const std::vector<T>& image,
                    const std::vector<T>& v_out,
                    std::vector<T>& v_image,
                    M* v_m) {
  const std::size_t np = image.size() / 3;
  v_image.resize(image.size());
  std::array<double, kAppearanceFloats> sum{};
  for (std::size_t p = 0; p < np; ++p)
    appearance_pixel_bwd(m, &image[p * 3], &v_out[p * 3], &v_image[p * 3], sum.data());
  for (std::size_t k = 0; k < kAppearanceFloats; ++k) v_m[k] += M(sum[k]);
}

}  // namespace splat::cpu
