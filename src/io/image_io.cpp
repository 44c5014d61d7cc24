#include "io/image_io.h"

// clang-format off
#include <cstdio>  // before jpeglib.h, which uses FILE and size_t without including them
#include <jerror.h>
#include <jpeglib.h>
// clang-format on
#include <png.h>
#include <unistd.h>
#include <webp/decode.h>

#include <algorithm>
#include <cerrno>
#include <csetjmp>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <utility>
#include <vector>

#include "core/error.h"
#include "io/read_file.h"

namespace splat {
namespace {

// Larger than any photograph we train on, small enough that a forged header cannot make us
// allocate tens of gigabytes before the decoder notices the data is missing.
constexpr std::uint64_t kMaxPixels = std::uint64_t(1) << 28;

using Bytes = std::vector<std::uint8_t>;

Bytes read_file(const std::string& path) {
  require_regular_file(path, "image");
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) throw input_error(path, "file", std::string("cannot open: ") + std::strerror(errno));
  Bytes bytes;
  std::uint8_t buf[1 << 16];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) bytes.insert(bytes.end(), buf, buf + n);
  const bool failed = std::ferror(f);
  std::fclose(f);
  if (failed) throw input_error(path, "file", "read error");
  return bytes;
}

void check_size(const std::string& path, const char* format, std::uint64_t w, std::uint64_t h) {
  if (w == 0 || h == 0 || w * h > kMaxPixels) {
    throw input_error(path, format,
                      "unsupported image size " + std::to_string(w) + "x" + std::to_string(h));
  }
}

// 8-bit samples to [0, 1]; division (not multiplication by 1/255) keeps k/255 exact to the ulp.
Image from_u8(int w, int h, int c, const std::uint8_t* src) {
  Image img(w, h, c);
  for (std::size_t i = 0; i < img.data.size(); ++i) img.data[i] = float(src[i]) / 255.0f;
  return img;
}

// ---- PNG -------------------------------------------------------------------------------------
// libpng reports errors by longjmp. Each function below that calls into libpng sets its own
// jump target and holds no object with a destructor, so the jump skips nothing; all owned
// state lives in PngReader, which is destroyed normally after the function has returned.

struct PngReader {
  png_structp png = nullptr;
  png_infop info = nullptr;
  const std::uint8_t* data = nullptr;
  std::size_t size = 0;
  std::size_t pos = 0;
  char message[256] = "unknown libpng error";
  png_uint_32 width = 0, height = 0;
  int channels = 0, bit_depth = 0;
  ~PngReader() { png_destroy_read_struct(&png, &info, nullptr); }
};

void png_on_error(png_structp png, png_const_charp msg) {
  auto* r = static_cast<PngReader*>(png_get_error_ptr(png));
  std::snprintf(r->message, sizeof r->message, "%s", msg);
  png_longjmp(png, 1);
}

// Most warnings (about iCCP profiles, an ancillary chunk's CRC) do not affect pixel values and
// stay quiet. A warning about the image data itself is damage: "IDAT: Too much image data" is
// what an IHDR claiming fewer rows than were stored gives, and libpng would return the top rows.
void png_on_warning(png_structp png, png_const_charp msg) {
  if (std::strncmp(msg, "IDAT", 4) == 0) png_on_error(png, msg);
}

void png_read_bytes(png_structp png, png_bytep out, png_size_t n) {
  auto* r = static_cast<PngReader*>(png_get_io_ptr(png));
  if (r->size - r->pos < n) png_error(png, "truncated");
  std::memcpy(out, r->data + r->pos, n);
  r->pos += n;
}

bool png_read_header(PngReader& r) {
  if (setjmp(png_jmpbuf(r.png))) return false;
  png_set_read_fn(r.png, &r, png_read_bytes);
  png_read_info(r.png, r.info);
  const int color = png_get_color_type(r.png, r.info);
  // Expand everything to 8- or 16-bit RGB(A); no gamma transform: pixels stay as stored.
  if (color == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(r.png);
  if (color == PNG_COLOR_TYPE_GRAY && png_get_bit_depth(r.png, r.info) < 8) {
    png_set_expand_gray_1_2_4_to_8(r.png);
  }
  if (png_get_valid(r.png, r.info, PNG_INFO_tRNS)) png_set_tRNS_to_alpha(r.png);
  if (color == PNG_COLOR_TYPE_GRAY || color == PNG_COLOR_TYPE_GRAY_ALPHA) {
    png_set_gray_to_rgb(r.png);
  }
  png_set_interlace_handling(r.png);
  png_read_update_info(r.png, r.info);
  r.width = png_get_image_width(r.png, r.info);
  r.height = png_get_image_height(r.png, r.info);
  r.channels = png_get_channels(r.png, r.info);
  r.bit_depth = png_get_bit_depth(r.png, r.info);
  return true;
}

bool png_read_pixels(PngReader& r, png_bytepp rows) {
  if (setjmp(png_jmpbuf(r.png))) return false;
  png_read_image(r.png, rows);
  return true;
}

Image decode_png(const std::string& path, const Bytes& bytes) {
  PngReader r;
  r.data = bytes.data();
  r.size = bytes.size();
  r.png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &r, png_on_error, png_on_warning);
  if (r.png) r.info = png_create_info_struct(r.png);
  if (!r.png || !r.info) throw input_error(path, "PNG", "cannot initialize libpng");
  if (!png_read_header(r)) throw input_error(path, "PNG", r.message);
  check_size(path, "PNG", r.width, r.height);
  if ((r.channels != 3 && r.channels != 4) || (r.bit_depth != 8 && r.bit_depth != 16)) {
    throw input_error(path, "PNG",
                      "unexpected layout after expansion: " + std::to_string(r.channels) +
                          " channels, " + std::to_string(r.bit_depth) + "-bit");
  }
  const std::size_t row_bytes = std::size_t(r.width) * r.channels * (r.bit_depth / 8);
  Bytes pixels(row_bytes * r.height);
  std::vector<png_bytep> rows(r.height);
  for (png_uint_32 y = 0; y < r.height; ++y) rows[y] = pixels.data() + y * row_bytes;
  if (!png_read_pixels(r, rows.data())) throw input_error(path, "PNG", r.message);

  if (r.bit_depth == 8) return from_u8(int(r.width), int(r.height), r.channels, pixels.data());
  Image img(int(r.width), int(r.height), r.channels);
  for (std::size_t i = 0; i < img.data.size(); ++i) {
    // PNG stores 16-bit samples big-endian.
    const unsigned v = (unsigned(pixels[2 * i]) << 8) | pixels[2 * i + 1];
    img.data[i] = float(v) / 65535.0f;
  }
  return img;
}

// Float sample to 8 bits, clamped and rounded; `!(v > 0)` also sends NaN to 0.
std::uint8_t to_u8(float v) {
  return !(v > 0.0f) ? 0 : v >= 1.0f ? 255 : std::uint8_t(v * 255.0f + 0.5f);
}

// 8-bit samples laid out as `format` (a PNG_FORMAT_*; colour-mapped ones take `colormap`) to
// PNG bytes. The simplified libpng API writes to memory and handles its own longjmp. `what`
// names the image in error messages: the output path, or "PNG encoder" for memory.
Bytes encode_samples(const std::string& what,
                     png_uint_32 format,
                     int width,
                     int height,
                     const std::uint8_t* samples,
                     const Bytes& colormap = {}) {
  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  image.width = png_uint_32(width);
  image.height = png_uint_32(height);
  image.format = format;
  image.colormap_entries = png_uint_32(colormap.size() / 3);
  png_alloc_size_t size = PNG_IMAGE_PNG_SIZE_MAX(image);
  Bytes encoded(size);
  const int ok = png_image_write_to_memory(&image, encoded.data(), &size, 0, samples, 0,
                                           colormap.empty() ? nullptr : colormap.data());
  if (!ok) {
    const std::string msg = image.message;
    png_image_free(&image);
    throw input_error(what, "PNG", "encoding failed: " + msg);
  }
  encoded.resize(size);
  return encoded;
}

Bytes encode_image(const Image& img, const std::string& what) {
  if (img.channels != 1 && img.channels != 3 && img.channels != 4) {
    throw input_error(what, "PNG", "cannot write " + std::to_string(img.channels) + " channels");
  }
  if (img.width <= 0 || img.height <= 0 ||
      img.data.size() != img.pixels() * std::size_t(img.channels)) {
    throw input_error(what, "PNG",
                      "inconsistent image " + std::to_string(img.width) + "x" +
                          std::to_string(img.height) + "x" + std::to_string(img.channels));
  }
  Bytes samples(img.data.size());
  std::transform(img.data.begin(), img.data.end(), samples.begin(), to_u8);
  const png_uint_32 format = img.channels == 1   ? PNG_FORMAT_GRAY
                             : img.channels == 3 ? PNG_FORMAT_RGB
                                                 : PNG_FORMAT_RGBA;
  return encode_samples(what, format, img.width, img.height, samples.data());
}

// ---- JPEG ------------------------------------------------------------------------------------
// Same discipline as PNG: libjpeg's error_exit longjmps into the function that set the target.

struct JpegReader {
  jpeg_decompress_struct cinfo{};
  jpeg_error_mgr err{};
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX + 32] = "unknown libjpeg error";
  bool created = false;
  bool zeros_are_flat = true;  // zeros_code_flat_blocks, while comp_info is alive
  ~JpegReader() {
    if (created) jpeg_destroy_decompress(&cinfo);
  }
};

JpegReader* jpeg_reader(j_common_ptr cinfo) {
  return static_cast<JpegReader*>(cinfo->client_data);
}

void jpeg_on_error(j_common_ptr cinfo) {
  JpegReader* r = jpeg_reader(cinfo);
  cinfo->err->format_message(cinfo, r->message);
  std::longjmp(r->jump, 1);
}

// libjpeg reports damaged data as warnings and carries on: running out of data pads the image
// with gray, a frame header claiming more rows than were stored pads the rest ("premature end of
// data segment"), one claiming fewer leaves "extraneous bytes". A silently damaged training
// image is worse than an error, so every warning is one (trace messages, level >= 0, are not).
void jpeg_on_message(j_common_ptr cinfo, int level) {
  if (level != -1) return;
  JpegReader* r = jpeg_reader(cinfo);
  if (cinfo->err->msg_code == JWRN_JPEG_EOF) {
    std::snprintf(r->message, sizeof r->message, "truncated");
  } else {
    char what[JMSG_LENGTH_MAX];
    cinfo->err->format_message(cinfo, what);
    std::snprintf(r->message, sizeof r->message, "damaged (libjpeg: %s)", what);
  }
  std::longjmp(r->jump, 1);
}

// JPEG has no checksum: scan data lost to zeroed disk blocks decodes without a word from libjpeg
// (its Huffman codes resynchronize; the DC terms drift for the rest of the image). A long run of
// zero bytes is the trace it leaves, unless the file's own codes can write one: in a canonical
// Huffman table the all-zero code is the first symbol, and when that is the DC difference 0 and
// the AC end-of-block in every component, zero bits code flat blocks (an encoder with optimized
// tables on a flat area). Otherwise the codes of 256 zero bits are dozens of -1 coefficients in
// a row, which no photograph has.
constexpr std::size_t kMaxZeroRun = 32;

bool zeros_code_flat_blocks(const jpeg_decompress_struct& c) {
  for (int i = 0; i < c.num_components; ++i) {
    const JHUFF_TBL* dc = c.dc_huff_tbl_ptrs[c.comp_info[i].dc_tbl_no];
    const JHUFF_TBL* ac = c.ac_huff_tbl_ptrs[c.comp_info[i].ac_tbl_no];
    if (!dc || !ac) return true;  // unknown: no claim
    if (dc->huffval[0] != 0 || ac->huffval[0] != 0) return false;
  }
  return true;
}

// The longest run of zero bytes in the first scan's entropy-coded data (from the end of the SOS
// segment to the next marker other than a restart), as {offset, length}; {0, 0} when none.
std::pair<std::size_t, std::size_t> longest_zero_run(const Bytes& b) {
  std::size_t i = 2;  // after SOI: marker segments up to the first SOS
  while (i + 4 <= b.size() && b[i] == 0xff && b[i + 1] != 0xda)
    i += b[i + 1] == 0xff ? 1 : 2 + ((std::size_t(b[i + 2]) << 8) | b[i + 3]);
  if (i + 4 > b.size() || b[i] != 0xff) return {0, 0};
  std::pair<std::size_t, std::size_t> best{0, 0};
  std::size_t run = 0;
  for (std::size_t j = i + 2 + ((std::size_t(b[i + 2]) << 8) | b[i + 3]); j < b.size(); ++j) {
    if (b[j] == 0xff && j + 1 < b.size()) {
      const std::uint8_t next = b[j + 1];
      if (next != 0 && (next < 0xd0 || next > 0xd7)) break;  // the scan's end
      ++j, run = 0;  // a stuffed 0xff 0x00 or a restart marker
      continue;
    }
    run = b[j] == 0 ? run + 1 : 0;
    if (run > best.second) best = {j + 1 - run, run};
  }
  return best;
}

bool jpeg_read_header_info(JpegReader& r, const Bytes& bytes) {
  if (setjmp(r.jump)) return false;
  r.cinfo.client_data = &r;  // before create: the error handler needs it, and create keeps it
  jpeg_create_decompress(&r.cinfo);
  r.created = true;
  jpeg_mem_src(&r.cinfo, bytes.data(), static_cast<unsigned long>(bytes.size()));
  jpeg_read_header(&r.cinfo, TRUE);
  const bool cmyk = r.cinfo.jpeg_color_space == JCS_CMYK || r.cinfo.jpeg_color_space == JCS_YCCK;
  r.cinfo.out_color_space = cmyk ? JCS_CMYK : JCS_RGB;
  jpeg_start_decompress(&r.cinfo);
  r.zeros_are_flat =
      r.cinfo.progressive_mode || r.cinfo.arith_code || zeros_code_flat_blocks(r.cinfo);
  return true;
}

bool jpeg_read_pixels(JpegReader& r, std::uint8_t* out, std::size_t row_bytes) {
  if (setjmp(r.jump)) return false;
  while (r.cinfo.output_scanline < r.cinfo.output_height) {
    JSAMPROW row = out + std::size_t(r.cinfo.output_scanline) * row_bytes;
    jpeg_read_scanlines(&r.cinfo, &row, 1);
  }
  jpeg_finish_decompress(&r.cinfo);
  return true;
}

Image decode_jpeg(const std::string& path, const Bytes& bytes) {
  JpegReader r;
  r.cinfo.err = jpeg_std_error(&r.err);
  r.err.error_exit = jpeg_on_error;
  r.err.emit_message = jpeg_on_message;
  if (!jpeg_read_header_info(r, bytes)) throw input_error(path, "JPEG", r.message);
  const int w = int(r.cinfo.output_width), h = int(r.cinfo.output_height);
  const int comps = r.cinfo.output_components;
  check_size(path, "JPEG", r.cinfo.output_width, r.cinfo.output_height);
  if (comps != 3 && comps != 4) {
    throw input_error(path, "JPEG", "unexpected component count " + std::to_string(comps));
  }
  const std::size_t row_bytes = std::size_t(w) * comps;
  Bytes pixels(row_bytes * h);
  if (!jpeg_read_pixels(r, pixels.data(), row_bytes)) throw input_error(path, "JPEG", r.message);
  if (!r.zeros_are_flat) {
    const auto [at, n] = longest_zero_run(bytes);
    if (n >= kMaxZeroRun)
      throw input_error(path, "JPEG",
                        "damaged: " + std::to_string(n) + " zero bytes at byte " +
                            std::to_string(at) +
                            " of the image data, which its Huffman codes cannot write (a "
                            "zeroed or lost disk block?)");
  }
  if (comps == 3) return from_u8(w, h, 3, pixels.data());

  // CMYK: Adobe writes the inks inverted (the usual case); otherwise they are stored directly.
  const bool inverted = r.cinfo.saw_Adobe_marker;
  Image img(w, h, 3);
  for (std::size_t i = 0; i < img.pixels(); ++i) {
    const std::uint8_t* p = &pixels[4 * i];
    const float k = (inverted ? p[3] : 255 - p[3]) / 255.0f;
    for (int c = 0; c < 3; ++c) img.data[3 * i + c] = (inverted ? p[c] : 255 - p[c]) / 255.0f * k;
  }
  return img;
}

// ---- WebP ------------------------------------------------------------------------------------

Image decode_webp(const std::string& path, const Bytes& bytes) {
  // The RIFF header states the file length, which tells truncation apart from corruption.
  const std::uint64_t riff = std::uint64_t(bytes[4]) | std::uint64_t(bytes[5]) << 8 |
                             std::uint64_t(bytes[6]) << 16 | std::uint64_t(bytes[7]) << 24;
  if (bytes.size() < riff + 8) {
    throw input_error(path, "WebP",
                      "truncated (" + std::to_string(bytes.size()) + " of " +
                          std::to_string(riff + 8) + " bytes)");
  }
  WebPBitstreamFeatures f;
  const VP8StatusCode status = WebPGetFeatures(bytes.data(), bytes.size(), &f);
  if (status == VP8_STATUS_NOT_ENOUGH_DATA) throw input_error(path, "WebP", "truncated");
  if (status != VP8_STATUS_OK) {
    throw input_error(path, "WebP", "invalid header (status " + std::to_string(status) + ")");
  }
  if (f.has_animation) throw input_error(path, "WebP", "animated WebP is not supported");
  check_size(path, "WebP", std::uint64_t(f.width), std::uint64_t(f.height));
  const int c = f.has_alpha ? 4 : 3;
  const int stride = f.width * c;
  Bytes pixels(std::size_t(stride) * f.height);
  const std::uint8_t* ok =
      c == 4 ? WebPDecodeRGBAInto(bytes.data(), bytes.size(), pixels.data(), pixels.size(), stride)
             : WebPDecodeRGBInto(bytes.data(), bytes.size(), pixels.data(), pixels.size(), stride);
  if (!ok) throw input_error(path, "WebP", "corrupt image data");
  return from_u8(f.width, f.height, c, pixels.data());
}

bool starts_with(const Bytes& b, std::size_t offset, const char* magic, std::size_t n) {
  return b.size() >= offset + n && std::memcmp(b.data() + offset, magic, n) == 0;
}

}  // namespace

Image read_image(const std::string& path) {
  const Bytes bytes = read_file(path);
  if (starts_with(bytes, 0, "\x89PNG\r\n\x1a\n", 8)) return decode_png(path, bytes);
  if (starts_with(bytes, 0, "\xff\xd8\xff", 3)) return decode_jpeg(path, bytes);
  if (starts_with(bytes, 0, "RIFF", 4) && starts_with(bytes, 8, "WEBP", 4)) {
    return decode_webp(path, bytes);
  }
  if (bytes.empty()) throw input_error(path, "image", "empty file");
  throw input_error(path, "image", "not a PNG, JPEG or WebP file");
}

std::vector<std::uint8_t> encode_png(const Image& img) {
  return encode_image(img, "PNG encoder");
}

std::vector<std::uint8_t> encode_png_indexed(const std::vector<std::uint8_t>& index,
                                             int width,
                                             int height,
                                             const std::vector<std::array<float, 3>>& palette) {
  const std::string what = "PNG encoder";
  if (width <= 0 || height <= 0 || index.size() != std::size_t(width) * std::size_t(height)) {
    throw input_error(what, "PNG",
                      std::to_string(index.size()) + " indices for a " + std::to_string(width) +
                          "x" + std::to_string(height) + " image");
  }
  if (palette.empty() || palette.size() > 256) {
    throw input_error(
        what, "PNG",
        "a palette of " + std::to_string(palette.size()) + " colours (1 to 256 are possible)");
  }
  const std::uint8_t top = *std::max_element(index.begin(), index.end());
  if (top >= palette.size()) {
    throw input_error(what, "PNG",
                      "index " + std::to_string(top) + " is beyond the palette of " +
                          std::to_string(palette.size()) + " colours");
  }
  Bytes colormap;
  for (const auto& rgb : palette) {
    for (const float v : rgb) colormap.push_back(to_u8(v));
  }
  return encode_samples(what, PNG_FORMAT_RGB_COLORMAP, width, height, index.data(), colormap);
}

void write_png(const std::string& path, const Image& img) {
  // Encoding to memory first means a failure leaves no file behind, and the rename makes the
  // final file appear whole.
  const Bytes encoded = encode_image(img, path);
  const std::string tmp = path + ".tmp" + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out)
      throw input_error(path, "file", std::string("cannot create: ") + std::strerror(errno));
    out.write(reinterpret_cast<const char*>(encoded.data()), std::streamsize(encoded.size()));
    out.close();
    if (!out) {
      std::remove(tmp.c_str());
      throw input_error(path, "file", "write failed");
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    std::remove(tmp.c_str());
    throw input_error(path, "file", "cannot rename into place: " + why);
  }
}

Image composite_on(const Image& img, const std::array<float, 3>& background) {
  if (img.channels != 4) return img;
  Image out(img.width, img.height, 3);
  for (std::size_t i = 0; i < img.pixels(); ++i) {
    const float a = img.data[4 * i + 3];
    for (int c = 0; c < 3; ++c) {
      out.data[3 * i + c] = img.data[4 * i + c] * a + background[c] * (1.0f - a);
    }
  }
  return out;
}

Image8 to_image8(const Image& img) {
  if (img.channels != 3 && img.channels != 4)
    throw Error("to_image8: " + std::to_string(img.channels) + " channels (3 or 4 expected)");
  Image8 out(img.width, img.height, img.channels);
  std::transform(img.data.begin(), img.data.end(), out.data.begin(), to_u8);
  return out;
}

Image downscale(const Image& img, int factor) {
  if (factor <= 1) return img;
  const int w = img.width / factor, h = img.height / factor;
  if (w == 0 || h == 0) {
    throw Error("downscale: factor " + std::to_string(factor) + " is larger than the image (" +
                std::to_string(img.width) + "x" + std::to_string(img.height) + ")");
  }
  const int c = img.channels;
  Image out(w, h, c);
  const float inv = 1.0f / float(factor * factor);
  std::vector<float> sum(c);
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      std::fill(sum.begin(), sum.end(), 0.0f);
      for (int dy = 0; dy < factor; ++dy) {
        for (int dx = 0; dx < factor; ++dx) {
          for (int k = 0; k < c; ++k) sum[k] += img.at(x * factor + dx, y * factor + dy, k);
        }
      }
      for (int k = 0; k < c; ++k) out.at(x, y, k) = sum[k] * inv;
    }
  }
  return out;
}

namespace {
// One axis of resize_area: output i is the mean of the input over [i n / m, (i + 1) n / m), as
// (input index, weight) pairs whose weights sum to 1.
std::vector<std::vector<std::pair<int, float>>> area_weights(int n, int m) {
  std::vector<std::vector<std::pair<int, float>>> w(static_cast<std::size_t>(m));
  const double scale = double(n) / double(m);
  for (int i = 0; i < m; ++i) {
    const double lo = i * scale, hi = (i + 1) * scale;
    for (int k = int(lo); k < n && k < hi; ++k) {
      const double cover = std::min(hi, double(k + 1)) - std::max(lo, double(k));
      if (cover > 0) w[std::size_t(i)].push_back({k, float(cover / scale)});
    }
  }
  return w;
}
}  // namespace

Image resize_area(const Image& img, int w, int h) {
  if (w <= 0 || h <= 0 || w > img.width || h > img.height)
    throw Error("resize_area: " + std::to_string(img.width) + "x" + std::to_string(img.height) +
                " cannot shrink to " + std::to_string(w) + "x" + std::to_string(h));
  const int c = img.channels;
  const auto wx = area_weights(img.width, w), wy = area_weights(img.height, h);
  Image rows(w, img.height, c);  // horizontal pass
  for (int y = 0; y < img.height; ++y)
    for (int x = 0; x < w; ++x)
      for (const auto& [k, weight] : wx[std::size_t(x)])
        for (int ch = 0; ch < c; ++ch) rows.at(x, y, ch) += weight * img.at(k, y, ch);
  Image out(w, h, c);
  for (int y = 0; y < h; ++y)
    for (const auto& [k, weight] : wy[std::size_t(y)])
      for (int x = 0; x < w; ++x)
        for (int ch = 0; ch < c; ++ch) out.at(x, y, ch) += weight * rows.at(x, k, ch);
  return out;
}

}  // namespace splat
