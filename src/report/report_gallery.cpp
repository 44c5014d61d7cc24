#include "report/report_gallery.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <numeric>

#include "io/image_io.h"
#include "report/html.h"
#include "report/report_images.h"

namespace splat {
namespace {

// Both images present and of one size: the three pictures can stand side by side.
bool picturable(const ReportView& v) {
  return v.truth && v.render && v.truth->width == v.render->width &&
         v.truth->height == v.render->height && v.truth->pixels() > 0;
}

// PSNR for ordering views worst first: NaN, a broken render, counts as the worst.
double psnr_key(double psnr) {
  return std::isnan(psnr) ? -std::numeric_limits<double>::infinity() : psnr;
}

std::string hex(const std::array<float, 3>& rgb) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "#%02x%02x%02x", int(std::lround(rgb[0] * 255)),
                int(std::lround(rgb[1] * 255)), int(std::lround(rgb[2] * 255)));
  return buf;
}

std::string shortest(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

// An SVG colour bar of the heat map, labelled 0, scale / 2 and >= scale.
std::string colour_bar(float scale) {
  std::string out =
      "<svg class=\"colorbar\" width=\"320\" height=\"34\" viewBox=\"0 0 320 34\" "
      "font-family=\"sans-serif\" font-size=\"11\">\n<defs><linearGradient id=\"inferno\">";
  for (int i = 0; i <= 10; ++i) {
    out += "<stop offset=\"" + std::to_string(i * 10) + "%\" stop-color=\"" +
           hex(inferno(float(i) / 10)) + "\"/>";
  }
  out += "</linearGradient></defs>\n";
  out += "<rect x=\"20\" y=\"2\" width=\"280\" height=\"12\" fill=\"url(#inferno)\"/>\n";
  const std::pair<double, std::string> labels[] = {
      {20, "0"}, {160, shortest(scale / 2)}, {300, "&#8805; " + shortest(scale)}};
  for (const auto& [x, label] : labels) {
    out += "<text x=\"" + shortest(x) + "\" y=\"28\" text-anchor=\"middle\">" + label + "</text>\n";
  }
  return out + "</svg>\n";
}

std::string picture(const std::string& uri,
                    const Image& img,
                    const std::string& name,
                    const char* caption) {
  return "<div><img src=\"" + uri + "\" width=\"" + std::to_string(img.width) + "\" height=\"" +
         std::to_string(img.height) + "\" alt=\"" + html_escape(name) + ": " + caption +
         "\"><span>" + caption + "</span></div>\n";
}

}  // namespace

std::vector<std::size_t> pictured_views(const std::vector<double>& psnr, std::size_t max_views) {
  std::vector<std::size_t> index(psnr.size());
  std::iota(index.begin(), index.end(), std::size_t(0));
  if (index.size() <= max_views) return index;
  std::stable_sort(index.begin(), index.end(), [&](std::size_t a, std::size_t b) {
    return psnr_key(psnr[a]) < psnr_key(psnr[b]);
  });
  index.resize(max_views);
  std::sort(index.begin(), index.end());
  return index;
}

std::vector<std::size_t> views_to_picture(const std::vector<ReportView>& views,
                                          std::size_t max_views) {
  std::vector<std::size_t> candidates;
  std::vector<double> psnr;
  for (std::size_t i = 0; i < views.size(); ++i) {
    const ReportView& v = views[i];
    if (!picturable(v)) continue;
    candidates.push_back(i);
    psnr.push_back(v.psnr);
  }
  std::vector<std::size_t> chosen;
  for (const std::size_t k : pictured_views(psnr, max_views)) chosen.push_back(candidates[k]);
  return chosen;
}

std::string gallery_html(const std::vector<ReportView>& views,
                         const std::vector<std::size_t>& pictured,
                         int max_side) {
  std::string out = "<h2 id=\"views\">Test views</h2>\n";
  if (pictured.empty()) return out + "<p class=\"note\">No test view images to show.</p>\n";

  // Truth and render are encoded as soon as they are made; the error maps wait for the scale,
  // which depends on all of them. All three pictures of a view come out the same size.
  struct Figure {
    std::size_t index;
    std::string truth_uri, render_uri;
    Image error;
  };
  std::vector<Figure> figures;
  std::vector<float> all_errors;
  for (const std::size_t i : pictured) {
    const Image truth = display_rgb(*views[i].truth), render = display_rgb(*views[i].render);
    // The error is taken at full resolution and then averaged down, so that fine detail the
    // render misses still shows instead of vanishing in the downscaled pictures.
    Figure f{i, png_data_uri(encode_png(fit_within(truth, max_side))),
             png_data_uri(encode_png(fit_within(render, max_side))),
             fit_within(abs_error(truth, render), max_side)};
    all_errors.insert(all_errors.end(), f.error.data.begin(), f.error.data.end());
    figures.push_back(std::move(f));
  }
  const float scale = heat_scale(std::move(all_errors));
  // Worst first, as in the table: the first picture is the one most worth a look.
  std::stable_sort(figures.begin(), figures.end(), [&](const Figure& a, const Figure& b) {
    return psnr_key(views[a.index].psnr) < psnr_key(views[b.index].psnr);
  });

  const std::size_t with_images = std::count_if(views.begin(), views.end(), picturable);
  out += "<p class=\"note\">" + std::to_string(pictured.size()) + " of " +
         std::to_string(views.size()) + " test views pictured, worst first.";
  if (with_images > pictured.size()) {
    out += " Only the " + std::to_string(pictured.size()) + " with the lowest PSNR are shown; " +
           std::to_string(with_images - pictured.size()) + " more were left out.";
  }
  if (views.size() > with_images) {
    out += " " + std::to_string(views.size() - with_images) +
           " had no images, or truth and render of different sizes.";
  }
  out += " Pictures are box-filtered to at most " + std::to_string(max_side) +
         " pixels a side. Error: the mean absolute RGB error of each pixel (values in [0, 1]), "
         "on one scale for all views, from 0 (black) to " +
         shortest(scale) + " (" + shortest(scale * 255) +
         " of 255 levels) and above (pale yellow).</p>\n";
  out += colour_bar(scale);

  for (const Figure& f : figures) {
    const ReportView& v = views[f.index];
    out += "<figure class=\"view\" id=\"view-" + std::to_string(f.index) + "\">\n<figcaption><b>" +
           html_escape(v.name) + "</b> &middot; PSNR " + fixed(v.psnr, 2) + " dB &middot; SSIM " +
           fixed(v.ssim, 4) + "</figcaption>\n<div class=\"triple\">\n";
    out += picture(f.truth_uri, f.error, v.name, "ground truth");
    out += picture(f.render_uri, f.error, v.name, "render");
    out += picture(png_data_uri(heat_map_png(f.error, scale)), f.error, v.name, "error");
    out += "</div>\n</figure>\n";
  }
  return out;
}

}  // namespace splat
