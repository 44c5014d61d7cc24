#pragma once
// Small fixed-size vector and matrix types, templated on the scalar so the CPU reference can run
// in float (training) and double (gradient checks).
#include <array>
#include <cmath>

namespace splat {

template <class T>
struct Vec3 {
  T x{}, y{}, z{};
  constexpr T& operator[](int i) { return i == 0 ? x : (i == 1 ? y : z); }
  constexpr const T& operator[](int i) const { return i == 0 ? x : (i == 1 ? y : z); }
  friend constexpr Vec3 operator+(Vec3 a, Vec3 b) { return {a.x + b.x, a.y + b.y, a.z + b.z}; }
  friend constexpr Vec3 operator-(Vec3 a, Vec3 b) { return {a.x - b.x, a.y - b.y, a.z - b.z}; }
  friend constexpr Vec3 operator*(T s, Vec3 a) { return {s * a.x, s * a.y, s * a.z}; }
  friend constexpr Vec3 operator*(Vec3 a, T s) { return {s * a.x, s * a.y, s * a.z}; }
  constexpr Vec3& operator+=(Vec3 b) {
    x += b.x;
    y += b.y;
    z += b.z;
    return *this;
  }
};

template <class T>
constexpr T dot(Vec3<T> a, Vec3<T> b) {
  return a.x * b.x + a.y * b.y + a.z * b.z;
}
template <class T>
constexpr Vec3<T> cross(Vec3<T> a, Vec3<T> b) {
  return {a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x};
}
template <class T>
T norm(Vec3<T> a) {
  return std::sqrt(dot(a, a));
}
template <class T>
Vec3<T> normalize(Vec3<T> a) {
  return a * (T(1) / norm(a));
}

// Row-major 3x3 matrix: m[r][c].
template <class T>
struct Mat3 {
  std::array<std::array<T, 3>, 3> m{};
  static constexpr Mat3 identity() {
    Mat3 r;
    r.m[0][0] = r.m[1][1] = r.m[2][2] = T(1);
    return r;
  }
  constexpr std::array<T, 3>& operator[](int r) { return m[r]; }
  constexpr const std::array<T, 3>& operator[](int r) const { return m[r]; }
};

template <class T>
constexpr Mat3<T> operator*(const Mat3<T>& a, const Mat3<T>& b) {
  Mat3<T> r;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 3; ++k) r[i][j] += a[i][k] * b[k][j];
  return r;
}
template <class T>
constexpr Vec3<T> operator*(const Mat3<T>& a, Vec3<T> v) {
  return {a[0][0] * v.x + a[0][1] * v.y + a[0][2] * v.z,
          a[1][0] * v.x + a[1][1] * v.y + a[1][2] * v.z,
          a[2][0] * v.x + a[2][1] * v.y + a[2][2] * v.z};
}
template <class T>
constexpr Mat3<T> transpose(const Mat3<T>& a) {
  Mat3<T> r;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) r[i][j] = a[j][i];
  return r;
}
template <class T>
constexpr Mat3<T> operator+(const Mat3<T>& a, const Mat3<T>& b) {
  Mat3<T> r;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) r[i][j] = a[i][j] + b[i][j];
  return r;
}

template <class T>
constexpr T sigmoid(T x) {
  return T(1) / (T(1) + std::exp(-x));
}
template <class T>
constexpr T logit(T p) {
  return std::log(p / (T(1) - p));
}

}  // namespace splat
