// The CUDA renderer against the golden vectors (../shared/golden), with the tolerances the CPU
// reference is held to (tests/golden_util.h).
#include "cuda/renderer.h"
#include "golden_util.h"
#include "parity_util.h"

namespace splat {
namespace {

using namespace test;

template <class T>
std::vector<double> download_as_double(const T* device, std::size_t n) {
  std::vector<T> host(n);
  SPLAT_CUDA_CHECK(cudaMemcpy(host.data(), device, n * sizeof(T), cudaMemcpyDeviceToHost));
  return std::vector<double>(host.begin(), host.end());
}

class GoldenCuda : public ::testing::TestWithParam<std::string> {};

TEST_P(GoldenCuda, MatchesGolden) {
  SPLAT_REQUIRE_SHARED("golden");
  const GoldenCase c = load_case(GetParam());
  const Gaussians g = golden_params<float>(c.j);
  const int n = int(g.size());
  std::vector<cuda::DeviceBuffer<float>> params;
  g.for_each_group(
      [&](const char*, const std::vector<float>& v) { params.push_back(to_device(v)); });
  const cuda::GaussianPtrs in{params[0].data(), params[1].data(), params[2].data(),
                              params[3].data(), params[4].data()};
  std::vector<cuda::DeviceBuffer<float>> grads;
  g.for_each_group([&](const char*, const std::vector<float>& v) {
    grads.push_back(poisoned<float>(v.size()));
  });
  const cuda::GaussianGradPtrs out{grads[0].data(), grads[1].data(), grads[2].data(),
                                   grads[3].data(), grads[4].data()};

  cuda::SyncLog syncs;
  cuda::StageTimer timer(false);
  cuda::Renderer renderer(nullptr, syncs, timer);
  const cuda::ForwardState fwd = renderer.forward(in, n, g.K(), c.cam, c.rs);
  const auto v_image = to_device(c.j["loss"]["v_image"].get<std::vector<float>>());
  const auto v_alpha = to_device(c.j["loss"]["v_alpha"].get<std::vector<float>>());
  renderer.backward(in, fwd, {v_image.data(), v_alpha.data()}, out);
  SPLAT_CUDA_CHECK(cudaDeviceSynchronize());

  const std::size_t px = std::size_t(c.cam.width) * c.cam.height;
  GoldenResult r;
  r.image = download_as_double(fwd.raster.out.image, px * 3);
  r.alpha = download_as_double(fwd.raster.out.alpha, px);
  const auto& proj = fwd.project.out;
  const auto radii = download_as_double(proj.radii, std::size_t(n) * 2);
  r.radii.assign(radii.begin(), radii.end());
  r.means2d = download_as_double(proj.means2d, std::size_t(n) * 2);
  r.depths = download_as_double(proj.depths, std::size_t(n));
  r.conics = download_as_double(proj.conics, std::size_t(n) * 3);
  r.grads.sh_degree = g.sh_degree;
  int k = 0;
  r.grads.for_each_group([&](const char*, std::vector<double>& v) {
    v = download_as_double(grads[k].data(), grads[k].size());
    ++k;
  });
  check_against_golden(GetParam() + " [cuda]", c, r);
}

INSTANTIATE_TEST_SUITE_P(Cases, GoldenCuda, ::testing::ValuesIn(kGoldenCases));

}  // namespace
}  // namespace splat
