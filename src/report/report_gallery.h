#pragma once
// The report's pictures: ground truth | render | error heat map for each pictured test view.
#include <cstddef>
#include <string>
#include <vector>

#include "report/report.h"

namespace splat {

// Indices of the views to picture: those with both images of one size, capped at max_views
// as pictured_views caps them.
std::vector<std::size_t> views_to_picture(const std::vector<ReportView>& views,
                                          std::size_t max_views);

// The "Test views" section: how many views are pictured and why others are not, the heat map's
// colour scale (shared by all views, so brighter means worse anywhere on the page), then a
// figure per pictured view, lowest PSNR first, anchored as id="view-<index>", with its three
// PNG data: URIs.
std::string gallery_html(const std::vector<ReportView>& views,
                         const std::vector<std::size_t>& pictured,
                         int max_side);

}  // namespace splat
