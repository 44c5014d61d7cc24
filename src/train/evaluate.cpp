// evaluate(): a model's renders of a set of views against their images (trainer.h).
#include <omp.h>

#include <algorithm>
#include <exception>
#include <filesystem>

#include "engine/target.h"
#include "io/image_io.h"
#include "train/metrics.h"
#include "train/trainer.h"

namespace splat {

namespace {
// No splat reached the image: every pixel is the background colour, exactly (a render starts
// from it and a drawn splat moves it).
bool background_only(const Image& img, const RasterSettings& rs) {
  for (std::size_t p = 0; p < img.pixels(); ++p)
    for (int c = 0; c < 3; ++c)
      if (img.data[p * std::size_t(img.channels) + std::size_t(c)] != rs.background[std::size_t(c)])
        return false;
  return true;
}

// How many rendered views are scored at once: one a host thread, within about 2 GiB of the
// scorers' buffers (~180 bytes a pixel: the float images and SSIM's double-precision maps).
std::size_t views_at_once(const std::vector<View>& views) {
  std::size_t pixels = 1;
  for (const View& v : views)
    pixels = std::max(pixels, std::size_t(v.camera.width) * std::size_t(v.camera.height));
  return std::clamp<std::size_t>((std::size_t(2) << 30) / (180 * pixels), 1,
                                 std::size_t(omp_get_max_threads()));
}
}  // namespace

// The backend renders one view at a time; the host scores a batch of renders in parallel (CPU,
// double precision: the scorer of every figure), one view a thread. Each view's scores depend on
// its render alone and the means add them in view order, so the result is that of scoring the
// views one by one.
EvalResult evaluate(Backend& backend,
                    const std::vector<View>& views,
                    const RasterSettings& rs,
                    const std::string& render_dir) {
  EvalResult r;
  if (!render_dir.empty()) std::filesystem::create_directories(render_dir);
  const std::size_t batch = views_at_once(views);
  for (std::size_t first = 0; first < views.size(); first += batch) {
    const std::size_t n = std::min(batch, views.size() - first);
    std::vector<Image> renders;
    for (std::size_t k = 0; k < n; ++k)
      renders.push_back(backend.render(views[first + k].camera, rs));
    std::vector<ViewMetrics> scored(n);
    std::vector<char> blank(n);
    std::vector<std::exception_ptr> failed(n);  // an exception must not leave a parallel region
    // One batch of one stays an inactive region, so the scorers' own parallel loops still fork.
#pragma omp parallel for schedule(dynamic, 1) if (n > 1)
    for (std::size_t k = 0; k < n; ++k) {
      try {
        const View& v = views[first + k];
        const Image truth = target_image(v.image);  // every pixel: masks only shape training
        blank[k] = background_only(renders[k], rs);
        scored[k] = {v.name, psnr(renders[k], truth), ssim(renders[k], truth),
                     color_corrected_psnr(renders[k], truth)};
        if (!render_dir.empty())
          write_png((std::filesystem::path(render_dir) / (v.name + ".png")).string(), renders[k]);
      } catch (...) {
        failed[k] = std::current_exception();
      }
    }
    for (std::size_t k = 0; k < n; ++k) {
      if (failed[k]) std::rethrow_exception(failed[k]);
      r.blank_views += blank[k];
      r.mean_psnr += scored[k].psnr;
      r.mean_ssim += scored[k].ssim;
      r.mean_cc_psnr += scored[k].cc_psnr;
      r.views.push_back(std::move(scored[k]));
    }
  }
  if (!views.empty()) {
    r.mean_psnr /= double(views.size());
    r.mean_ssim /= double(views.size());
    r.mean_cc_psnr /= double(views.size());
  }
  return r;
}

}  // namespace splat
