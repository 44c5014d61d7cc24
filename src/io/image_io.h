#pragma once
// Image codecs: PNG (8/16-bit, gray/RGB/RGBA), JPEG and WebP (lossless or lossy) in; PNG out.
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "core/image.h"

namespace splat {

// Decodes by content (magic bytes), not by extension. Gray becomes RGB, gray+alpha becomes RGBA;
// channels are 3 or 4, values in [0, 1]. Throws splat::Error naming the file on any failure.
Image read_image(const std::string& path);

// Writes 8-bit PNG (channels 1, 3 or 4), values clamped to [0, 1] and rounded.
void write_png(const std::string& path, const Image& img);
// The bytes write_png would write. Throws splat::Error on a malformed image.
std::vector<std::uint8_t> encode_png(const Image& img);
// An indexed-colour PNG: width x height indices into a palette of 1 to 256 RGB colours (values
// in [0, 1]). A picture of few colours, such as a heat map, takes a third of the bytes of RGB.
std::vector<std::uint8_t> encode_png_indexed(const std::vector<std::uint8_t>& index,
                                             int width,
                                             int height,
                                             const std::vector<std::array<float, 3>>& palette);

// RGBA (straight alpha) composited on a background -> RGB. RGB input is returned unchanged.
Image composite_on(const Image& img, const std::array<float, 3>& background);

// Float samples (3 or 4 channels) to 8 bits, clamped and rounded as write_png does: exact for
// values k / 255, so an 8-bit decode comes back unchanged; 16-bit samples are rounded to 8 bits.
Image8 to_image8(const Image& img);

// Box-filter downscale by an integer factor (width and height rounded down).
Image downscale(const Image& img, int factor);

// Area-filter resample to w x h, at most the input's size: each output pixel is the mean of the
// input area it covers (fractional pixels weighted by their covered part).
Image resize_area(const Image& img, int w, int h);

}  // namespace splat
