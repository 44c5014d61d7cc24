#include "report/svg_plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "report/html.h"

namespace splat {
namespace {

// The figure and, inside the margins, the plotting area (pixels).
constexpr double kWidth = 560, kHeight = 300;
constexpr double kLeft = 64, kRight = 16, kTop = 34, kBottom = 46;
constexpr double kPlotW = kWidth - kLeft - kRight, kPlotH = kHeight - kTop - kBottom;

struct Point {
  double x, y;
};

std::string px(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

// Compact tick labels: %g drops the float noise of k * step; large counts read as 5k, 1.5M.
std::string tick_label(double v) {
  if (v == 0) v = 0;  // -0 prints as "-0"
  char buf[32];
  const double a = std::abs(v);
  if (a >= 1e6) {
    std::snprintf(buf, sizeof buf, "%.4gM", v / 1e6);
  } else if (a >= 1e3) {
    std::snprintf(buf, sizeof buf, "%.4gk", v / 1e3);
  } else {
    std::snprintf(buf, sizeof buf, "%.4g", v);
  }
  return buf;
}

// 1, 2 or 5 times a power of ten, so that about `target` steps cover `range`.
double nice_step(double range, int target) {
  const double raw = range / target;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  const double f = raw / mag;
  return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * mag;
}

// An axis in plotting units: the value itself, or its log10 on a log axis.
struct Axis {
  double lo = 0, hi = 1;
  std::vector<double> ticks;  // in plotting units
  std::vector<std::string> labels;
  double frac(double u) const { return (u - lo) / (hi - lo); }
};

Axis linear_axis(double min, double max, int target) {
  if (max == min) {  // one value: give it some room rather than divide by zero
    const double pad = min == 0 ? 1 : std::abs(min) * 0.05;
    min -= pad;
    max += pad;
  }
  const double step = nice_step(max - min, target);
  Axis a;
  a.lo = std::floor(min / step) * step;
  a.hi = std::ceil(max / step) * step;
  const int n = int(std::lround((a.hi - a.lo) / step));
  for (int i = 0; i <= n; ++i) {
    a.ticks.push_back(a.lo + i * step);
    a.labels.push_back(tick_label(a.ticks.back()));
  }
  return a;
}

// Whole decades; 2 and 5 between them when the range is narrow, every k-th decade when wide.
Axis log_axis(double min, double max) {
  Axis a;
  a.lo = std::floor(std::log10(min) + 1e-9);
  a.hi = std::ceil(std::log10(max) - 1e-9);
  if (a.hi <= a.lo) a.hi = a.lo + 1;
  const int decades = int(a.hi - a.lo);
  const int every = std::max(1, (decades + 5) / 6);
  for (int d = int(a.lo); d <= int(a.hi); ++d) {
    if ((d - int(a.lo)) % every == 0) {
      a.ticks.push_back(d);
      a.labels.push_back(tick_label(std::pow(10.0, d)));
    }
    if (decades <= 2 && d < int(a.hi)) {
      for (const double m : {2.0, 5.0}) {
        a.ticks.push_back(d + std::log10(m));
        a.labels.push_back(tick_label(m * std::pow(10.0, d)));
      }
    }
  }
  return a;
}

bool drawable(const Plot& plot, double x, double y) {
  return std::isfinite(x) && std::isfinite(y) && (!plot.log_y || y > 0);
}

// Keeps each pixel column's lowest and highest point, in their order: the drawn envelope stays
// the same while the SVG stays small however many records the history holds.
std::vector<Point> thin(const std::vector<Point>& pts) {
  if (pts.size() <= std::size_t(2 * kPlotW)) return pts;
  std::vector<Point> out;
  for (std::size_t start = 0; start < pts.size();) {
    const int column = int(pts[start].x);
    std::size_t end = start, lo = start, hi = start;
    for (; end < pts.size() && int(pts[end].x) == column; ++end) {
      if (pts[end].y < pts[lo].y) lo = end;
      if (pts[end].y > pts[hi].y) hi = end;
    }
    out.push_back(pts[std::min(lo, hi)]);
    if (lo != hi) out.push_back(pts[std::max(lo, hi)]);
    start = end;
  }
  return out;
}

std::string text(
    double x, double y, const std::string& s, const char* anchor, const std::string& extra = "") {
  return "<text x=\"" + px(x) + "\" y=\"" + px(y) + "\" text-anchor=\"" + anchor + "\"" + extra +
         ">" + html_escape(s) + "</text>\n";
}

std::string line(double x1, double y1, double x2, double y2, const char* stroke) {
  return "<line x1=\"" + px(x1) + "\" y1=\"" + px(y1) + "\" x2=\"" + px(x2) + "\" y2=\"" + px(y2) +
         "\" stroke=\"" + stroke + "\"/>\n";
}

std::string series_svg(const PlotSeries& s, const std::vector<Point>& pts) {
  const std::string color = html_escape(s.color);
  const std::string opacity = std::to_string(s.opacity);
  std::string out;
  if (pts.size() > 1) {
    out += "<polyline fill=\"none\" stroke=\"" + color + "\" stroke-opacity=\"" + opacity +
           "\" stroke-width=\"" + px(s.width) + "\" stroke-linejoin=\"round\" points=\"";
    for (const Point& p : thin(pts)) out += px(p.x) + "," + px(p.y) + " ";
    out.back() = '"';
    out += "/>\n";
  }
  // A lone point draws no line, so it always gets its dot.
  if (s.markers || pts.size() == 1) {
    for (const Point& p : pts) {
      out += "<circle cx=\"" + px(p.x) + "\" cy=\"" + px(p.y) + "\" r=\"3\" fill=\"" + color +
             "\" fill-opacity=\"" + opacity + "\"/>\n";
    }
  }
  return out;
}

// The legend shares the header row with the title, right-aligned, so it never covers data.
// Text widths are estimated (6.5 pixels a character at 11 px); SVG cannot measure them here.
std::string legend(const Plot& plot) {
  std::string out;
  double right = kLeft + kPlotW;
  for (auto s = plot.series.rbegin(); s != plot.series.rend(); ++s) {
    if (s->label.empty()) continue;
    const double text_w = 6.5 * double(s->label.size());
    out += text(right, 20, s->label, "end");
    out += "<line x1=\"" + px(right - text_w - 20) + "\" y1=\"16\" x2=\"" + px(right - text_w - 5) +
           "\" y2=\"16\" stroke=\"" + html_escape(s->color) + "\" stroke-width=\"2.5\"/>\n";
    right -= text_w + 34;
  }
  return out;
}

}  // namespace

std::string svg_plot(const Plot& plot) {
  const std::string w = std::to_string(int(kWidth)), h = std::to_string(int(kHeight));
  std::string out = "<svg class=\"plot\" viewBox=\"0 0 " + w + " " + h + "\" width=\"" + w +
                    "\" height=\"" + h +
                    "\" role=\"img\" font-family=\"sans-serif\" font-size=\"11\">\n<title>" +
                    html_escape(plot.title) + "</title>\n";
  out += text(kLeft, 20, plot.title, "start", " font-size=\"13\" font-weight=\"600\"");

  double x_min = std::numeric_limits<double>::infinity(), x_max = -x_min;
  double y_min = x_min, y_max = -x_min;
  for (const PlotSeries& s : plot.series) {
    for (std::size_t i = 0; i < std::min(s.x.size(), s.y.size()); ++i) {
      if (!drawable(plot, s.x[i], s.y[i])) continue;
      x_min = std::min(x_min, s.x[i]);
      x_max = std::max(x_max, s.x[i]);
      y_min = std::min(y_min, s.y[i]);
      y_max = std::max(y_max, s.y[i]);
    }
  }
  if (!(x_min <= x_max)) {  // nothing drawable: say so rather than show empty axes
    out += "<rect x=\"" + px(kLeft) + "\" y=\"" + px(kTop) + "\" width=\"" + px(kPlotW) +
           "\" height=\"" + px(kPlotH) + "\" fill=\"#f6f6f6\" stroke=\"#ccc\"/>\n";
    out += text(kLeft + kPlotW / 2, kTop + kPlotH / 2, plot.empty_note, "middle",
                " class=\"nodata\" fill=\"#777\" font-size=\"13\"");
    return out + "</svg>\n";
  }

  const Axis xa = linear_axis(x_min, x_max, 6);
  const Axis ya = plot.log_y ? log_axis(y_min, y_max) : linear_axis(y_min, y_max, 5);
  auto to_px = [&](double x, double y) {
    const double u = plot.log_y ? std::log10(y) : y;
    return Point{kLeft + xa.frac(x) * kPlotW, kTop + (1 - ya.frac(u)) * kPlotH};
  };

  // Grid and tick labels first, so the data draws over them.
  const double bottom = kTop + kPlotH;
  for (std::size_t i = 0; i < xa.ticks.size(); ++i) {
    const double x = kLeft + xa.frac(xa.ticks[i]) * kPlotW;
    out += line(x, kTop, x, bottom, "#e6e6e6");
    out += text(x, bottom + 15, xa.labels[i], "middle");
  }
  for (std::size_t i = 0; i < ya.ticks.size(); ++i) {
    const double y = kTop + (1 - ya.frac(ya.ticks[i])) * kPlotH;
    out += line(kLeft, y, kLeft + kPlotW, y, "#e6e6e6");
    out += text(kLeft - 6, y, ya.labels[i], "end", " dy=\"0.32em\"");
  }
  out += line(kLeft, kTop, kLeft, bottom, "#444");
  out += line(kLeft, bottom, kLeft + kPlotW, bottom, "#444");
  out += text(kLeft + kPlotW / 2, kHeight - 8, plot.x_label, "middle");
  const std::string mid = px(kTop + kPlotH / 2);
  out += text(14, kTop + kPlotH / 2, plot.y_label, "middle",
              " transform=\"rotate(-90 14 " + mid + ")\"");

  for (const PlotSeries& s : plot.series) {
    std::vector<Point> pts;
    for (std::size_t i = 0; i < std::min(s.x.size(), s.y.size()); ++i) {
      if (drawable(plot, s.x[i], s.y[i])) pts.push_back(to_px(s.x[i], s.y[i]));
    }
    out += series_svg(s, pts);
  }
  return out + legend(plot) + "</svg>\n";
}

}  // namespace splat
