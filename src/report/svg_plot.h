#pragma once
// Line plots as inline SVG, written by hand: the report page loads no plotting library.
#include <string>
#include <vector>

namespace splat {

struct PlotSeries {
  std::string label;         // legend text; empty keeps the series out of the legend
  std::vector<double> x, y;  // the same length; points that cannot be drawn are skipped
  std::string color = "#1f77b4";
  double opacity = 1.0;
  double width = 1.5;    // stroke width in pixels
  bool markers = false;  // a dot at each point, for sparse series such as evaluations
};

struct Plot {
  std::string title, x_label, y_label;
  bool log_y = false;  // points with y <= 0 cannot be drawn on it and are skipped
  std::vector<PlotSeries> series;
  std::string empty_note = "no data recorded";  // shown instead of axes when nothing is drawable
};

// One <svg> element (no xmlns: it is meant for inline HTML) with title, axes, ticks, labels
// and a legend. Series of more points than pixel columns are thinned to each column's extremes.
std::string svg_plot(const Plot& plot);

}  // namespace splat
