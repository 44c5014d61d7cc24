#include "engine/backend.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <string>

#include "core/error.h"
#include "core/finite.h"
#include "engine/state_digest.h"

namespace splat {

RefineStats RefineTick::run_cuda(cuda::RefineContext&) {
  throw Error("this refine tick has no CUDA implementation (its strategy's <name>_tick_cuda.cpp)");
}

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
  // Then the pose corrections, their moments and their step counts (as floats' bits).
  for (const std::vector<float>* v : {&st.pose.params, &st.pose.m, &st.pose.v}) add(*v);
  std::vector<float> steps(st.pose.steps.size());
  for (std::size_t i = 0; i < steps.size(); ++i) steps[i] = std::bit_cast<float>(st.pose.steps[i]);
  add(steps);
  return digest_finish(sum, index, st.params.sh_degree, st.adam_step);
}

void check_appearance(const AppearanceState& a, std::size_t images, const std::string& backend) {
  if (a.params.size() % kAppearanceFloats != 0 || a.m.size() != a.params.size() ||
      a.v.size() != a.params.size())
    throw Error(backend + " backend: appearance state of " + std::to_string(a.params.size()) +
                " parameters and " + std::to_string(a.m.size()) + " / " +
                std::to_string(a.v.size()) + " moments (12 of each per training image)");
  check_appearance_images(a.images(), images, backend);
}

void check_appearance_images(std::size_t transforms,
                             std::size_t images,
                             const std::string& backend) {
  if (transforms > 0 && images > 0 && transforms != images)
    throw Error(backend + " backend: " + std::to_string(transforms) +
                " appearance transforms for " + std::to_string(images) + " training images");
}

void check_pose(const PoseState& p, std::size_t images, const std::string& backend) {
  if (p.params.size() % kPoseFloats != 0 || p.m.size() != p.params.size() ||
      p.v.size() != p.params.size() || p.steps.size() != p.images())
    throw Error(backend + " backend: pose state of " + std::to_string(p.params.size()) +
                " parameters, " + std::to_string(p.m.size()) + " / " + std::to_string(p.v.size()) +
                " moments and " + std::to_string(p.steps.size()) +
                " step counts (9 of each and one count per training image)");
  check_pose_images(p.images(), images, backend);
}

void check_pose_images(std::size_t corrections, std::size_t images, const std::string& backend) {
  if (corrections > 0 && images > 0 && corrections != images)
    throw Error(backend + " backend: " + std::to_string(corrections) + " pose corrections for " +
                std::to_string(images) + " training images");
}

void check_adc_stats(const adc::Stats& s, const std::string& backend) {
  if (!s.grad2d_abs.empty() && s.grad2d_abs.size() != s.size())
    throw Error(backend + " backend: " + std::to_string(s.grad2d_abs.size()) +
                " absolute gradient sums for ADC statistics of " + std::to_string(s.size()) +
                " splats");
}

std::uint64_t Backend::state_digest() const {
  return splat::state_digest(state());
}

std::vector<std::string> Backend::diverged_groups(const DivergenceLimits& limits) const {
  const TrainState st = state();
  std::vector<std::string> found;
  const auto check = [&](const std::string& name, const std::vector<float>& v) {
    const auto range = limits.range(name);
    const auto outside = [&](std::pair<float, float> r) {
      return std::size_t(std::ranges::count_if(v, [&](float x) { return !within(x, r); }));
    };
    if (DivergenceLimits::diverged(outside(DivergenceLimits::hard), outside(range), v.size()))
      found.push_back(name);
  };
  st.params.for_each_group(check);
  check("appearance", st.appearance.params);
  check("pose", st.pose.params);
  return found;
}

void Backend::update_filter3d(std::span<const Camera>) {
  throw Error("model.antialiased: the " + name() +
              " backend has no Mip-Splatting 3D filter (use backend.type = \"cpu\")");
}

}  // namespace splat
