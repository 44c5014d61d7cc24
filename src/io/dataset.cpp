// Scene-level quantities derived from a loaded dataset, whatever its format.
#include "io/dataset.h"

#include <algorithm>
#include <cmath>

namespace splat {

namespace {
Vec3<double> mean_center(const std::vector<View>& views) {
  Vec3<double> mean{};
  for (const View& v : views) mean += v.camera.center();
  return views.empty() ? mean : mean * (1.0 / double(views.size()));
}
}  // namespace

double camera_reach(const std::vector<View>& views) {
  const Vec3<double> mean = mean_center(views);
  double reach = 0;
  for (const View& v : views) reach = std::max(reach, norm(v.camera.center() - mean));
  return reach;
}

double scene_extent(const Dataset& data) {
  const double reach = camera_reach(data.train);
  // One camera (or all at one spot) gives no scale; 1 keeps learning rates at their defaults
  // rather than zero.
  return reach > 0 ? 1.1 * reach : 1.0;
}

std::optional<SceneBounds> points_bounds(const PointCloud& pc) {
  const std::size_t n = pc.positions.size() / 3;
  if (n == 0) return std::nullopt;
  SceneBounds b;
  std::vector<float> axis(n);
  for (int k = 0; k < 3; ++k) {
    for (std::size_t i = 0; i < n; ++i) axis[i] = pc.positions[i * 3 + k];
    const auto at = [&](double q) {
      const std::size_t idx = std::size_t(q * double(n - 1) + 0.5);
      std::nth_element(axis.begin(), axis.begin() + std::ptrdiff_t(idx), axis.end());
      return double(axis[idx]);
    };
    const double lo = at(0.01), hi = at(0.99);
    b.center[k] = 0.5 * (lo + hi);
    b.half_size = k == 0 ? 0.5 * (hi - lo) : std::max(b.half_size, 0.5 * (hi - lo));
  }
  if (!(b.half_size > 0)) return std::nullopt;  // all points at one spot
  return b;
}

namespace {

// A cube centered on `center` reaching the farthest camera.
SceneBounds around(Vec3<double> center, const std::vector<View>& views) {
  double reach = 0;
  for (const View& v : views) reach = std::max(reach, norm(v.camera.center() - center));
  return SceneBounds{center, reach > 0 ? reach : 1.0};
}

// Solves A x = b for a symmetric 3x3 A by Cramer's rule; nullopt when A is near singular
// relative to its scale (the optical axes are near parallel: no point they all look at).
std::optional<Vec3<double>> solve3(const Mat3<double>& A, Vec3<double> b) {
  const auto det = [](const Mat3<double>& m) {
    return m[0][0] * (m[1][1] * m[2][2] - m[1][2] * m[2][1]) -
           m[0][1] * (m[1][0] * m[2][2] - m[1][2] * m[2][0]) +
           m[0][2] * (m[1][0] * m[2][1] - m[1][1] * m[2][0]);
  };
  const double d = det(A);
  const double trace = A[0][0] + A[1][1] + A[2][2];
  // For A = sum of (I - d d^T) / n the eigenvalues lie in [0, 1]; 1e-3 of the largest possible
  // determinant is an axis spread of a few degrees.
  if (!(std::abs(d) > 1e-3 * std::pow(trace / 3.0, 3))) return std::nullopt;
  Vec3<double> x;
  for (int c = 0; c < 3; ++c) {
    Mat3<double> Ac = A;
    for (int r = 0; r < 3; ++r) Ac[r][c] = b[r];
    x[c] = det(Ac) / d;
  }
  return x;
}

// A cube around the point the cameras look at, reaching the farthest camera; nullopt when their
// optical axes do not meet in front of most of them.
std::optional<SceneBounds> look_at_bounds(const std::vector<View>& views) {
  if (views.empty()) return std::nullopt;
  // The point nearest, in least squares, to every optical axis: sum (I - d d^T) (x - c) = 0.
  Mat3<double> A;
  Vec3<double> rhs{};
  for (const View& v : views) {
    const Vec3<double> c = v.camera.center();
    const Vec3<double> d{v.camera.R[2][0], v.camera.R[2][1], v.camera.R[2][2]};  // camera +z
    for (int r = 0; r < 3; ++r) {
      for (int k = 0; k < 3; ++k) {
        const double p = (r == k ? 1.0 : 0.0) - d[r] * d[k];
        A[r][k] += p;
        rhs[r] += p * c[k];
      }
    }
  }
  const std::optional<Vec3<double>> x = solve3(A, rhs);
  if (!x) return std::nullopt;
  // Only a point in front of most cameras is one they look at; and only one the axes pass near:
  // their RMS distance from it under half the cameras' RMS distance from their mean. Near-parallel
  // axes with a few degrees of pose noise (a forward-facing rig) have a least-squares point too,
  // but about as far from the axes as the cameras are apart (measured 0.98 to 1.0 x their
  // spread; fox's orbit 0.24, figurine's 0.02).
  std::size_t in_front = 0;
  double off_axis2 = 0, spread2 = 0;
  const Vec3<double> mean = mean_center(views);
  for (const View& v : views) {
    const Vec3<double> p = v.camera.R * *x + v.camera.t;
    in_front += p.z > 0;
    off_axis2 += p.x * p.x + p.y * p.y;
    spread2 += dot(v.camera.center() - mean, v.camera.center() - mean);
  }
  if (2 * in_front <= views.size() || !(off_axis2 < 0.25 * spread2)) return std::nullopt;
  return around(*x, views);
}

}  // namespace

std::optional<SceneBounds> known_scene_bounds(const Dataset& data) {
  if (data.bounds) return *data.bounds;
  if (data.points) {
    if (auto b = points_bounds(*data.points)) return *b;
  }
  return look_at_bounds(data.train);
}

SceneBounds scene_bounds(const Dataset& data) {
  if (auto b = known_scene_bounds(data)) return *b;
  if (data.train.empty()) return SceneBounds{};
  return around(mean_center(data.train), data.train);
}

}  // namespace splat
