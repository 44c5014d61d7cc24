#pragma once
// Pictures for the report page: error heat maps, page-sized copies and data: URIs.
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "core/image.h"

namespace splat {

// RGB for display: gray is repeated, RGBA is composited on white.
Image display_rgb(const Image& img);

// Per-pixel mean absolute RGB error of render against truth (both RGB, the same size): one
// channel in [0, 1].
Image abs_error(const Image& truth, const Image& render);

// The inferno colour map (matplotlib's, from 11 stops linearly interpolated), t clamped to [0, 1].
std::array<float, 3> inferno(float t);

// One channel through inferno, as an indexed PNG of 256 steps: 0 is black, `scale` and above
// the palest yellow.
std::vector<std::uint8_t> heat_map_png(const Image& error, float scale);

// Box-filtered by the smallest integer factor that brings both sides to at most max_side;
// unchanged when it already fits.
Image fit_within(const Image& img, int max_side);

// The smallest of 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1 not below the q-quantile of the values:
// a round heat-map scale that a few outlier pixels cannot wash out.
float heat_scale(std::vector<float> values, double q = 0.99);

// "data:image/png;base64,..." for an <img src>.
std::string png_data_uri(const std::vector<std::uint8_t>& png);

}  // namespace splat
