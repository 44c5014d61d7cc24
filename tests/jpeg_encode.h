#pragma once
// A photograph-like JPEG for tests and fuzz targets of the decoders' damaged-input path (splat
// itself writes no JPEG): smooth colour waves plus noise, baseline with libjpeg's standard
// Huffman tables, 4:2:0.
// clang-format off
#include <cstdio>  // before jpeglib.h, which uses FILE and size_t without including them
#include <jpeglib.h>
// clang-format on

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <vector>

namespace splat::test {

inline std::vector<std::uint8_t> photo_jpeg(int width, int height, int quality = 90) {
  jpeg_compress_struct c{};
  jpeg_error_mgr err{};
  c.err = jpeg_std_error(&err);  // encoding fixed-size memory cannot fail: errors exit
  jpeg_create_compress(&c);
  unsigned char* buffer = nullptr;
  unsigned long size = 0;
  jpeg_mem_dest(&c, &buffer, &size);
  c.image_width = JDIMENSION(width);
  c.image_height = JDIMENSION(height);
  c.input_components = 3;
  c.in_color_space = JCS_RGB;
  jpeg_set_defaults(&c);
  jpeg_set_quality(&c, quality, TRUE);
  jpeg_start_compress(&c, TRUE);
  std::vector<unsigned char> row(std::size_t(width) * 3);
  std::uint32_t noise = 1;
  while (c.next_scanline < c.image_height) {
    const int y = int(c.next_scanline);
    for (int x = 0; x < width; ++x) {
      for (int k = 0; k < 3; ++k) {
        noise = noise * 1103515245u + 12345u;
        const double wave = 100 * std::sin(0.1 * x * (k + 1) + 0.07 * y);
        row[std::size_t(x) * 3 + k] = (unsigned char)(118 + wave + double((noise >> 16) % 20));
      }
    }
    JSAMPROW r = row.data();
    jpeg_write_scanlines(&c, &r, 1);
  }
  jpeg_finish_compress(&c);
  std::vector<std::uint8_t> bytes(buffer, buffer + size);
  std::free(buffer);
  jpeg_destroy_compress(&c);
  return bytes;
}

}  // namespace splat::test
