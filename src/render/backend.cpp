#include "render/backend.h"

#include <bit>
#include <cmath>
#include <cstdint>

#include "core/error.h"
#include "core/finite.h"
#include "render/state_digest.h"

namespace splat {

std::uint64_t state_digest(const TrainState& st) {
  std::uint64_t sum = 0, index = 0;
  auto add = [&](const std::vector<float>& v) {
    for (std::size_t i = 0; i < v.size(); i += 2, ++index) {
      const std::uint64_t hi = i + 1 < v.size() ? std::bit_cast<std::uint32_t>(v[i + 1]) : 0;
      sum += digest_term(std::bit_cast<std::uint32_t>(v[i]) | hi << 32, index);
    }
  };
  for (const Gaussians* g : {&st.params, &st.adam_m, &st.adam_v})
    g->for_each_group([&](const char*, const std::vector<float>& v) { add(v); });
  // The appearance transforms and moments follow as three more groups; a state without them has
  // the digest it always had.
  for (const std::vector<float>* v : {&st.appearance.params, &st.appearance.m, &st.appearance.v})
    add(*v);
  return digest_finish(sum, index, st.params.sh_degree, st.adam_step);
}

std::uint64_t Backend::state_digest() const {
  return splat::state_digest(state());
}

std::string Backend::non_finite_group() const {
  const TrainState st = state();
  if (const auto bad = find_non_finite(st.params)) return bad->group;
  for (const float x : st.appearance.params)
    if (!std::isfinite(x)) return "appearance";
  return "";
}

void Backend::update_filter3d(std::span<const Camera>) {
  throw Error("model.antialiased: the " + name() +
              " backend has no Mip-Splatting 3D filter (use backend.type = \"cpu\")");
}

}  // namespace splat
