#include "report/report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>

#include "io/file_util.h"
#include "report/html.h"
#include "report/json_fields.h"
#include "report/report_gallery.h"
#include "report/report_plots.h"

namespace splat {
namespace {

constexpr const char* kDash = "&mdash;";

constexpr const char* kStyle = R"(
body{font:14px/1.45 system-ui,sans-serif;color:#222;max-width:1240px;margin:24px auto;padding:0 16px}
h1{font-size:22px;margin:0}
h2{font-size:17px;margin:30px 0 10px;padding-bottom:4px;border-bottom:1px solid #ddd}
.sub{color:#666;margin:4px 0 18px;word-break:break-all}
.note{color:#555}
.cards{display:grid;grid-template-columns:repeat(auto-fill,minmax(150px,1fr));gap:10px}
.card{border:1px solid #ddd;border-radius:6px;padding:8px 12px;background:#fafafa}
.card .k{font-size:12px;color:#666}
.card .v{font-size:19px;font-weight:600}
.plots{display:grid;grid-template-columns:repeat(auto-fill,minmax(560px,1fr));gap:12px}
svg.plot{max-width:100%;height:auto;border:1px solid #eee;border-radius:4px}
table{border-collapse:collapse;font-variant-numeric:tabular-nums}
th,td{padding:3px 10px;border-bottom:1px solid #eee;text-align:right}
th{background:#f4f4f4}
.l{text-align:left}
table.sortable th{cursor:pointer;user-select:none}
th[data-dir=asc]::after{content:" \25B2"}
th[data-dir=desc]::after{content:" \25BC"}
tr.worst td{background:#fde4e4}
td.neg{color:#b00}
.bar{display:inline-block;height:10px;background:#4c78a8;vertical-align:middle}
figure.view{margin:0 0 20px}
figure.view figcaption{margin-bottom:4px}
.triple{display:flex;flex-wrap:wrap;gap:6px}
.triple div{font-size:12px;color:#666;text-align:center}
.triple img{display:block;max-width:100%;height:auto}
pre{background:#f6f6f6;padding:10px;overflow:auto;font-size:12px}
)";

// Click a header to sort by it; numeric columns sort by the cell's data-v.
constexpr const char* kScript = R"(
for (const table of document.querySelectorAll('table.sortable')) {
  for (const th of table.tHead.rows[0].cells) {
    th.addEventListener('click', function () {
      const col = th.cellIndex, numeric = th.dataset.type === 'num';
      const asc = th.dataset.dir !== 'asc';
      for (const other of th.parentNode.cells) delete other.dataset.dir;
      th.dataset.dir = asc ? 'asc' : 'desc';
      const key = function (row) {
        const cell = row.cells[col];
        return numeric ? parseFloat(cell.dataset.v) : cell.textContent;
      };
      const body = table.tBodies[0];
      const rows = Array.from(body.rows).sort(function (a, b) {
        const x = key(a), y = key(b);
        const d = numeric ? x - y : String(x).localeCompare(String(y));
        return asc ? d : -d;
      });
      for (const row of rows) body.appendChild(row);
    });
  }
}
)";

std::string with_commas(double v) {
  std::string digits = fixed(std::abs(v), 0), out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return (v < 0 ? "-" : "") + out;
}

std::string duration(double s) {
  if (s < 60) return fixed(s, 1) + " s";
  const long total = std::lround(s);
  if (total < 3600) return std::to_string(total / 60) + " min " + std::to_string(total % 60) + " s";
  return std::to_string(total / 3600) + " h " + std::to_string(total % 3600 / 60) + " min";
}

std::string bytes(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  for (; b >= 1024 && u < 4; ++u) b /= 1024;
  return fixed(b, u == 0 ? 0 : 2) + " " + units[u];
}

std::string card(const char* key, const std::string& value) {
  return "<div class=\"card\"><div class=\"k\">" + std::string(key) + "</div><div class=\"v\">" +
         value + "</div></div>\n";
}

// metrics[key] through format, or a dash when absent.
template <class Format>
std::string shown(const nlohmann::json& metrics, const char* key, Format format) {
  const auto v = json_number(metrics, key);
  return v ? format(*v) : kDash;
}

std::string summary_html(const nlohmann::json& m) {
  const bool quality = has_test_quality(m);
  std::string out = "<h2>Summary</h2>\n<div class=\"cards\">\n";
  out += card("Test PSNR",
              quality ? shown(m, "psnr", [](double v) { return fixed(v, 2) + " dB"; }) : kDash);
  out +=
      card("Test SSIM", quality ? shown(m, "ssim", [](double v) { return fixed(v, 4); }) : kDash);
  out += card("Colour-corrected PSNR",
              quality ? shown(m, "cc_psnr", [](double v) { return fixed(v, 2) + " dB"; }) : kDash);
  out += card("Splats", shown(m, "num_splats", with_commas));
  out += card("Iterations", shown(m, "iterations", with_commas));
  out += card("Train time", shown(m, "train_seconds", duration));
  out += card("ms / iteration", shown(m, "ms_per_iter", [](double v) { return fixed(v, 2); }));
  out += card("Peak memory", shown(m, "peak_memory_bytes", bytes));
  const auto backend = json_string(m, "backend");
  out += card("Backend", backend && !backend->empty() ? html_escape(*backend) : kDash);
  out += "</div>\n";
  if (!quality) out += "<p class=\"note\">No test views: PSNR and SSIM were not measured.</p>\n";
  return out;
}

std::string plots_html(const ReportInput& in) {
  std::string out = "<h2>Training</h2>\n<div class=\"plots\">\n";
  for (const std::string& svg : history_plots(in.history, in.metrics)) out += svg;
  return out + "</div>\n";
}

// The per-stage GPU times of metrics["timing"]; nothing when there are none.
std::string timing_html(const nlohmann::json& m) {
  const nlohmann::json* timing = json_field(m, "timing");
  if (!timing || !timing->is_array() || timing->empty()) return "";
  double total = 0;
  for (const nlohmann::json& t : *timing) total += json_number(t, "mean_ms").value_or(0);
  std::string out =
      "<h2>GPU time per stage</h2>\n<p class=\"note\">Mean per training step, from CUDA "
      "events.</p>\n<table>\n<thead><tr><th class=\"l\">stage</th><th>ms</th><th>share</th>"
      "<th class=\"l\"></th></tr></thead>\n<tbody>\n";
  for (const nlohmann::json& t : *timing) {
    const double ms = json_number(t, "mean_ms").value_or(0);
    const double share = json_number(t, "share").value_or(total > 0 ? ms / total : 0);
    out += "<tr><td class=\"l\">" + html_escape(json_string(t, "stage").value_or("?")) +
           "</td><td>" + fixed(ms, 3) + "</td><td>" + fixed(100 * share, 1) +
           "%</td><td class=\"l\"><span class=\"bar\" style=\"width:" +
           fixed(std::clamp(200 * share, 0.0, 200.0), 0) + "px\"></span></td></tr>\n";
  }
  out += "</tbody>\n<tfoot><tr><th class=\"l\">total</th><th>" + fixed(total, 3) +
         "</th><th></th><th></th></tr></tfoot>\n</table>\n";
  return out;
}

struct Row {
  std::size_t index;
  std::string name;
  double psnr, ssim;
  bool pictured;
};

// The table's rows: the views given, or else the ones metrics.json lists.
std::vector<Row> table_rows(const ReportInput& in, const std::vector<std::size_t>& pictured) {
  std::vector<Row> rows;
  for (std::size_t i = 0; i < in.views.size(); ++i) {
    const ReportView& v = in.views[i];
    const bool shown = std::find(pictured.begin(), pictured.end(), i) != pictured.end();
    rows.push_back({i, v.name, v.psnr, v.ssim, shown});
  }
  const nlohmann::json* listed = json_field(in.metrics, "test_views");
  if (rows.empty() && listed && listed->is_array()) {
    for (const nlohmann::json& v : *listed) {
      rows.push_back({rows.size(), json_string(v, "name").value_or("?"),
                      json_number(v, "psnr").value_or(NAN), json_number(v, "ssim").value_or(NAN),
                      false});
    }
  }
  return rows;
}

// A sortable number cell: data-v holds the value for sorting (NaN as lowest), the text a rounding.
std::string number_cell(double v, int decimals, const char* cls = "") {
  char key[32];
  std::snprintf(key, sizeof key, "%.9g", std::isnan(v) ? -1e300 : v);
  return std::string("<td") + (*cls ? std::string(" class=\"") + cls + "\"" : "") + " data-v=\"" +
         key + "\">" + (std::isnan(v) ? kDash : fixed(v, decimals)) + "</td>";
}

// Per-view PSNR and SSIM, worst first, with the lowest tenth highlighted.
std::string table_html(std::vector<Row> rows) {
  std::string out = "<h2>Per-view metrics</h2>\n";
  if (rows.empty()) return out + "<p class=\"note\">No test views.</p>\n";
  double mean = 0;
  std::size_t finite = 0;
  for (const Row& r : rows) {
    if (std::isfinite(r.psnr)) mean += r.psnr, ++finite;
  }
  mean = finite ? mean / double(finite) : NAN;
  auto key = [](const Row& r) { return std::isnan(r.psnr) ? -INFINITY : r.psnr; };
  std::stable_sort(rows.begin(), rows.end(),
                   [&](const Row& a, const Row& b) { return key(a) < key(b); });
  // Fewer than three views have no "worst" worth pointing at.
  const std::size_t worst = rows.size() < 3 ? 0 : std::max<std::size_t>(1, rows.size() / 10);

  out += "<p class=\"note\">" + std::to_string(rows.size()) + " views, mean PSNR " +
         fixed(mean, 2) + " dB. Sorted worst first";
  if (worst > 0) out += "; the lowest " + std::to_string(worst) + " highlighted";
  out += ". Click a column header to sort by it.</p>\n";
  out +=
      "<table class=\"sortable\">\n<thead><tr><th data-type=\"num\">#</th>"
      "<th class=\"l\">view</th><th data-type=\"num\" data-dir=\"asc\">PSNR (dB)</th>"
      "<th data-type=\"num\">SSIM</th><th data-type=\"num\">PSNR &minus; mean</th></tr></thead>\n"
      "<tbody>\n";
  for (std::size_t k = 0; k < rows.size(); ++k) {
    const Row& r = rows[k];
    const std::string name = html_escape(r.name);
    const double delta = r.psnr - mean;
    out +=
        std::string(k < worst ? "<tr class=\"worst\">" : "<tr>") + number_cell(double(r.index), 0) +
        "<td class=\"l\">" +
        (r.pictured ? "<a href=\"#view-" + std::to_string(r.index) + "\">" + name + "</a>" : name) +
        "</td>" + number_cell(r.psnr, 2) + number_cell(r.ssim, 4) +
        number_cell(delta, 2, delta < 0 ? "neg" : "") + "</tr>\n";
  }
  return out + "</tbody>\n</table>\n";
}

std::string config_html(const std::string& toml) {
  return "<h2>Configuration</h2>\n<details><summary>Resolved configuration (TOML)</summary>\n"
         "<pre>" +
         (toml.empty() ? std::string("(not recorded)") : html_escape(toml)) +
         "</pre>\n</details>\n";
}

}  // namespace

std::string report_html(const ReportInput& in) {
  const std::vector<std::size_t> pictured = views_to_picture(in.views, in.max_views);
  std::string out =
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>" +
      html_escape(in.title.empty() ? "splat training report" : "splat report: " + in.title) +
      "</title>\n<style>" + kStyle +
      "</style>\n</head>\n<body>\n<h1>Training report</h1>\n<p class=\"sub\">" +
      html_escape(in.title) + "</p>\n";
  out += summary_html(in.metrics);
  out += plots_html(in);
  out += timing_html(in.metrics);
  out += table_html(table_rows(in, pictured));
  out += gallery_html(in.views, pictured, in.max_image_side);
  out += config_html(in.config_toml);
  out += "<script>" + std::string(kScript) + "</script>\n</body>\n</html>\n";
  return out;
}

void write_report_html(const std::string& path, const ReportInput& in) {
  const std::string page = report_html(in);
  write_atomically(path, [&](std::ofstream& out) { out << page; });
}

}  // namespace splat
