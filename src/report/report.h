#pragma once
// report.html: a training run's results on one page that opens from disk, with no server and no
// network. Plots are inline SVG, pictures inline PNG data: URIs; nothing is fetched.
#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/image.h"

namespace splat {

struct ReportView {
  std::string name;
  double psnr = 0, ssim = 0;
  // Either null: the view is listed in the table but not pictured. The images (RGB, or gray or
  // RGBA) must be the same size and outlive the report_html call.
  const Image* truth = nullptr;
  const Image* render = nullptr;
};

struct ReportInput {
  std::string title;                    // what was trained, e.g. the dataset path
  std::vector<nlohmann::json> history;  // the metrics.jsonl records, in order
  nlohmann::json metrics;               // the metrics.json object
  // Test views. When empty, the table lists metrics["test_views"] (name, psnr, ssim) instead.
  std::vector<ReportView> views;
  std::string config_toml;  // the resolved config, shown collapsed
  // Pictured at most: beyond it, the lowest-PSNR views. 12 at 400 pixels keep a page of 800x800
  // lego views near 4.6 MB (24 would be 9 MB); the table lists every view regardless.
  std::size_t max_views = 12;
  int max_image_side = 400;  // pictures are box-filtered down to fit within this many pixels
};

// The whole page. Missing metrics fields show as a dash; plots without data say so.
std::string report_html(const ReportInput& in);

// Writes report_html(in) to path atomically (through path.tmp and a rename).
void write_report_html(const std::string& path, const ReportInput& in);

// The views the page pictures, as indices into psnr: all when there are at most max_views,
// else the max_views of lowest PSNR (NaN counts as lowest); in their original order. A caller
// can use it to render only those views.
std::vector<std::size_t> pictured_views(const std::vector<double>& psnr, std::size_t max_views);

}  // namespace splat
