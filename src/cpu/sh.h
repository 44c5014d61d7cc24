#pragma once
// Real spherical harmonics up to degree 3, in the basis and sign convention of the 3DGS code
// (and gsplat): color = sum_k basis_k(dir) * sh_k, dir a unit vector.
#include <array>

#include "core/math.h"

namespace splat::cpu {

template <class T>
using ShBasis = std::array<T, 16>;

// basis[k] for k < (degree+1)^2 and, if `grad` is given, d basis[k] / d dir.
template <class T>
void sh_basis(int degree, Vec3<T> d, ShBasis<T>& basis, std::array<Vec3<T>, 16>* grad = nullptr) {
  const T x = d.x, y = d.y, z = d.z;
  std::array<Vec3<T>, 16> g{};
  basis[0] = T(0.28209479177387814);
  if (degree >= 1) {
    const T c1 = T(0.48860251190291987);
    basis[1] = -c1 * y;
    basis[2] = c1 * z;
    basis[3] = -c1 * x;
    g[1] = {0, -c1, 0};
    g[2] = {0, 0, c1};
    g[3] = {-c1, 0, 0};
  }
  if (degree >= 2) {
    const T c4 = T(1.0925484305920792), c6a = T(0.94617469575756008), c6b = T(0.31539156525252005),
            c8 = T(0.54627421529603959);
    basis[4] = c4 * x * y;
    basis[5] = -c4 * y * z;
    basis[6] = c6a * z * z - c6b;
    basis[7] = -c4 * x * z;
    basis[8] = c8 * (x * x - y * y);
    g[4] = {c4 * y, c4 * x, 0};
    g[5] = {0, -c4 * z, -c4 * y};
    g[6] = {0, 0, 2 * c6a * z};
    g[7] = {-c4 * z, 0, -c4 * x};
    g[8] = {2 * c8 * x, -2 * c8 * y, 0};
  }
  if (degree >= 3) {
    const T c9 = T(0.59004358992664352), c10 = T(2.8906114426405538), c11a = T(2.2852289973223288),
            c11b = T(0.45704579946446572), c12a = T(1.8658816629505768),
            c12b = T(1.1195289977703462), c14 = T(1.4453057213202769);
    const T xx = x * x, yy = y * y, zz = z * z;
    basis[9] = -c9 * y * (3 * xx - yy);
    basis[10] = c10 * x * y * z;
    basis[11] = y * (c11b - c11a * zz);
    basis[12] = z * (c12a * zz - c12b);
    basis[13] = x * (c11b - c11a * zz);
    basis[14] = c14 * z * (xx - yy);
    basis[15] = -c9 * x * (xx - 3 * yy);
    g[9] = {-c9 * 6 * x * y, -c9 * (3 * xx - 3 * yy), 0};
    g[10] = {c10 * y * z, c10 * x * z, c10 * x * y};
    g[11] = {0, c11b - c11a * zz, -2 * c11a * y * z};
    g[12] = {0, 0, 3 * c12a * zz - c12b};
    g[13] = {c11b - c11a * zz, 0, -2 * c11a * x * z};
    g[14] = {2 * c14 * x * z, -2 * c14 * y * z, c14 * (xx - yy)};
    g[15] = {-c9 * (3 * xx - 3 * yy), c9 * 6 * x * y, 0};
  }
  if (grad) *grad = g;
}

}  // namespace splat::cpu
