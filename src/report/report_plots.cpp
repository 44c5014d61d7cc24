#include "report/report_plots.h"

#include "report/json_fields.h"
#include "report/svg_plot.h"

namespace splat {
namespace {

// Appends (step, record[key]) to the series when the record has the field.
void add_point(PlotSeries& s, double step, const nlohmann::json& record, const char* key) {
  if (const auto v = json_number(record, key)) {
    s.x.push_back(step);
    s.y.push_back(*v);
  }
}

PlotSeries series(const char* label, const char* color) {
  PlotSeries s;
  s.label = label;
  s.color = color;
  return s;
}

}  // namespace

std::vector<std::string> history_plots(const std::vector<nlohmann::json>& history,
                                       const nlohmann::json& metrics) {
  PlotSeries loss = series("per step", "#1f77b4"), smoothed = series("smoothed", "#08306b");
  loss.opacity = 0.3;
  loss.width = 1;
  smoothed.width = 2;
  PlotSeries eval = series("during training", "#2ca02c"), final_psnr = series("final", "#d62728");
  eval.markers = final_psnr.markers = true;
  PlotSeries splats = series("", "#9467bd"), speed = series("", "#ff7f0e");

  std::optional<double> last_step;
  for (const nlohmann::json& record : history) {
    const auto step = json_number(record, "step");
    if (!step) continue;
    last_step = step;
    add_point(loss, *step, record, "loss");
    add_point(smoothed, *step, record, "loss_smoothed");
    add_point(splats, *step, record, "splats");
    add_point(speed, *step, record, "its_per_s");
    if (const nlohmann::json* e = json_field(record, "eval")) add_point(eval, *step, *e, "psnr");
  }
  // The final evaluation sits at the last step trained.
  const auto iterations = json_number(metrics, "iterations");
  const auto final_step = iterations ? iterations : last_step;
  const auto psnr = json_number(metrics, "psnr");
  if (final_step && psnr && has_test_quality(metrics)) {
    final_psnr.x.push_back(*final_step);
    final_psnr.y.push_back(*psnr);
  }

  Plot loss_plot{"Training loss", "step", "loss (log scale)", true, {loss, smoothed}};
  Plot psnr_plot{"Test PSNR", "step", "PSNR (dB)", false, {eval, final_psnr}};
  psnr_plot.empty_note = "no test evaluations recorded";
  Plot splat_plot{"Splat count", "step", "splats", false, {splats}};
  Plot speed_plot{"Training speed", "step", "iterations / s", false, {speed}};
  return {svg_plot(loss_plot), svg_plot(psnr_plot), svg_plot(splat_plot), svg_plot(speed_plot)};
}

}  // namespace splat
