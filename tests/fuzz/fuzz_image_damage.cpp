// The image decoders' damaged-input path. A valid JPEG (a photograph-like baseline file) and PNG,
// made once, are damaged as the input says:
//   byte 0, bit 0: 0 the JPEG, 1 the PNG; bit 1: 0 a run of zero bytes, 1 a lying frame header;
//   bit 2 (PNG header): keep the old CRC (else it is recomputed, a consistent lie).
//   A run of zeros (a lost disk block): bytes 1-2 where it starts in the image data (JPEG: the scan
//   up to EOI; PNG: everything after the signature up to IEND), byte 3 its length less 33.
//   A header: bytes 1-2 and 3-4 the width and height it claims (up to 4 times the real ones).
// Reading the file must throw splat::Error or return the undamaged picture: the same pixels, or a
// crop of them where a JPEG header claims fewer pixels in the same grid of 16-pixel blocks (the
// data then ends where it should). A JPEG header claiming another layout of the same number of
// blocks cannot be told from a real file by the decoder (the dataset's check of each image's size
// against its camera catches it); the target only requires no crash there. Anything else is
// garbage returned silently: the target aborts.
#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "../jpeg_encode.h"
#include "core/error.h"
#include "fuzz_util.h"
#include "io/image_io.h"

namespace {

using Bytes = std::vector<std::uint8_t>;

struct Original {
  Bytes file;
  splat::Image image;
  std::size_t data_begin = 0, data_end = 0;  // where a run of zeros may go
  std::size_t header = 0;                    // offset of the big-endian width (JPEG: height first)
};

Original decoded(Bytes file, const char* name) {
  const auto path = splat::fuzz::work_dir() / name;
  splat::fuzz::write_file(path, file.data(), file.size());
  Original o;
  o.image = splat::read_image(path.string());
  o.file = std::move(file);
  return o;
}

const Original& jpeg() {
  static const Original o = [] {
    Original j = decoded(splat::test::photo_jpeg(96, 64), "original.jpg");
    const Bytes& b = j.file;
    for (std::size_t i = 2; i + 1 < b.size(); ++i) {
      if (b[i] == 0xff && b[i + 1] == 0xc0 && j.header == 0) j.header = i + 5;
      if (b[i] == 0xff && b[i + 1] == 0xda) {
        j.data_begin = i + 2 + ((std::size_t(b[i + 2]) << 8) | b[i + 3]);
        break;
      }
    }
    j.data_end = b.size() - 2;  // EOI
    return j;
  }();
  return o;
}

const splat::Image& png_pixels() {
  static const splat::Image img = [] {
    splat::Image p(64, 48, 3);  // noise: a few kilobytes of image data
    std::uint32_t noise = 1;
    for (float& v : p.data) {
      noise = noise * 1103515245u + 12345u;
      v = float((noise >> 16) % 256) / 255.0f;
    }
    return p;
  }();
  return img;
}

const Original& png() {
  static const Original o = [] {
    Original p = decoded(splat::encode_png(png_pixels()), "original.png");
    p.header = 16;  // IHDR data: width, height
    p.data_begin = 8;
    p.data_end = p.file.size() - 12;  // IEND
    return p;
  }();
  return o;
}

void put_be16(Bytes& b, std::size_t at, unsigned v) {
  b[at] = std::uint8_t(v >> 8), b[at + 1] = std::uint8_t(v);
}

void put_be32(Bytes& b, std::size_t at, std::uint32_t v) {
  for (int k = 0; k < 4; ++k) b[at + std::size_t(k)] = std::uint8_t(v >> (24 - 8 * k));
}

// Whether `got` is the top-left crop of `want`: exact, or (JPEG, whose chroma is interpolated
// across the new edge) within a few levels on average and nowhere wildly off.
bool is_crop_of(const splat::Image& got, const splat::Image& want, bool exact) {
  if (got.width > want.width || got.height > want.height || got.channels != want.channels)
    return false;
  double sum = 0, worst = 0;
  for (int y = 0; y < got.height; ++y)
    for (int x = 0; x < got.width; ++x)
      for (int c = 0; c < got.channels; ++c) {
        const double d = std::abs(double(got.at(x, y, c)) - double(want.at(x, y, c)));
        sum += d, worst = std::max(worst, d);
      }
  const double mean = sum / double(got.data.size());
  return exact ? worst == 0 : mean <= 2.0 / 255 && worst <= 0.25;
}

[[noreturn]] void garbage(const char* what) {
  std::fprintf(stderr, "damaged input decoded without an error: %s\n", what);
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::uint8_t in[5] = {};
  std::copy(data, data + std::min(size, sizeof in), in);
  const bool is_png = in[0] & 1, header_lie = in[0] & 2, keep_crc = in[0] & 4;
  const Original& o = is_png ? png() : jpeg();
  Bytes b = o.file;

  // What a successful decode must be: the original, or its crop.
  int want_w = o.image.width, want_h = o.image.height;
  bool must_fail = false, only_no_crash = false;
  if (!header_lie) {
    // 33 bytes or more: the first may follow a 0xff, whose 0x00 is stuffing, not data.
    const std::size_t n = std::min(33 + std::size_t(in[3]), o.data_end - o.data_begin);
    const std::size_t at =
        o.data_begin + ((std::size_t(in[1]) << 8 | in[2]) % (o.data_end - o.data_begin - n + 1));
    std::fill(b.begin() + std::ptrdiff_t(at), b.begin() + std::ptrdiff_t(at + n), 0);
  } else {
    want_w = int(1 + (unsigned(in[1]) << 8 | in[2]) % unsigned(4 * o.image.width));
    want_h = int(1 + (unsigned(in[3]) << 8 | in[4]) % unsigned(4 * o.image.height));
    if (is_png) {
      b[o.header] = b[o.header + 1] = b[o.header + 4] = b[o.header + 5] = 0;
      put_be16(b, o.header + 2, unsigned(want_w));
      put_be16(b, o.header + 6, unsigned(want_h));
      if (!keep_crc) put_be32(b, o.header + 13, std::uint32_t(crc32(0, &b[o.header - 4], 17)));
      must_fail = want_w != o.image.width || want_h != o.image.height;
    } else {
      put_be16(b, o.header, unsigned(want_h));
      put_be16(b, o.header + 2, unsigned(want_w));
      const auto blocks = [](int n) { return (n + 15) / 16; };
      const int cols = blocks(o.image.width), rows = blocks(o.image.height);
      if (blocks(want_w) * blocks(want_h) != cols * rows)
        must_fail = true;  // the data ends early, or is left over
      else if (blocks(want_w) != cols)
        only_no_crash = true;  // the same blocks laid out otherwise
    }
  }

  const auto path = splat::fuzz::work_dir() / "damaged";
  splat::fuzz::write_file(path, b.data(), b.size());
  splat::Image img;
  try {
    img = splat::read_image(path.string());
  } catch (const splat::Error&) {
    return 0;
  }
  if (only_no_crash) return 0;
  if (must_fail) garbage(is_png ? "PNG header" : "JPEG header");
  if (img.width != want_w || img.height != want_h) garbage("size");
  if (!is_crop_of(img, o.image, is_png || !header_lie))
    garbage(header_lie ? "header" : "zeroed bytes");
  return 0;
}
