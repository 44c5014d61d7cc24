#pragma once
// Shared by the GPU parity tests: random scenes, poisoned device buffers, and the comparison
// measures (relative L2, cosine, max error) with a report naming the quantity and worst element.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/camera.h"
#include "core/gaussians.h"
#include "cuda/buffer.h"
#include "engine/backend.h"

namespace splat::test {

struct Scene {
  Gaussians gaussians;
  Camera camera;
};

// n splats in front of a camera looking at the origin, image width x height, SH degree 3,
// random rotations and anisotropic scales, opacities in (0.05, 0.95). A few splats are placed
// behind the camera and far outside the view so culling paths run too.
Scene random_scene(int n, int width, int height, std::uint32_t seed);

// A device buffer filled with NaN bit patterns (0xFF bytes): an output a kernel forgets to
// write stays NaN and fails every comparison.
template <class T>
cuda::DeviceBuffer<T> poisoned(std::size_t n) {
  cuda::DeviceBuffer<T> b(n);
  SPLAT_CUDA_CHECK(cudaMemset(b.data(), 0xFF, b.bytes()));
  return b;
}

template <class T>
cuda::DeviceBuffer<T> to_device(const std::vector<T>& host) {
  cuda::DeviceBuffer<T> b;
  b.upload(host);
  return b;
}

struct Agreement {
  double rel_l2 = 0, cosine = 1, max_abs = 0;
  std::size_t worst = 0, non_finite = 0;
};
Agreement agreement(const std::vector<float>& got, const std::vector<double>& want);

// Tolerances for one comparison; `why` is the one-line reason printed with a failure.
struct Tolerance {
  double rel_l2, min_cosine, max_abs;
  const char* why;
};

// EXPECTs got ~ want within tol; the message names `what`, the measures and the worst element.
void expect_agree(const std::string& what,
                  const std::vector<float>& got,
                  const std::vector<double>& want,
                  const Tolerance& tol);
template <class T>
void expect_agree(const std::string& what,
                  const std::vector<float>& got,
                  const std::vector<T>& want,
                  const Tolerance& tol) {
  expect_agree(what, got, std::vector<double>(want.begin(), want.end()), tol);
}

// Random vector in [-1, 1] (for vector-Jacobian products).
std::vector<float> random_vector(std::size_t n, std::uint32_t seed);

// The same floats, bit for bit (NaN payloads included).
bool bit_equal(const std::vector<float>& a, const std::vector<float>& b);

// A model's five parameter groups in Gaussians::for_each_group's order (means, log_scales, quats,
// raw_opacity, sh), copied.
std::vector<std::vector<float>> groups(const Gaussians& g);

// Every model array of a cuda backend (SH degree 3) holds n splats and is zero past them. The SH
// gradients (array 9) are allocated by the first step that sums gradients (a batch, several
// ranks); `sh_grads_held` false: they must not be.
void expect_zero_tails(const Backend& b,
                       std::size_t n,
                       const std::string& tag,
                       bool sh_grads_held = false);

}  // namespace splat::test
