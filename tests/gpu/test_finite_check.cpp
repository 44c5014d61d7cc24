// The CUDA backend's divergence check (Backend::non_finite_group, a counting kernel on the device)
// against the host's answer for the same state: every group, NaN and both infinities, in the first
// and the last slot, and a finite state.
#include <gtest/gtest.h>

#include <limits>

#include "core/finite.h"
#include "render/backend.h"
#include "train/backend_factory.h"
#include "train/config.h"

namespace splat {
namespace {

TrainState finite_state(std::size_t n) {
  TrainState st;
  st.params.sh_degree = 1;
  st.params.resize(n);
  st.params.for_each_group([](const char*, std::vector<float>& v) {
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = 0.01f * float(i % 97) - 0.3f;
  });
  for (std::size_t i = 0; i < n; ++i) st.params.quats[i * 4] = 1.0f;
  st.adam_m = st.adam_v = st.params;
  return st;
}

TEST(FiniteCheckGpu, NamesTheFirstGroupWithNanOrInfLikeTheHost) {
  BackendConfig bc;
  bc.type = BackendKind::Cuda;
  auto backend = make_backend(bc);
  const std::size_t n = 70000;  // more than one grid-stride pass
  TrainState st = finite_state(n);
  backend->set_state(st);
  EXPECT_EQ(backend->non_finite_group(), "");
  const float bad[] = {std::numeric_limits<float>::quiet_NaN(),
                       std::numeric_limits<float>::infinity(),
                       -std::numeric_limits<float>::infinity()};
  std::size_t group = 0;
  std::vector<std::string> names;
  st.params.for_each_group([&](const char* name, std::vector<float>&) { names.push_back(name); });
  for (const std::string& name : names) {
    for (const bool last : {false, true}) {
      TrainState broken = finite_state(n);
      std::size_t g = 0;
      broken.params.for_each_group([&](const char*, std::vector<float>& v) {
        if (g++ == group) v[last ? v.size() - 1 : 0] = bad[(group + last) % 3];
      });
      backend->set_state(broken);
      EXPECT_EQ(backend->non_finite_group(), name) << (last ? "last slot" : "first slot");
      EXPECT_EQ(find_non_finite(broken.params)->group, name);
    }
    ++group;
  }
  // Adam moments are not parameters: a NaN there is not a divergence of the model.
  TrainState moments = finite_state(n);
  moments.adam_v.means[5] = std::numeric_limits<float>::quiet_NaN();
  backend->set_state(moments);
  EXPECT_EQ(backend->non_finite_group(), "");
}

}  // namespace
}  // namespace splat
