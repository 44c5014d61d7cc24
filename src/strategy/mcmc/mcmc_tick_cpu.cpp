#include "strategy/mcmc/mcmc_tick_cpu.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "core/math.h"
#include "cpu/refine_cpu.h"
#include "engine/mcmc.h"
#include "strategy/adc/adc_tick_cpu.h"

namespace splat {
namespace cpu {

std::vector<std::uint32_t> sample_by_weight(const std::vector<double>& weight,
                                            std::size_t count,
                                            std::uint64_t seed,
                                            std::uint64_t stream) {
  std::vector<double> cdf(weight.size());
  double total = 0;
  for (std::size_t i = 0; i < weight.size(); ++i) cdf[i] = total += weight[i];
  std::vector<std::uint32_t> out(count);
  for (std::size_t j = 0; j < count; ++j) {
    const double u = double(mcmc::uniform01(seed, stream, j)) * total;
    const auto it = std::upper_bound(cdf.begin(), cdf.end(), u);
    out[j] = std::uint32_t(std::min<std::size_t>(it - cdf.begin(), weight.size() - 1));
  }
  return out;
}

namespace {

// Applies the relocation correction to each distinct source (copies = times sampled + 1) and
// zeroes its Adam moments. Returns nothing: the sources' new values are what copies take.
void correct_sources(TrainState& st, const std::vector<std::uint32_t>& sources, float min_opacity) {
  std::vector<int> times(st.params.size(), 0);
  for (std::uint32_t s : sources) ++times[s];
  for (std::size_t i = 0; i < times.size(); ++i) {
    if (times[i] == 0) continue;
    const mcmc::Relocated r = mcmc::relocate(sigmoid(st.params.raw_opacity[i]), times[i] + 1);
    const float o = std::clamp(r.opacity, min_opacity, 1.0f - 1e-6f);
    st.params.raw_opacity[i] = std::log(o / (1.0f - o));
    for (int k = 0; k < 3; ++k) st.params.log_scales[i * 3 + k] += std::log(r.scale_factor);
  }
  for_each_group3(
      st, [&](std::vector<float>&, std::vector<float>& m, std::vector<float>& v, std::size_t w) {
        for (std::size_t i = 0; i < times.size(); ++i)
          if (times[i])
            for (std::size_t k = 0; k < w; ++k) m[i * w + k] = v[i * w + k] = 0.0f;
      });
}

// Copies splat src into slot dst (parameters), with zero Adam moments.
void copy_slot(TrainState& st, std::uint32_t src, std::size_t dst) {
  for_each_group3(
      st, [&](std::vector<float>& p, std::vector<float>& m, std::vector<float>& v, std::size_t w) {
        for (std::size_t k = 0; k < w; ++k) {
          p[dst * w + k] = p[std::size_t(src) * w + k];
          m[dst * w + k] = v[dst * w + k] = 0.0f;
        }
      });
}

}  // namespace

RefineStats mcmc_refine(TrainState& st, const McmcRefineSettings& s, const adc::Stats& grads) {
  RefineStats stats;
  const std::size_t n = st.params.size();
  if (s.grad_power > 0 && grads.size() != n)
    throw Error("mcmc_refine: " + std::to_string(grads.size()) + " gradient statistics for " +
                std::to_string(n) + " splats");
  const auto weight = [&](std::size_t i, double opacity) {
    return s.grad_power > 0
               ? mcmc::sample_weight(opacity, grads.grad2d[i], grads.count[i], s.grad_power)
               : opacity;
  };
  // Relocation: dead slots (in index order) take copies of live splats sampled by weight.
  std::vector<std::uint32_t> dead;
  std::vector<std::uint32_t> alive;
  std::vector<double> alive_weight;
  for (std::size_t i = 0; i < n; ++i) {
    const float o = sigmoid(st.params.raw_opacity[i]);
    if (o <= s.min_opacity) {
      dead.push_back(std::uint32_t(i));
    } else {
      alive.push_back(std::uint32_t(i));
      alive_weight.push_back(weight(i, o));
    }
  }
  if (!dead.empty() && !alive.empty()) {
    std::vector<std::uint32_t> sources =
        sample_by_weight(alive_weight, dead.size(), s.seed, mcmc::kRelocate);
    for (std::uint32_t& src : sources) src = alive[src];
    correct_sources(st, sources, s.min_opacity);
    for (std::size_t j = 0; j < dead.size(); ++j) copy_slot(st, sources[j], dead[j]);
    stats.dead = dead.size();
  }
  // Growth: append copies of splats sampled by weight up to the target count.
  if (s.target_count > n && n > 0) {
    const std::size_t add = s.target_count - n;
    std::vector<double> weights(n);
    for (std::size_t i = 0; i < n; ++i)
      weights[i] = weight(i, sigmoid(double(st.params.raw_opacity[i])));
    const std::vector<std::uint32_t> sources = sample_by_weight(weights, add, s.seed, mcmc::kAdd);
    correct_sources(st, sources, s.min_opacity);
    for (Gaussians* g : {&st.params, &st.adam_m, &st.adam_v}) g->resize(n + add);
    for (std::size_t j = 0; j < add; ++j) copy_slot(st, sources[j], n + j);
    stats.added = add;
  }
  stats.count = st.params.size();
  return stats;
}

}  // namespace cpu

RefineStats McmcTick::run_cpu(cpu::RefineContext& ctx) {
  if (settings.grad_power > 0) cpu::gather_adc_stats(ctx);
  const RefineStats r = cpu::mcmc_refine(ctx.state, settings, ctx.adc_stats);
  ctx.adc_stats.reset(ctx.state.params.size());
  return r;
}

}  // namespace splat
