// Bad compact model files (.spz, .splat, .compressed.ply) and models no format can hold: each
// read or write fails with a clear error naming the file and the field (the round trips and
// byte layouts are in test_export.cpp).
#include <gtest/gtest.h>
#include <zlib.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>

#include "core/gaussians.h"
#include "io/compressed_ply.h"
#include "io/model_file.h"
#include "io/splat_format.h"
#include "io/spz.h"
#include "test_util.h"

namespace splat {
namespace {

namespace fs = std::filesystem;
using test::error_of;
using test::expect_contains;
using test::file_bytes;
using test::model_in_range;
using Bytes = std::vector<std::uint8_t>;

void write_bytes(const fs::path& p, const Bytes& b) {
  std::ofstream(p, std::ios::binary)
      .write(reinterpret_cast<const char*>(b.data()), std::streamsize(b.size()));
}
Bytes gzip_bytes(const Bytes& data) {
  z_stream s{};
  deflateInit2(&s, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 16 + MAX_WBITS, 9, Z_DEFAULT_STRATEGY);
  Bytes out(deflateBound(&s, uLong(data.size())));
  s.next_in = const_cast<Bytef*>(data.data());
  s.avail_in = uInt(data.size());
  s.next_out = out.data();
  s.avail_out = uInt(out.size());
  deflate(&s, Z_FINISH);
  out.resize(s.total_out);
  deflateEnd(&s);
  return out;
}

// ---- bad files: each an error naming the file and the field ----

fs::path spz_file(const std::string& test, const Bytes& stream) {
  const fs::path path = test::temp_dir(test) / "bad.spz";
  write_bytes(path, gzip_bytes(stream));
  return path;
}

TEST(ExportBadFile, SpzWrongMagic) {
  Bytes s = spz_stream(model_in_range(0, 3, 20));
  s[0] = 'X';
  const fs::path path = spz_file("bad_spz_magic", s);
  expect_contains(error_of([&] { read_model(path.string()); }),
                  {path.string(), "magic", "0x5053474e"});
}

TEST(ExportBadFile, SpzWrongVersion) {
  Bytes s = spz_stream(model_in_range(0, 3, 21));
  s[4] = 7;
  const fs::path path = spz_file("bad_spz_version", s);
  expect_contains(error_of([&] { read_model(path.string()); }),
                  {path.string(), "version", "7", "2 and 3"});
}

TEST(ExportBadFile, SpzVersion4IsNamed) {
  const fs::path path = test::temp_dir("bad_spz_v4") / "v4.spz";
  write_bytes(path, {0x4e, 0x47, 0x53, 0x50, 4, 0, 0, 0, 1, 0, 0, 0});
  expect_contains(error_of([&] { read_model(path.string()); }),
                  {path.string(), "version 4", "zstd"});
}

TEST(ExportBadFile, SpzNotGzip) {
  const fs::path path = test::temp_dir("bad_spz_gzip") / "text.spz";
  write_bytes(path, {'h', 'e', 'l', 'l', 'o'});
  expect_contains(error_of([&] { read_model(path.string()); }), {path.string(), "gzip"});
}

TEST(ExportBadFile, SpzTruncatedGzip) {
  const fs::path path = test::temp_dir("bad_spz_cut") / "cut.spz";
  Bytes z = gzip_bytes(spz_stream(model_in_range(2, 50, 22)));
  z.resize(z.size() / 2);
  write_bytes(path, z);
  expect_contains(error_of([&] { read_model(path.string()); }),
                  {path.string(), "gzip", "truncated"});
}

TEST(ExportBadFile, SpzTruncatedHeader) {
  const fs::path path = spz_file("bad_spz_header", {0x4e, 0x47, 0x53, 0x50, 3, 0});
  expect_contains(error_of([&] { read_model(path.string()); }),
                  {path.string(), "header", "truncated"});
}

TEST(ExportBadFile, SpzCountDoesNotMatchTheSize) {
  Bytes s = spz_stream(model_in_range(1, 10, 23));
  s[8] = 11;  // numPoints 11, data for 10
  fs::path path = spz_file("bad_spz_count", s);
  expect_contains(error_of([&] { read_model(path.string()); }),
                  {path.string(), "numPoints", "11 points", "truncated"});
  s[8] = 9;  // numPoints 9, data for 10
  path = spz_file("bad_spz_count_more", s);
  expect_contains(error_of([&] { read_model(path.string()); }),
                  {path.string(), "numPoints", "9 points"});
}

TEST(ExportBadFile, SpzShDegreeOutOfRange) {
  Bytes s = spz_stream(model_in_range(0, 2, 24));
  s[12] = 4;
  const fs::path path = spz_file("bad_spz_degree", s);
  expect_contains(error_of([&] { read_model(path.string()); }), {path.string(), "shDegree", "4"});
}

TEST(ExportBadFile, SplatTruncated) {
  const fs::path path = test::temp_dir("bad_splat_cut") / "cut.splat";
  write_splat(path.string(), model_in_range(0, 4, 25));
  fs::resize_file(path, 4 * 32 - 5);
  expect_contains(error_of([&] { read_model(path.string()); }),
                  {path.string(), "123 bytes", "32-byte", "truncated"});
}

TEST(ExportBadFile, SplatEmpty) {
  const fs::path path = test::temp_dir("bad_splat_empty") / "empty.splat";
  write_bytes(path, {});
  expect_contains(error_of([&] { read_model(path.string()); }), {path.string(), "empty"});
}

TEST(ExportBadFile, SplatNonPositiveScaleNamesTheSplat) {
  const fs::path path = test::temp_dir("bad_splat_scale") / "scale.splat";
  write_splat(path.string(), model_in_range(0, 3, 26));
  Bytes b = file_bytes(path);
  const float negative = -1.0f;
  std::memcpy(b.data() + 32 * 2 + 16, &negative, 4);
  write_bytes(path, b);
  expect_contains(error_of([&] { read_model(path.string()); }),
                  {path.string(), "splat 2", "scale"});
}

TEST(ExportBadFile, SplatNanPositionNamesTheSplat) {
  const fs::path path = test::temp_dir("bad_splat_nan") / "nan.splat";
  write_splat(path.string(), model_in_range(0, 3, 27));
  Bytes b = file_bytes(path);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::memcpy(b.data() + 32 * 1 + 4, &nan, 4);
  write_bytes(path, b);
  expect_contains(error_of([&] { read_model(path.string()); }),
                  {path.string(), "splat 1", "position"});
}

fs::path compressed_file(const std::string& test, int degree, std::size_t n) {
  const fs::path path = test::temp_dir(test) / "m.compressed.ply";
  write_compressed_ply(path.string(), model_in_range(degree, n, 28));
  return path;
}

// Replaces the first `from` in the header of the file at path.
void edit_header(const fs::path& path, const std::string& from, const std::string& to) {
  Bytes b = file_bytes(path);
  std::string s(b.begin(), b.end());
  const std::size_t at = s.find(from);
  ASSERT_NE(at, std::string::npos) << from;
  s.replace(at, from.size(), to);
  write_bytes(path, Bytes(s.begin(), s.end()));
}

TEST(ExportBadFile, CompressedPlyTruncated) {
  const fs::path path = compressed_file("bad_cply_cut", 1, 300);
  fs::resize_file(path, fs::file_size(path) - 1);
  expect_contains(error_of([&] { read_model(path.string()); }),
                  {path.string(), "body", "truncated"});
}

TEST(ExportBadFile, CompressedPlyChunkCountDoesNotMatch) {
  const fs::path path = compressed_file("bad_cply_chunks", 0, 300);
  edit_header(path, "element chunk 2", "element chunk 3");
  expect_contains(error_of([&] { read_model(path.string()); }),
                  {path.string(), "element chunk", "3 chunks", "300 splats"});
}

TEST(ExportBadFile, CompressedPlyShCountDoesNotMatch) {
  const fs::path path = compressed_file("bad_cply_sh", 1, 10);
  edit_header(path, "element sh 10", "element sh 11");
  expect_contains(error_of([&] { read_model(path.string()); }),
                  {path.string(), "element sh", "11 rows"});
}

TEST(ExportBadFile, CompressedPlyWrongPropertyType) {
  const fs::path path = compressed_file("bad_cply_type", 0, 10);
  edit_header(path, "property uint packed_scale", "property  int packed_scale");
  expect_contains(error_of([&] { read_model(path.string()); }),
                  {path.string(), "packed_scale", "uint"});
}

TEST(ExportBadFile, CompressedPlyMissingProperty) {
  const fs::path path = compressed_file("bad_cply_missing", 0, 10);
  edit_header(path, "property float max_scale_y", "property float max_scale_q");
  expect_contains(error_of([&] { read_model(path.string()); }),
                  {path.string(), "max_scale_y", "missing"});
}

TEST(ExportBadFile, CompressedPlyWrongMagic) {
  const fs::path path = compressed_file("bad_cply_magic", 0, 10);
  edit_header(path, "ply\n", "plx\n");
  expect_contains(error_of([&] { read_model(path.string()); }), {path.string(), "not a PLY"});
}

TEST(ExportBadFile, CompressedPlyUnexpectedElements) {
  const fs::path path = test::temp_dir("bad_cply_elements") / "m.compressed.ply";
  const std::string text =
      "ply\nformat binary_little_endian 1.0\nelement chunk 0\nproperty float min_x\nelement face "
      "0\n"
      "property float a\nend_header\n";
  write_bytes(path, Bytes(text.begin(), text.end()));
  expect_contains(error_of([&] { read_model(path.string()); }),
                  {path.string(), "elements", "chunk, face"});
}

TEST(ExportBadFile, NonFiniteModelIsNotWritten) {
  const fs::path dir = test::temp_dir("bad_model_nan");
  Gaussians g = model_in_range(1, 5, 29);
  g.log_scales[3 * 3 + 1] = std::numeric_limits<float>::infinity();
  for (const ModelFormat f :
       {ModelFormat::Ply, ModelFormat::Splat, ModelFormat::Spz, ModelFormat::CompressedPly}) {
    const std::string path = (dir / model_file_name(f)).string();
    expect_contains(error_of([&] { write_model(path, g, f); }), {path, "splat 3", "log_scales"});
    EXPECT_FALSE(fs::exists(path)) << path;
  }
}

}  // namespace
}  // namespace splat
