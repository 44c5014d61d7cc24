// COLMAP sparse models, binary and text, laid out as colmap/scene/reconstruction_io.cc writes
// them (little-endian binary; text with '#' comment lines).
#include "io/colmap.h"

#include <algorithm>
#include <bit>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>

#include "core/error.h"
#include "io/loader_util.h"
#include "io/read_file.h"

namespace splat {

static_assert(std::endian::native == std::endian::little, "COLMAP binary models are little-endian");

namespace {

namespace fs = std::filesystem;

// clang-format off
constexpr ColmapCameraModel kModels[] = {
    {0, "SIMPLE_PINHOLE", 3, 1, false},
    {1, "PINHOLE", 4, 2, false},
    {2, "SIMPLE_RADIAL", 4, 1, false},
    {3, "RADIAL", 5, 1, false},
    {4, "OPENCV", 8, 2, false},
    {5, "OPENCV_FISHEYE", 8, 2, true},
    {6, "FULL_OPENCV", 12, 2, false},
    {7, "FOV", 5, 2, false},
    {8, "SIMPLE_RADIAL_FISHEYE", 4, 1, true},
    {9, "RADIAL_FISHEYE", 5, 1, true},
    {10, "THIN_PRISM_FISHEYE", 12, 2, true},
    {11, "RAD_TAN_THIN_PRISM_FISHEYE", 16, 2, true},
};
// clang-format on

std::string unknown_model_id(std::uint64_t id) {
  return "unknown camera model id " + std::to_string(id) + " (this reader knows ids 0 to " +
         std::to_string(std::size(kModels) - 1) + "; a newer COLMAP may have written it)";
}

// Checks shared by both forms; `record` names the record in errors.
void check_finite(const std::string& file,
                  const std::string& record,
                  const char* what,
                  const double* v,
                  std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    if (!std::isfinite(v[i])) throw input_error(file, record, std::string(what) + " is not finite");
  }
}

// Points become float splat centres whose squared distances must stay finite.
constexpr double kMaxCoordinate = 1e15;

void check_point(const std::string& file, const std::string& record, const ColmapPoint& p) {
  check_finite(file, record, "xyz", p.xyz.data(), 3);
  for (double v : p.xyz) {
    if (std::abs(v) > kMaxCoordinate) {
      char text[32];
      std::snprintf(text, sizeof text, "%g", v);
      throw input_error(file, record,
                        std::string("xyz coordinate ") + text +
                            " is beyond what a float model can hold (|x| <= 1e15)");
    }
  }
}

void check_camera(const std::string& file, const std::string& record, const ColmapCamera& c) {
  if (c.width == 0 || c.height == 0 || c.width > (1u << 20) || c.height > (1u << 20)) {
    throw input_error(
        file, record,
        "implausible size " + std::to_string(c.width) + "x" + std::to_string(c.height));
  }
  check_finite(file, record, "a parameter", c.params.data(), c.params.size());
  const ColmapCameraModel& m = *colmap_camera_model(c.model_id);
  const std::vector<double>& p = c.params;  // the focal length(s), then the principal point
  if (const auto problem = pinhole_problem(p[0], p[m.num_focal - 1], p[m.num_focal],
                                           p[m.num_focal + 1], double(c.width), double(c.height)))
    throw input_error(file, record, *problem);
}

void check_image(const std::string& file, const std::string& record, const ColmapImage& im) {
  check_finite(file, record, "qvec", im.qvec.data(), 4);
  check_finite(file, record, "tvec", im.tvec.data(), 3);
  double n2 = 0;
  for (double q : im.qvec) n2 += q * q;
  // COLMAP writes unit quaternions; anything else is a damaged record, not a pose to guess at.
  if (std::abs(std::sqrt(n2) - 1.0) > 1e-3) {
    throw input_error(file, record,
                      "qvec is not a unit quaternion (norm " + std::to_string(std::sqrt(n2)) + ")");
  }
  if (im.name.empty()) throw input_error(file, record, "empty image name");
}

// ---- binary ----------------------------------------------------------------------------------

class BinaryReader {
 public:
  explicit BinaryReader(std::string file)
      : file_(std::move(file)), bytes_(read_input_file(file_, "COLMAP model file")) {}

  template <class T>
  T get(const std::string& record) {
    need(sizeof(T), record);
    T v;
    std::memcpy(&v, bytes_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  std::string get_string(const std::string& record) {
    const std::size_t end = bytes_.find('\0', pos_);
    if (end == std::string::npos) throw truncated(record);
    std::string s = bytes_.substr(pos_, end - pos_);
    pos_ = end + 1;
    return s;
  }
  void skip(std::uint64_t count, std::size_t elem_size, const std::string& record) {
    if (count > remaining() / elem_size) throw truncated(record);
    pos_ += count * elem_size;
  }
  std::size_t remaining() const { return bytes_.size() - pos_; }
  // At most n records of at least min_size bytes fit in what is left: bounds a reserve().
  std::size_t fit(std::uint64_t n, std::size_t min_size) const {
    return std::size_t(std::min<std::uint64_t>(n, remaining() / min_size));
  }
  void expect_end() const {
    if (remaining() != 0) {
      throw input_error(
          file_, "end",
          std::to_string(remaining()) + " bytes after the last record (count and data disagree)");
    }
  }
  const std::string& file() const { return file_; }

 private:
  void need(std::size_t n, const std::string& record) const {
    if (remaining() < n) throw truncated(record);
  }
  Error truncated(const std::string& record) const {
    return input_error(file_, record,
                       "truncated: the file ends at byte " + std::to_string(bytes_.size()) +
                           " inside this record");
  }
  std::string file_;
  std::string bytes_;
  std::size_t pos_ = 0;
};

// A binary model file: a uint64 count, then that many records of at least min_bytes each, read
// by read_one(reader, "KIND record k of n"), and nothing after them.
template <class T, class ReadOne>
std::vector<T> read_records(const std::string& path,
                            const char* kind,
                            std::size_t min_bytes,
                            ReadOne read_one) {
  BinaryReader r(path);
  const auto n = r.get<std::uint64_t>("header");
  std::vector<T> out;
  out.reserve(r.fit(n, min_bytes));
  for (std::uint64_t k = 0; k < n; ++k)
    out.push_back(read_one(
        r, std::string(kind) + " record " + std::to_string(k + 1) + " of " + std::to_string(n)));
  r.expect_end();
  return out;
}

std::vector<ColmapCamera> read_cameras_bin(const std::string& path) {
  return read_records<ColmapCamera>(path, "camera", 24, [&](BinaryReader& r, std::string rec) {
    ColmapCamera c;
    c.id = r.get<std::uint32_t>(rec);
    rec += " (camera " + std::to_string(c.id) + ")";
    c.model_id = r.get<std::int32_t>(rec);
    const ColmapCameraModel* m = colmap_camera_model(c.model_id);
    if (!m) throw input_error(path, rec, unknown_model_id(std::uint32_t(c.model_id)));
    c.width = r.get<std::uint64_t>(rec);
    c.height = r.get<std::uint64_t>(rec);
    for (int i = 0; i < m->num_params; ++i) c.params.push_back(r.get<double>(rec));
    check_camera(path, rec, c);
    return c;
  });
}

std::vector<ColmapImage> read_images_bin(const std::string& path) {
  return read_records<ColmapImage>(path, "image", 73, [&](BinaryReader& r, std::string rec) {
    ColmapImage im;
    im.id = r.get<std::uint32_t>(rec);
    rec += " (image " + std::to_string(im.id) + ")";
    for (double& q : im.qvec) q = r.get<double>(rec);
    for (double& t : im.tvec) t = r.get<double>(rec);
    im.camera_id = r.get<std::uint32_t>(rec);
    im.name = r.get_string(rec);
    rec += " (" + im.name + ")";
    const auto num_points2d = r.get<std::uint64_t>(rec);
    r.skip(num_points2d, 24, rec);  // x, y (double), point3D_id (uint64)
    check_image(path, rec, im);
    return im;
  });
}

std::vector<ColmapPoint> read_points_bin(const std::string& path) {
  return read_records<ColmapPoint>(path, "point", 51, [&](BinaryReader& r, std::string rec) {
    ColmapPoint p;
    p.id = r.get<std::uint64_t>(rec);
    rec += " (point " + std::to_string(p.id) + ")";
    for (double& x : p.xyz) x = r.get<double>(rec);
    for (std::uint8_t& c : p.rgb) c = r.get<std::uint8_t>(rec);
    p.error = r.get<double>(rec);
    p.track_length = r.get<std::uint64_t>(rec);
    r.skip(p.track_length, 8, rec);  // image_id, point2D_idx (uint32 each)
    check_point(path, rec, p);
    return p;
  });
}

// ---- text ------------------------------------------------------------------------------------

template <class T>
std::optional<T> parse_number(std::string_view s) {
  T v{};
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

std::vector<std::string_view> split_fields(std::string_view line) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && std::isspace(static_cast<unsigned char>(line[i]))) ++i;
    std::size_t j = i;
    while (j < line.size() && !std::isspace(static_cast<unsigned char>(line[j]))) ++j;
    if (j > i) out.push_back(line.substr(i, j - i));
    i = j;
  }
  return out;
}

// A text file as numbered lines; comment lines are skipped by the readers, not here, because an
// empty line can be data (an image with no 2D points).
class TextReader {
 public:
  explicit TextReader(std::string file)
      : file_(std::move(file)), text_(read_input_file(file_, "COLMAP model file")) {}
  // The next line (without '\r'); false at the end.
  bool next(std::string_view& line) {
    if (pos_ >= text_.size()) return false;
    std::size_t end = text_.find('\n', pos_);
    if (end == std::string::npos) end = text_.size();
    line = std::string_view(text_).substr(pos_, end - pos_);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    pos_ = end + 1;
    ++line_number_;
    return true;
  }
  // The next line that is neither blank nor a comment.
  bool next_record(std::string_view& line) {
    while (next(line)) {
      const auto f = line.find_first_not_of(" \t");
      if (f != std::string_view::npos && line[f] != '#') return true;
    }
    return false;
  }
  std::string where() const { return "line " + std::to_string(line_number_); }
  template <class T>
  T number(std::string_view field, const char* what, const std::string& record) const {
    if (auto v = parse_number<T>(field)) return *v;
    throw input_error(file_, record,
                      std::string(what) + ": '" + std::string(field) + "' is not a valid number");
  }
  const std::string& file() const { return file_; }

 private:
  std::string file_;
  std::string text_;
  std::size_t pos_ = 0;
  int line_number_ = 0;
};

std::vector<ColmapCamera> read_cameras_txt(const std::string& path) {
  TextReader r(path);
  std::vector<ColmapCamera> out;
  std::string_view line;
  while (r.next_record(line)) {
    const auto f = split_fields(line);
    std::string rec = r.where();
    if (f.size() < 4) {
      throw input_error(path, rec,
                        "expected CAMERA_ID MODEL WIDTH HEIGHT PARAMS[], got " +
                            std::to_string(f.size()) + " fields");
    }
    ColmapCamera c;
    c.id = r.number<std::uint32_t>(f[0], "CAMERA_ID", rec);
    rec += " (camera " + std::to_string(c.id) + ")";
    const ColmapCameraModel* m = colmap_camera_model(f[1]);
    if (!m) throw input_error(path, rec, "unknown camera model '" + std::string(f[1]) + "'");
    c.model_id = m->id;
    if (f.size() != 4 + std::size_t(m->num_params)) {
      throw input_error(path, rec,
                        std::string(m->name) + " takes " + std::to_string(m->num_params) +
                            " parameters, got " + std::to_string(f.size() - 4));
    }
    c.width = r.number<std::uint64_t>(f[2], "WIDTH", rec);
    c.height = r.number<std::uint64_t>(f[3], "HEIGHT", rec);
    for (std::size_t i = 4; i < f.size(); ++i)
      c.params.push_back(r.number<double>(f[i], "PARAMS", rec));
    check_camera(path, rec, c);
    out.push_back(std::move(c));
  }
  return out;
}

// Each image is two lines: IMAGE_ID QW QX QY QZ TX TY TZ CAMERA_ID NAME, then its 2D points as
// X Y POINT3D_ID triples (the line may be empty, but it is there).
std::vector<ColmapImage> read_images_txt(const std::string& path) {
  TextReader r(path);
  std::vector<ColmapImage> out;
  std::string_view line;
  while (r.next_record(line)) {
    const auto f = split_fields(line);
    std::string rec = r.where();
    if (f.size() != 10) {
      throw input_error(path, rec,
                        "expected IMAGE_ID QW QX QY QZ TX TY TZ CAMERA_ID NAME (10 fields), got " +
                            std::to_string(f.size()));
    }
    ColmapImage im;
    im.id = r.number<std::uint32_t>(f[0], "IMAGE_ID", rec);
    rec += " (image " + std::to_string(im.id) + ")";
    for (int i = 0; i < 4; ++i) im.qvec[i] = r.number<double>(f[1 + i], "QVEC", rec);
    for (int i = 0; i < 3; ++i) im.tvec[i] = r.number<double>(f[5 + i], "TVEC", rec);
    im.camera_id = r.number<std::uint32_t>(f[8], "CAMERA_ID", rec);
    im.name = std::string(f[9]);
    check_image(path, rec, im);
    std::string_view points;
    if (r.next(points)) {
      const auto p = split_fields(points);
      if (p.size() % 3 != 0) {
        throw input_error(path, r.where() + " (2D points of image " + std::to_string(im.id) + ")",
                          "expected X Y POINT3D_ID triples, got " + std::to_string(p.size()) +
                              " fields (each image line is followed by its points line)");
      }
    }
    out.push_back(std::move(im));
  }
  return out;
}

std::vector<ColmapPoint> read_points_txt(const std::string& path) {
  TextReader r(path);
  std::vector<ColmapPoint> out;
  std::string_view line;
  while (r.next_record(line)) {
    const auto f = split_fields(line);
    std::string rec = r.where();
    if (f.size() < 8 || (f.size() - 8) % 2 != 0) {
      throw input_error(path, rec,
                        "expected POINT3D_ID X Y Z R G B ERROR and (IMAGE_ID POINT2D_IDX) pairs, "
                        "got " +
                            std::to_string(f.size()) + " fields");
    }
    ColmapPoint p;
    p.id = r.number<std::uint64_t>(f[0], "POINT3D_ID", rec);
    rec += " (point " + std::to_string(p.id) + ")";
    for (int i = 0; i < 3; ++i) p.xyz[i] = r.number<double>(f[1 + i], "XYZ", rec);
    for (int i = 0; i < 3; ++i) {
      const auto c = r.number<unsigned>(f[4 + i], "RGB", rec);
      if (c > 255) throw input_error(path, rec, "RGB: " + std::to_string(c) + " is above 255");
      p.rgb[i] = std::uint8_t(c);
    }
    p.error = r.number<double>(f[7], "ERROR", rec);
    p.track_length = (f.size() - 8) / 2;
    check_point(path, rec, p);
    out.push_back(p);
  }
  return out;
}

// ---- model -----------------------------------------------------------------------------------

// DIR/NAME.bin, else DIR/NAME.txt.
std::string model_file(const fs::path& dir, const char* name) {
  const fs::path bin = dir / (std::string(name) + ".bin");
  const fs::path txt = dir / (std::string(name) + ".txt");
  if (const auto found = find_input({bin, txt})) return found->string();
  throw input_error(bin.string(), "file", "not found (nor " + txt.filename().string() + ")");
}

bool is_binary(const std::string& path) {
  return fs::path(path).extension() == ".bin";
}

template <class T, class Id>
void check_unique_ids(const std::string& file,
                      const std::vector<T>& items,
                      Id T::*id,
                      const char* kind) {
  std::set<Id> seen;
  for (const T& item : items) {
    if (!seen.insert(item.*id).second) {
      throw input_error(file, std::string(kind) + " " + std::to_string(item.*id),
                        "the id appears more than once");
    }
  }
}

}  // namespace

const ColmapCameraModel* colmap_camera_model(int id) {
  for (const auto& m : kModels) {
    if (m.id == id) return &m;
  }
  return nullptr;
}

const ColmapCameraModel* colmap_camera_model(std::string_view name) {
  for (const auto& m : kModels) {
    if (m.name == name) return &m;
  }
  return nullptr;
}

ColmapModel read_colmap_model(const std::string& sparse_dir) {
  const fs::path dir(sparse_dir);
  ColmapModel m;
  m.cameras_file = model_file(dir, "cameras");
  m.images_file = model_file(dir, "images");
  m.points_file = model_file(dir, "points3D");
  m.cameras = is_binary(m.cameras_file) ? read_cameras_bin(m.cameras_file)
                                        : read_cameras_txt(m.cameras_file);
  m.images =
      is_binary(m.images_file) ? read_images_bin(m.images_file) : read_images_txt(m.images_file);
  m.points =
      is_binary(m.points_file) ? read_points_bin(m.points_file) : read_points_txt(m.points_file);
  check_unique_ids(m.cameras_file, m.cameras, &ColmapCamera::id, "camera");
  check_unique_ids(m.images_file, m.images, &ColmapImage::id, "image");
  check_unique_ids(m.points_file, m.points, &ColmapPoint::id, "point");
  std::set<std::uint32_t> camera_ids;
  for (const ColmapCamera& c : m.cameras) camera_ids.insert(c.id);
  for (const ColmapImage& im : m.images) {
    if (!camera_ids.count(im.camera_id)) {
      throw input_error(m.images_file, "image " + std::to_string(im.id) + " (" + im.name + ")",
                        "camera " + std::to_string(im.camera_id) + " is not in " +
                            fs::path(m.cameras_file).filename().string());
    }
  }
  return m;
}

}  // namespace splat
