#include "strategy/fastgs/fastgs_tick_cpu.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "core/error.h"
#include "cpu/appearance_cpu.h"
#include "cpu/loss_cpu.h"
#include "cpu/refine_cpu.h"
#include "engine/target.h"
#include "strategy/adc/adc_tick_cpu.h"  // compact, adc_reset_opacity

namespace splat {
namespace cpu {

std::vector<std::uint8_t> error_mask(const std::vector<float>& render,
                                     const std::vector<float>& target,
                                     const std::vector<float>& weights,
                                     float tau) {
  const std::size_t pixels = render.size() / 3;
  auto seen = [&](std::size_t p) { return weights.empty() || weights[p] != 0.0f; };
  std::vector<float> e(pixels);
  float lo = INFINITY, hi = -INFINITY;
  for (std::size_t p = 0; p < pixels; ++p) {
    float sum = 0;
    for (int c = 0; c < 3; ++c) sum += std::abs(render[3 * p + c] - target[3 * p + c]);
    e[p] = sum / 3.0f;
    if (!seen(p)) continue;
    lo = std::min(lo, e[p]);
    hi = std::max(hi, e[p]);
  }
  std::vector<std::uint8_t> mask(pixels);
  for (std::size_t p = 0; p < pixels; ++p)
    mask[p] = seen(p) && fastgs::in_error_mask(e[p], lo, hi, tau);
  return mask;
}

std::vector<std::uint32_t> masked_pixel_counts(const RenderState<float>& fwd,
                                               const std::vector<std::uint8_t>& mask,
                                               int width,
                                               int height,
                                               const RasterSettings& rs) {
  // One counter per intersection, each written by its tile's thread only, then summed per splat.
  const Intersections& isect = fwd.isect;
  std::vector<std::uint32_t> per_isect(isect.keys.size(), 0);
  for_each_pixel<float>(width, height, isect, [&](std::uint32_t tile, int x, int y) {
    if (!mask[std::size_t(y) * width + x]) return;
    blend_pixel(fwd.projected, isect, tile, float(x) + 0.5f, float(y) + 0.5f, rs,
                [&](const Contribution<float>&, std::uint32_t k) { ++per_isect[k]; });
  });
  std::vector<std::uint32_t> count(fwd.projected.size(), 0);
  for (std::size_t k = 0; k < per_isect.size(); ++k)
    count[isect.gaussian_from_isect[k]] += per_isect[k];
  return count;
}

FastgsScores score_views(const TrainState& st,
                         const std::vector<const Image8*>& images,
                         const FastgsViews& views) {
  const std::size_t n = st.params.size();
  FastgsScores out{std::vector<std::uint32_t>(n, 0), std::vector<float>(n, 0.0f)};
  const std::uint32_t area = std::uint32_t(views.factor) * std::uint32_t(views.factor);
  for (std::size_t v = 0; v < views.cameras.size(); ++v) {
    const Camera& cam = *views.cameras[v];
    const std::size_t index = std::size_t(views.images.at(v));
    const Image8& img = *images.at(index);
    if (img.width != cam.width || img.height != cam.height)
      throw Error("fastgs score pass: image " + std::to_string(index) + " is " +
                  std::to_string(img.width) + "x" + std::to_string(img.height) +
                  " but its camera is " + std::to_string(cam.width) + "x" +
                  std::to_string(cam.height));
    const RenderState<float> fwd = render_fwd(st.params, cam, views.raster, st.filter3d);
    // The render as the loss sees it, and the loss's target and mask.
    const std::vector<float> render =
        st.appearance.empty()
            ? fwd.raster.image
            : appearance_fwd(&st.appearance.params[kAppearanceFloats * index], fwd.raster.image);
    const std::vector<float> target = target_image(img).data;
    const std::vector<float> weights = img.masked() ? target_weights(img) : std::vector<float>{};
    // FastGS's view score: the 3DGS loss with its SSIM weight 0.2, whatever train.ssim_lambda.
    const float loss =
        photometric_loss(render, target, cam.width, cam.height, 0.2f, false, LossKind::L1Ssim,
                         weights.empty() ? nullptr : weights.data())
            .loss;
    const std::vector<std::uint8_t> mask = error_mask(render, target, weights, views.loss_thresh);
    const std::vector<std::uint32_t> c =
        masked_pixel_counts(fwd, mask, cam.width, cam.height, views.raster);
    for (std::size_t i = 0; i < n; ++i) {
      const std::uint32_t ci = c[i] * area;  // in full-resolution pixels
      out.count[i] += ci;
      out.score[i] += loss * float(ci);
    }
  }
  return out;
}

std::vector<bool> prune_draw(std::uint64_t seed,
                             std::span<const float> prune_score,
                             const std::vector<bool>& eligible,
                             std::size_t draws) {
  const std::size_t n = prune_score.size();
  std::vector<float> key(n);
  std::vector<std::uint32_t> order;
  for (std::size_t i = 0; i < n; ++i) {
    key[i] = fastgs::prune_key(seed, i, prune_score[i], eligible[i]);
    if (eligible[i]) order.push_back(std::uint32_t(i));
  }
  draws = std::min(draws, order.size());
  auto before = [&](std::uint32_t a, std::uint32_t b) {
    return key[a] != key[b] ? key[a] > key[b] : a < b;
  };
  std::nth_element(order.begin(), order.begin() + std::ptrdiff_t(draws), order.end(), before);
  std::vector<bool> drawn(n, false);
  for (std::size_t j = 0; j < draws; ++j) drawn[order[j]] = true;
  return drawn;
}

namespace {

// The scores min-max normalized to [0, 1] (FastGS's pruning score).
std::vector<float> pruning_scores(const std::vector<float>& s) {
  std::vector<float> ps(s.size(), 0.0f);
  if (s.empty()) return ps;
  const auto [lo, hi] = std::minmax_element(s.begin(), s.end());
  for (std::size_t i = 0; i < s.size(); ++i) ps[i] = fastgs::normalized(s[i], *lo, *hi);
  return ps;
}

void check_size(const char* what, std::size_t got, std::size_t n) {
  if (got != n)
    throw Error(std::string("fastgs tick: ") + what + " for " + std::to_string(got) +
                " splats, the model has " + std::to_string(n));
}

}  // namespace

RefineStats fastgs_refine(TrainState& st,
                          adc::Stats& stats,
                          std::span<const float> grad2d_abs,
                          const FastgsScores& scores,
                          std::uint32_t views,
                          const FastgsRefineSettings& s) {
  const std::size_t n = st.params.size();
  check_size("statistics", stats.size(), n);
  check_size("abs statistics", grad2d_abs.size(), n);
  check_size("scores", scores.count.size(), n);
  if (views == 0) throw Error("fastgs_refine: no views were scored");
  const fastgs::Thresholds t = fastgs::thresholds(s, views);
  std::vector<adc::Decision> d(n);
  RefineStats r;
  std::size_t candidates = 0;  // on the grown set
  std::vector<bool> kept(n);
  for (std::size_t i = 0; i < n; ++i) {
    d[i] = fastgs::decide(stats.grad2d[i], grad2d_abs[i], stats.count[i], scores.count[i],
                          adc::max_log_scale(&st.params.log_scales[3 * i]),
                          st.params.raw_opacity[i], t);
    r.cloned += d[i].action == adc::Action::Clone;
    r.split += d[i].action == adc::Action::Split;
    kept[i] = d[i].action != adc::Action::Split;
    candidates += d[i].action == adc::Action::Split   ? 2 * std::size_t(d[i].prune_children)
                  : d[i].action == adc::Action::Clone ? 2 * std::size_t(d[i].prune_self)
                                                      : std::size_t(d[i].prune_self);
  }
  // FastGS removes the candidates among floor(candidates / 2) draws; only splats that were there
  // before the tick and stay can be drawn, each weighted by its own pruning score.
  const std::vector<bool> drawn =
      prune_draw(s.seed, pruning_scores(scores.score), kept, candidates / 2);
  std::vector<Source> out;
  for (std::size_t i = 0; i < n; ++i)
    if (kept[i] && !(drawn[i] && d[i].prune_self)) out.push_back({std::uint32_t(i), Kind::Kept});
  r.pruned = n - r.split - out.size();
  for (std::size_t i = 0; i < n; ++i)
    if (d[i].action == adc::Action::Clone) out.push_back({std::uint32_t(i), Kind::Clone});
  for (Kind child : {Kind::Child0, Kind::Child1})
    for (std::size_t i = 0; i < n; ++i)
      if (d[i].action == adc::Action::Split) out.push_back({std::uint32_t(i), child});
  compact(st, out, s.seed);
  adc_reset_opacity(st, s.opacity_cap);
  r.count = out.size();
  stats.reset(r.count);
  return r;
}

RefineStats fastgs_final_prune(TrainState& st,
                               adc::Stats& stats,
                               const FastgsScores& scores,
                               float min_opacity,
                               float max_score) {
  const std::size_t n = st.params.size();
  check_size("scores", scores.score.size(), n);
  const float min_raw = adc::logit_threshold(double(min_opacity));
  const std::vector<float> ps = pruning_scores(scores.score);
  std::vector<Source> out;
  for (std::size_t i = 0; i < n; ++i)
    if (!(st.params.raw_opacity[i] < min_raw) && !(ps[i] > max_score))
      out.push_back({std::uint32_t(i), Kind::Kept});
  compact(st, out, 0);
  stats.reset(out.size());
  return {.pruned = n - out.size(), .count = out.size()};
}

}  // namespace cpu

RefineStats FastgsTick::run_cpu(cpu::RefineContext& ctx) {
  adc::Stats& stats = ctx.adc_stats;
  if (stats.size() != ctx.state.params.size()) stats.reset(ctx.state.params.size());
  const FastgsScores scores = cpu::score_views(ctx.state, ctx.images, views);
  if (stats.grad2d_abs.size() != stats.size()) stats.grad2d_abs.assign(stats.size(), 0.0f);
  return cpu::fastgs_refine(ctx.state, stats, stats.grad2d_abs, scores,
                            std::uint32_t(views.cameras.size()), settings);
}

RefineStats FastgsFinalTick::run_cpu(cpu::RefineContext& ctx) {
  adc::Stats& stats = ctx.adc_stats;
  const FastgsScores scores = cpu::score_views(ctx.state, ctx.images, views);
  return cpu::fastgs_final_prune(ctx.state, stats, scores, min_opacity, max_score);
}

}  // namespace splat
