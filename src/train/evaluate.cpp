// evaluate(): a model's renders of a set of views against their images (trainer.h).
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
}  // namespace

EvalResult evaluate(Backend& backend,
                    const std::vector<View>& views,
                    const RasterSettings& rs,
                    const std::string& render_dir) {
  EvalResult r;
  if (!render_dir.empty()) std::filesystem::create_directories(render_dir);
  for (const View& v : views) {
    const Image img = backend.render(v.camera, rs);
    const Image truth = target_image(v.image);  // every pixel: masks only shape training
    r.blank_views += background_only(img, rs);
    r.views.push_back(
        {v.name, psnr(img, truth), ssim(img, truth), color_corrected_psnr(img, truth)});
    r.mean_psnr += r.views.back().psnr;
    r.mean_ssim += r.views.back().ssim;
    r.mean_cc_psnr += r.views.back().cc_psnr;
    if (!render_dir.empty())
      write_png((std::filesystem::path(render_dir) / (v.name + ".png")).string(), img);
  }
  if (!views.empty()) {
    r.mean_psnr /= double(views.size());
    r.mean_ssim /= double(views.size());
    r.mean_cc_psnr /= double(views.size());
  }
  return r;
}

}  // namespace splat
