// FastGS's ticks on the CUDA backend (fastgs_strategy.h), with the kernels of
// fastgs_refine_cuda.h and ADC's scan and compaction (adc_refine_cuda.h); the CPU ticks
// (fastgs_tick_cpu.cpp) are the reference they follow.
#include <climits>
#include <string>

#include "core/error.h"
#include "core/gaussians.h"  // sh_coeffs
#include "cuda/appearance_cuda.h"
#include "cuda/buffer.h"
#include "cuda/loss_cuda.h"
#include "cuda/refine_cuda.h"
#include "cuda/renderer.h"
#include "cuda/training_images.h"
#include "distributed/communicator.h"
#include "engine/loss.h"
#include "strategy/fastgs/fastgs_refine_cuda.h"
#include "strategy/fastgs/fastgs_strategy.h"

namespace splat {

namespace {

// What the ticks keep between ticks (cuda::RefineScratch).
struct FastgsTickScratch {
  cuda::ScratchGroup<cuda::FastgsScratch, int> splats;
  cuda::ScratchGroup<cuda::FastgsPixels, std::pair<int, int>> pixels;
  cuda::ScratchGroup<cuda::AdcScratch, int> adc;
  cuda::Pinned<std::int32_t> totals_host{cuda::kAdcTotals};
  cuda::Pinned<float> sums_host{2};
  std::size_t bytes() const { return splats.bytes() + pixels.bytes() + adc.bytes(); }
};

void check_context(const cuda::RefineContext& ctx, const char* who) {
  if (!ctx.renderer || !ctx.images)
    throw Error(std::string(who) + ": the refine context has no renderer or training images");
  if (ctx.comm.size() > 1)
    throw Error(std::string(who) + ": runs on one GPU only (the score pass is per rank)");
  if (ctx.model.n > INT_MAX / 3)
    throw Error(std::string(who) + ": " + std::to_string(ctx.model.n) +
                " splats exceed the scan's int range");
}

// The score pass (cpu::score_views) of the model's n >= 1 splats: returns the tick's scratch with C
// and S over the views in count and score. Two host waits per view: the exact forward's
// intersection count, and the view's loss.
const cuda::FastgsScratch& score_views(cuda::RefineContext& ctx,
                                       const FastgsViews& views,
                                       FastgsTickScratch& keep,
                                       const char* who) {
  using namespace cuda;
  check_context(ctx, who);
  if (views.cameras.empty()) throw Error(std::string(who) + ": no views to score");
  DeviceModel& model = ctx.model;
  // The forwards may move the renderer's scratch, whose pointers a captured step graph holds.
  ++model.generation;
  const int n = model.n;
  const FastgsScratch& s = keep.splats.ensure(n);
  fastgs_clear_scores(n, s, ctx.stream);
  const std::uint32_t area = std::uint32_t(views.factor) * std::uint32_t(views.factor);
  for (std::size_t v = 0; v < views.cameras.size(); ++v) {
    const Camera& cam = *views.cameras[v];
    const int index = views.images.at(v);
    if (index < 0 || std::size_t(index) >= ctx.images->count())
      throw Error("fastgs score pass: image " + std::to_string(index) + " of " +
                  std::to_string(ctx.images->count()));
    const DeviceImage& info = ctx.images->at(index);
    if (info.width != cam.width || info.height != cam.height)
      throw Error("fastgs score pass: image " + std::to_string(index) + " is " +
                  std::to_string(info.width) + "x" + std::to_string(info.height) +
                  " but its camera is " + std::to_string(cam.width) + "x" +
                  std::to_string(cam.height));
    const ForwardState fwd =
        ctx.renderer->forward(model.params.in(), n, sh_coeffs(model.sh_degree), cam, views.raster,
                              Sizing::Exact, nullptr, model.filter3d());
    PerPixel& px = ctx.renderer->pixels();
    const FastgsPixels& pix = keep.pixels.ensure({cam.width, cam.height});
    const DeviceImage& target = ctx.images->fetch(index);
    // The render as the loss sees it (through the image's appearance transform when on).
    const std::size_t pixels = std::size_t(cam.width) * std::size_t(cam.height);
    const float* seen = px.image;
    if (model.appearance.on()) {
      appearance_forward({model.appearance.params.data(), nullptr, index, nullptr}, px.image,
                         pix.compensated, pixels, ctx.stream);
      seen = pix.compensated;
    }
    // FastGS's view score: the 3DGS loss with its SSIM weight 0.2, whatever train.ssim_lambda.
    const LossParams lp{cam.width, cam.height, 0.2f, LossKind::L1Ssim};
    photometric_loss(lp, seen, LossTarget{target.pixels.data(), target.format, target.norm.data()},
                     {px.v_image, px.sums, px.loss_scratch}, ctx.stream);
    SPLAT_CUDA_CHECK(cudaMemcpyAsync(keep.sums_host.get(), px.sums, 2 * sizeof(float),
                                     cudaMemcpyDeviceToHost, ctx.stream));
    fastgs_error_mask(cam.width, cam.height, seen, target.pixels.data(), target.format,
                      views.loss_thresh, pix, ctx.stream);
    ctx.syncs.stream(ctx.stream, "fastgs_view_loss");
    const double elements = 3.0 * double(pixels);
    const float loss =
        float(combined_loss(LossKind::L1Ssim, 0.2, double(keep.sums_host.get()[0]) / elements,
                            double(keep.sums_host.get()[1]) / elements));
    fastgs_count_view(fwd.raster, pix.mask, n, area, loss, s, ctx.stream);
  }
  return s;
}

}  // namespace

FastgsScores fastgs_score_views_cuda(cuda::RefineContext& ctx, const FastgsViews& views) {
  using namespace cuda;
  const int n = ctx.model.n;
  FastgsScores out{std::vector<std::uint32_t>(std::size_t(n)), std::vector<float>(std::size_t(n))};
  if (n == 0) return out;
  const FastgsScratch& s =
      score_views(ctx, views, ctx.scratch.get<FastgsTickScratch>(), "fastgs score pass");
  SPLAT_CUDA_CHECK(cudaMemcpyAsync(out.count.data(), s.count,
                                   out.count.size() * sizeof(std::uint32_t), cudaMemcpyDeviceToHost,
                                   ctx.stream));
  SPLAT_CUDA_CHECK(cudaMemcpyAsync(out.score.data(), s.score, out.score.size() * sizeof(float),
                                   cudaMemcpyDeviceToHost, ctx.stream));
  ctx.syncs.stream(ctx.stream, "fastgs_scores");
  return out;
}

// The densify tick on the device (cpu::fastgs_refine). Host waits: two per scored view (its
// forward's intersection count, its loss), one for the totals, one before the old arrays are freed.
RefineStats FastgsTick::run_cuda(cuda::RefineContext& ctx) {
  using namespace cuda;
  DeviceModel& model = ctx.model;
  FastgsTickScratch& keep = ctx.scratch.get<FastgsTickScratch>();
  const int n = model.n;
  if (n == 0) return {};
  const FastgsScratch& s = score_views(ctx, views, keep, "fastgs tick");
  if (model.grad2d.size() != std::size_t(n)) model.reset_adc_stats();  // nothing grows
  if (model.grad2d_abs.size() != std::size_t(n)) model.reset_grad2d_abs();

  const AdcScratch& adc = keep.adc.ensure(n);
  fastgs_decide(n, model.params.in(), model.grad2d.data(), model.grad2d_abs.data(),
                model.vis_count.data(),
                fastgs::thresholds(settings, std::uint32_t(views.cameras.size())), settings.seed, s,
                adc, keep.totals_host.get(), ctx.stream);
  ctx.syncs.stream(ctx.stream, "fastgs_totals");
  const std::int32_t* t = keep.totals_host.get();
  RefineStats r;
  r.cloned = std::size_t(t[kAdcCloned]);
  r.split = std::size_t(t[kAdcSplit]);
  r.pruned = std::size_t(n) - r.split - std::size_t(t[kAdcKept]);
  r.count = compact_model(ctx, adc, t, settings.seed, "fastgs_compact");
  adc_reset_opacity(model.n, adc::logit_threshold(double(settings.opacity_cap)),
                    model.params.g[3].data(), model.m.g[3].data(), model.v.g[3].data(), ctx.stream);
  return r;
}

// The final pruning tick on the device (cpu::fastgs_final_prune): a keep-mask compaction.
RefineStats FastgsFinalTick::run_cuda(cuda::RefineContext& ctx) {
  using namespace cuda;
  DeviceModel& model = ctx.model;
  FastgsTickScratch& keep = ctx.scratch.get<FastgsTickScratch>();
  const int n = model.n;
  if (n == 0) return {};
  const FastgsScratch& s = score_views(ctx, views, keep, "fastgs final tick");

  const AdcScratch& adc = keep.adc.ensure(n);
  fastgs_final_flags(n, model.params.g[3].data(), adc::logit_threshold(double(min_opacity)),
                     max_score, s, adc, keep.totals_host.get(), ctx.stream);
  ctx.syncs.stream(ctx.stream, "fastgs_totals");
  const std::size_t m = compact_model(ctx, adc, keep.totals_host.get(), 0, "fastgs_compact");
  return {.pruned = std::size_t(n) - m, .count = m};
}

}  // namespace splat
