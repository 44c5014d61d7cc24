#include "io/checkpoint.h"

// File layout (all integers little-endian):
//   "SPLATCKP"  u32 version
//   then sections in a fixed order, each:
//     u32 name_length, name bytes, u32 element type, u64 count, u64 byte_size, byte_size bytes
//   iteration; params.*, adam_m.*, adam_v.* (sh_degree, then each Gaussians group);
//   rng_state; view_order; view_pos; config_toml; adc_grad2d, adc_count (version 2 on; empty
//   when the run gathers no ADC statistics); run_id (version 3 on); filter3d (version 4 on; empty
//   unless model.antialiased); appearance, appearance_m, appearance_v (version 5 on; empty unless
//   train.appearance); train_image_names (each name followed by a NUL byte), train_image_sizes
//   (width, height, file bytes per image) (version 6 on); adc_grad2d_abs (version 7 on; empty
//   unless the run gathers AbsGS's statistic); pose, pose_m, pose_v, pose_steps (version 8 on;
//   empty unless train.pose_opt).
//   From version 6 on, u32 CRC32C of every byte before it; nothing follows.
// Named, typed and sized sections let the reader say exactly which part is damaged, and let a
// later version add sections without guessing at offsets. The checksum tells damage (a flipped
// bit on disk or in a copy) from a good file even where it leaves every section well-formed.

#include <algorithm>
#include <bit>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <type_traits>
#include <utility>

#include "core/crc32c.h"
#include "core/error.h"
#include "core/finite.h"
#include "io/file_util.h"
#include "io/read_file.h"

namespace splat {
namespace {

static_assert(std::endian::native == std::endian::little,
              "sections are copied byte for byte, so the host must be little-endian");

constexpr char kMagic[8] = {'S', 'P', 'L', 'A', 'T', 'C', 'K', 'P'};
// Version 1 lacks the ADC statistics, version 2 the run id, version 3 the 3D filter, version 4
// the appearance transforms, version 5 the training images and the checksum, version 6 the
// absolute gradient statistic, version 7 the pose corrections; all are still read.
constexpr std::uint32_t kVersion = 8;
constexpr std::uint32_t kFirstChecksummed = 6;
constexpr std::size_t kAppearanceFloats = 12;  // engine/appearance.h: [A | b] per training image
constexpr std::size_t kPoseFloats = 9;         // engine/pose.h: dt and the 6D rotation delta
constexpr int kMaxShDegree = 3;
constexpr std::uint32_t kMaxNameLength = 64;  // longer means the header itself is corrupt

enum class ElemType : std::uint32_t { kBytes = 1, kI32 = 2, kI64 = 3, kU64 = 4, kF32 = 5 };

template <class T>
constexpr ElemType elem_type() {
  if constexpr (std::is_same_v<T, char>) return ElemType::kBytes;
  if constexpr (std::is_same_v<T, std::int32_t>) return ElemType::kI32;
  if constexpr (std::is_same_v<T, std::int64_t>) return ElemType::kI64;
  if constexpr (std::is_same_v<T, std::uint64_t>) return ElemType::kU64;
  if constexpr (std::is_same_v<T, float>) return ElemType::kF32;
}

std::string section_field(const std::string& name) {
  return "section " + name;
}

// ---- shapes --------------------------------------------------------------------------------

// The writer and the reader both run this, so no checkpoint is written that cannot be read.
void check_model(const std::string& path, const std::string& prefix, const Gaussians& g) {
  if (g.sh_degree < 0 || g.sh_degree > kMaxShDegree)
    throw input_error(path, section_field(prefix + "sh_degree"),
                      "SH degree " + std::to_string(g.sh_degree) + " is outside 0..3");
  const auto widths = g.widths();  // the model's own, which resize() uses too
  std::size_t i = 0;
  g.for_each_group([&](const char* name, const std::vector<float>& v) {
    const std::size_t want = g.size() * widths[i++];
    if (v.size() != want)
      throw input_error(path, section_field(prefix + name),
                        std::to_string(v.size()) + " floats; " + std::to_string(g.size()) +
                            " Gaussians of SH degree " + std::to_string(g.sh_degree) + " need " +
                            std::to_string(want));
  });
}

// A per-training-image group (appearance, pose): whole `width`-float entries, moments of its size,
// finite values.
void check_per_image(const std::string& path,
                     const std::string& name,
                     const std::vector<float>& params,
                     const std::vector<float>& m,
                     const std::vector<float>& v,
                     std::size_t width,
                     const std::string& entries) {
  if (params.size() % width != 0)
    throw input_error(path, section_field(name),
                      std::to_string(params.size()) + " floats, not a whole number of " +
                          std::to_string(width) + "-float " + entries);
  for (const auto& [suffix, moments] : {std::pair{"_m", &m}, std::pair{"_v", &v}})
    if (moments->size() != params.size())
      throw input_error(path, section_field(name + suffix),
                        std::to_string(moments->size()) + " floats, but " + name + " has " +
                            std::to_string(params.size()));
  for (std::size_t i = 0; i < params.size(); ++i)
    if (!std::isfinite(params[i]))
      throw input_error(path, section_field(name),
                        "entry " + std::to_string(i) + " is " + std::to_string(params[i]));
}

void check_shapes(const std::string& path, const Checkpoint& c) {
  if (c.iteration < 0)
    throw input_error(path, section_field("iteration"),
                      std::to_string(c.iteration) + " is negative");
  check_model(path, "params.", c.params);
  // A NaN or inf parameter poisons every later step and render. (Adam moments are not checked:
  // they only scale steps, and a checkpoint keeps whatever bits they hold.)
  if (const auto bad = find_non_finite(c.params))
    throw input_error(path, section_field("params." + bad->group), bad->describe());
  for (const auto& [prefix, g] : {std::pair{"adam_m", &c.adam_m}, std::pair{"adam_v", &c.adam_v}}) {
    check_model(path, std::string(prefix) + ".", *g);
    if (g->size() != c.params.size() || g->sh_degree != c.params.sh_degree)
      throw input_error(path, section_field(prefix),
                        std::to_string(g->size()) + " Gaussians of SH degree " +
                            std::to_string(g->sh_degree) + ", but params has " +
                            std::to_string(c.params.size()) + " of degree " +
                            std::to_string(c.params.sh_degree));
  }
  if (c.adc_grad2d.size() != c.adc_count.size() ||
      (!c.adc_count.empty() && c.adc_count.size() != c.params.size()))
    throw input_error(path, section_field("adc_count"),
                      std::to_string(c.adc_grad2d.size()) + " gradient sums and " +
                          std::to_string(c.adc_count.size()) + " counts for " +
                          std::to_string(c.params.size()) +
                          " Gaussians (either none or one of each per Gaussian)");
  if (!c.adc_grad2d_abs.empty() && c.adc_grad2d_abs.size() != c.adc_count.size())
    throw input_error(path, section_field("adc_grad2d_abs"),
                      std::to_string(c.adc_grad2d_abs.size()) + " absolute gradient sums for " +
                          std::to_string(c.adc_count.size()) +
                          " counts (either none or one per count)");
  if (!c.filter3d.empty() && c.filter3d.size() != c.params.size())
    throw input_error(path, section_field("filter3d"),
                      std::to_string(c.filter3d.size()) + " filter variances for " +
                          std::to_string(c.params.size()) +
                          " Gaussians (either none or one per Gaussian)");
  for (std::size_t i = 0; i < c.filter3d.size(); ++i)
    if (!(c.filter3d[i] >= 0.0f && std::isfinite(c.filter3d[i])))
      throw input_error(path, section_field("filter3d"),
                        "entry " + std::to_string(i) + " is " + std::to_string(c.filter3d[i]) +
                            " (a variance: finite and not negative)");
  check_per_image(path, "appearance", c.appearance, c.appearance_m, c.appearance_v,
                  kAppearanceFloats, "transforms");
  check_per_image(path, "pose", c.pose, c.pose_m, c.pose_v, kPoseFloats, "pose corrections");
  if (c.pose_steps.size() != c.pose.size() / kPoseFloats)
    throw input_error(path, section_field("pose_steps"),
                      std::to_string(c.pose_steps.size()) + " step counts for " +
                          std::to_string(c.pose.size() / kPoseFloats) +
                          " pose corrections (one per correction)");
  for (std::size_t i = 0; i < c.pose_steps.size(); ++i)
    if (c.pose_steps[i] < 0)
      throw input_error(path, section_field("pose_steps"),
                        "entry " + std::to_string(i) + " is " + std::to_string(c.pose_steps[i]));
  if (c.view_pos < 0 || std::uint64_t(c.view_pos) > c.view_order.size())
    throw input_error(path, section_field("view_pos"),
                      std::to_string(c.view_pos) + " is outside view_order (" +
                          std::to_string(c.view_order.size()) + " views)");
  for (std::size_t i = 0; i < c.train_images.size(); ++i) {
    const TrainImage& t = c.train_images[i];
    if (t.name.empty() || t.name.find('\0') != std::string::npos)
      throw input_error(path, section_field("train_image_names"),
                        "name " + std::to_string(i) + " is empty or holds a NUL byte");
    if (t.width < 1 || t.height < 1)
      throw input_error(path, section_field("train_image_sizes"),
                        "image " + std::to_string(i) + " is " + std::to_string(t.width) + "x" +
                            std::to_string(t.height));
  }
}

// ---- writing -------------------------------------------------------------------------------

// The file being written, and the CRC32C of every byte written to it.
struct Out {
  std::ostream& stream;
  std::uint32_t crc = 0;
  void write(const void* data, std::size_t size) {
    stream.write(static_cast<const char*>(data), static_cast<std::streamsize>(size));
    crc = crc32c(crc, data, size);
  }
};

template <class T>
void put_raw(Out& out, const T& v) {
  out.write(&v, sizeof v);
}

template <class T>
void put_section(Out& out, const std::string& name, const T* data, std::size_t count) {
  put_raw(out, static_cast<std::uint32_t>(name.size()));
  out.write(name.data(), name.size());
  put_raw(out, elem_type<T>());
  put_raw(out, static_cast<std::uint64_t>(count));
  put_raw(out, static_cast<std::uint64_t>(count * sizeof(T)));
  out.write(data, count * sizeof(T));
}

template <class T>
void put_scalar(Out& out, const std::string& name, T v) {
  put_section(out, name, &v, 1);
}

void put_model(Out& out, const std::string& prefix, const Gaussians& g) {
  put_scalar<std::int32_t>(out, prefix + "sh_degree", g.sh_degree);
  g.for_each_group([&](const char* name, const std::vector<float>& v) {
    put_section(out, prefix + name, v.data(), v.size());
  });
}

void put_train_images(Out& out, const std::vector<TrainImage>& images) {
  std::string names;
  std::vector<std::int64_t> sizes;
  for (const TrainImage& t : images) {
    names += t.name + '\0';
    sizes.insert(sizes.end(), {t.width, t.height, std::int64_t(t.file_bytes)});
  }
  put_section(out, "train_image_names", names.data(), names.size());
  put_section(out, "train_image_sizes", sizes.data(), sizes.size());
}

// ---- reading -------------------------------------------------------------------------------

// Streams sections in order, knowing how many bytes are left so that a damaged count is reported
// as truncation instead of becoming a huge allocation.
class SectionReader {
 public:
  explicit SectionReader(const std::string& path)
      : path_((require_regular_file(path, "checkpoint"), path)), in_(path, std::ios::binary) {
    if (!in_) throw input_error(path, "file", std::string("cannot open: ") + std::strerror(errno));
    std::error_code ec;
    left_ = std::filesystem::file_size(path, ec);
    if (ec) throw input_error(path, "file", "cannot stat: " + ec.message());
  }

  std::uint32_t read_preamble() {
    char magic[sizeof kMagic];
    read(magic, sizeof magic, "magic");
    if (std::memcmp(magic, kMagic, sizeof kMagic) != 0)
      throw input_error(path_, "magic", "not a splat checkpoint (no SPLATCKP signature)");
    std::uint32_t version = 0;
    read(&version, sizeof version, "version");
    if (version < 1 || version > kVersion)
      throw input_error(path_, "version",
                        "unsupported checkpoint version " + std::to_string(version) +
                            " (this build reads versions 1 to " + std::to_string(kVersion) + ")");
    return version;
  }

  template <class T>
  std::vector<T> section(const std::string& name) {
    const std::string field = section_field(name);
    std::uint32_t name_len = 0;
    read(&name_len, sizeof name_len, field);
    if (name_len > kMaxNameLength)
      throw input_error(path_, field,
                        "corrupt section header (name length " + std::to_string(name_len) + ")");
    std::string found(name_len, '\0');
    read(found.data(), name_len, field);
    if (found != name)
      throw input_error(path_, field, "found section '" + printable(found) + "' in its place");
    ElemType type{};
    std::uint64_t count = 0, bytes = 0;
    read(&type, sizeof type, field);
    read(&count, sizeof count, field);
    read(&bytes, sizeof bytes, field);
    if (type != elem_type<T>())
      throw input_error(path_, field,
                        "element type " + std::to_string(std::uint32_t(type)) + ", expected " +
                            std::to_string(std::uint32_t(elem_type<T>())));
    if (count > std::numeric_limits<std::uint64_t>::max() / sizeof(T) || bytes != count * sizeof(T))
      throw input_error(path_, field,
                        "size mismatch: " + std::to_string(count) + " elements in " +
                            std::to_string(bytes) + " bytes");
    require(bytes, field);
    std::vector<T> v(count);
    read(v.data(), bytes, field);
    return v;
  }

  template <class T>
  T scalar(const std::string& name) {
    const std::vector<T> v = section<T>(name);
    if (v.size() != 1)
      throw input_error(path_, section_field(name),
                        std::to_string(v.size()) + " elements, expected 1");
    return v[0];
  }

  // The stored CRC32C, which is not part of what crc() covers.
  std::uint32_t checksum() {
    std::uint32_t stored = 0;
    const std::uint32_t covered = crc_;
    read(&stored, sizeof stored, "checksum");
    crc_ = covered;
    return stored;
  }
  std::uint32_t crc() const { return crc_; }  // of every byte read so far

  void expect_end() {
    if (left_ != 0)
      throw input_error(path_, "end",
                        std::to_string(left_) + " unexpected bytes after the last section");
  }

 private:
  void require(std::uint64_t n, const std::string& field) const {
    if (n > left_)
      throw input_error(path_, field,
                        "truncated file: needs " + std::to_string(n) + " more bytes, " +
                            std::to_string(left_) + " left");
  }

  void read(void* dst, std::uint64_t n, const std::string& field) {
    require(n, field);
    in_.read(static_cast<char*>(dst), static_cast<std::streamsize>(n));
    if (!in_) throw input_error(path_, field, "read error");
    crc_ = crc32c(crc_, dst, n);
    left_ -= n;
  }

  static std::string printable(std::string s) {
    for (char& ch : s)
      if (!std::isprint(static_cast<unsigned char>(ch))) ch = '?';
    return s;
  }

  std::string path_;
  std::ifstream in_;
  std::uint64_t left_ = 0;
  std::uint32_t crc_ = 0;
};

Gaussians read_model(SectionReader& r, const std::string& prefix) {
  Gaussians g;
  g.sh_degree = r.scalar<std::int32_t>(prefix + "sh_degree");
  g.for_each_group(
      [&](const char* name, std::vector<float>& v) { v = r.section<float>(prefix + name); });
  return g;
}

std::vector<TrainImage> read_train_images(SectionReader& r, const std::string& path) {
  const std::vector<char> names = r.section<char>("train_image_names");
  const std::vector<std::int64_t> sizes = r.section<std::int64_t>("train_image_sizes");
  if (!names.empty() && names.back() != '\0')
    throw input_error(path, section_field("train_image_names"),
                      "the last name is not followed by a NUL byte");
  std::vector<TrainImage> images;
  for (auto begin = names.begin(); begin != names.end();) {
    const auto end = std::find(begin, names.end(), '\0');
    images.push_back({std::string(begin, end)});
    begin = end + 1;
  }
  if (sizes.size() != 3 * images.size())
    throw input_error(path, section_field("train_image_sizes"),
                      std::to_string(sizes.size()) + " values for " +
                          std::to_string(images.size()) +
                          " images (width, height and file bytes of each)");
  for (std::size_t i = 0; i < images.size(); ++i) {
    const std::int64_t w = sizes[3 * i], h = sizes[3 * i + 1], bytes = sizes[3 * i + 2];
    const std::int64_t max_side = std::numeric_limits<std::int32_t>::max();
    if (w < 1 || h < 1 || w > max_side || h > max_side || bytes < 0)
      throw input_error(path, section_field("train_image_sizes"),
                        "image " + std::to_string(i) + " is " + std::to_string(w) + "x" +
                            std::to_string(h) + " pixels, " + std::to_string(bytes) + " bytes");
    images[i].width = std::int32_t(w);
    images[i].height = std::int32_t(h);
    images[i].file_bytes = std::uint64_t(bytes);
  }
  return images;
}

// Every section, in the order write_checkpoint puts them.
Checkpoint read_sections(SectionReader& r, const std::string& path, std::uint32_t version) {
  Checkpoint c;
  c.iteration = r.scalar<std::int64_t>("iteration");
  c.params = read_model(r, "params.");
  c.adam_m = read_model(r, "adam_m.");
  c.adam_v = read_model(r, "adam_v.");
  c.rng_state = r.section<std::uint64_t>("rng_state");
  c.view_order = r.section<std::int32_t>("view_order");
  c.view_pos = r.scalar<std::int64_t>("view_pos");
  const std::vector<char> toml = r.section<char>("config_toml");
  c.config_toml.assign(toml.begin(), toml.end());
  if (version >= 2) {
    c.adc_grad2d = r.section<float>("adc_grad2d");
    c.adc_count = r.section<std::int32_t>("adc_count");
  }
  if (version >= 3) {
    const std::vector<char> id = r.section<char>("run_id");
    c.run_id.assign(id.begin(), id.end());
  }
  if (version >= 4) c.filter3d = r.section<float>("filter3d");
  if (version >= 5) {
    c.appearance = r.section<float>("appearance");
    c.appearance_m = r.section<float>("appearance_m");
    c.appearance_v = r.section<float>("appearance_v");
  }
  if (version >= 6) c.train_images = read_train_images(r, path);
  if (version >= 7) c.adc_grad2d_abs = r.section<float>("adc_grad2d_abs");
  if (version >= 8) {
    c.pose = r.section<float>("pose");
    c.pose_m = r.section<float>("pose_m");
    c.pose_v = r.section<float>("pose_v");
    c.pose_steps = r.section<std::int32_t>("pose_steps");
  }
  return c;
}

// The CRC32C stored in the last four bytes of a file, and the one of the bytes before them.
struct FileChecksum {
  std::uint32_t stored = 0, computed = 0;
};

std::optional<FileChecksum> file_checksum(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::error_code ec;
  const std::uint64_t size = std::filesystem::file_size(path, ec);
  if (!in || ec || size < sizeof kMagic + 2 * sizeof(std::uint32_t)) return std::nullopt;
  FileChecksum f;
  std::vector<char> buffer(std::size_t(1) << 20);
  for (std::uint64_t left = size - sizeof f.stored; left > 0;) {
    const std::size_t n = std::size_t(std::min<std::uint64_t>(left, buffer.size()));
    if (!in.read(buffer.data(), std::streamsize(n))) return std::nullopt;
    f.computed = crc32c(f.computed, buffer.data(), n);
    left -= n;
  }
  if (!in.read(reinterpret_cast<char*>(&f.stored), sizeof f.stored)) return std::nullopt;
  return f;
}

// `what_broke`: the error the damage caused while reading, if any ("FILE: FIELD: what").
Error damaged(const std::string& path, const FileChecksum& f, std::string what_broke) {
  char crcs[96];
  std::snprintf(crcs, sizeof crcs,
                "the file is damaged: it stores CRC32C %08x, its bytes give %08x",
                unsigned(f.stored), unsigned(f.computed));
  if (what_broke.rfind(path + ": ", 0) == 0) what_broke.erase(0, path.size() + 2);
  return input_error(path, "checksum",
                     crcs + (what_broke.empty() ? std::string() : " (" + what_broke + ")"));
}

// "r_0 (800x800, 612345 bytes)"
std::string describe(const TrainImage& t) {
  std::string s = t.name + " (" + std::to_string(t.width) + "x" + std::to_string(t.height);
  if (t.file_bytes) s += ", " + std::to_string(t.file_bytes) + " bytes";
  return s + ")";
}

}  // namespace

void write_checkpoint(const std::string& path, const Checkpoint& ckpt) {
  check_shapes(path, ckpt);
  write_atomically(path, [&](std::ofstream& file) {
    Out out{file};
    out.write(kMagic, sizeof kMagic);
    put_raw(out, kVersion);
    put_scalar(out, "iteration", ckpt.iteration);
    put_model(out, "params.", ckpt.params);
    put_model(out, "adam_m.", ckpt.adam_m);
    put_model(out, "adam_v.", ckpt.adam_v);
    put_section(out, "rng_state", ckpt.rng_state.data(), ckpt.rng_state.size());
    put_section(out, "view_order", ckpt.view_order.data(), ckpt.view_order.size());
    put_scalar(out, "view_pos", ckpt.view_pos);
    put_section(out, "config_toml", ckpt.config_toml.data(), ckpt.config_toml.size());
    put_section(out, "adc_grad2d", ckpt.adc_grad2d.data(), ckpt.adc_grad2d.size());
    put_section(out, "adc_count", ckpt.adc_count.data(), ckpt.adc_count.size());
    put_section(out, "run_id", ckpt.run_id.data(), ckpt.run_id.size());
    put_section(out, "filter3d", ckpt.filter3d.data(), ckpt.filter3d.size());
    put_section(out, "appearance", ckpt.appearance.data(), ckpt.appearance.size());
    put_section(out, "appearance_m", ckpt.appearance_m.data(), ckpt.appearance_m.size());
    put_section(out, "appearance_v", ckpt.appearance_v.data(), ckpt.appearance_v.size());
    put_train_images(out, ckpt.train_images);
    put_section(out, "adc_grad2d_abs", ckpt.adc_grad2d_abs.data(), ckpt.adc_grad2d_abs.size());
    put_section(out, "pose", ckpt.pose.data(), ckpt.pose.size());
    put_section(out, "pose_m", ckpt.pose_m.data(), ckpt.pose_m.size());
    put_section(out, "pose_v", ckpt.pose_v.data(), ckpt.pose_v.size());
    put_section(out, "pose_steps", ckpt.pose_steps.data(), ckpt.pose_steps.size());
    const std::uint32_t crc = out.crc;
    put_raw(out, crc);
  });
}

Checkpoint read_checkpoint(const std::string& path) {
  SectionReader r(path);
  const std::uint32_t version = r.read_preamble();
  if (version < kFirstChecksummed) {
    Checkpoint c = read_sections(r, path, version);
    r.expect_end();
    check_shapes(path, c);
    return c;
  }
  // Read once, the checksum computed on the way; damage is reported as a checksum mismatch first,
  // with what it broke, if anything, after it. A file that broke the reading is checksummed apart.
  Checkpoint c;
  std::optional<FileChecksum> sum;
  try {
    c = read_sections(r, path, version);
    const std::uint32_t covered = r.crc();
    sum = FileChecksum{r.checksum(), covered};
    r.expect_end();
    check_shapes(path, c);
  } catch (const Error& e) {
    if (!sum) sum = file_checksum(path);
    if (sum && sum->stored != sum->computed) throw damaged(path, *sum, e.what());
    throw;
  }
  if (sum->stored != sum->computed) throw damaged(path, *sum, "");
  return c;
}

std::vector<TrainImage> train_images_of(const std::vector<View>& train) {
  std::vector<TrainImage> images;
  for (const View& v : train) {
    std::error_code ec;
    const std::uintmax_t bytes = v.path.empty() ? 0 : std::filesystem::file_size(v.path, ec);
    images.push_back({v.name, v.camera.width, v.camera.height, ec ? 0 : std::uint64_t(bytes)});
  }
  return images;
}

void check_same_images(const std::vector<TrainImage>& saved, const std::vector<TrainImage>& here) {
  if (saved.empty()) return;
  const std::string other_views =
      " (another dataset, or other data.holdout_every / data.max_train_views)";
  if (saved.size() != here.size())
    throw Error("the checkpoint was trained on " + std::to_string(saved.size()) +
                " training images, this dataset has " + std::to_string(here.size()) + other_views);
  for (std::size_t i = 0; i < saved.size(); ++i) {
    const TrainImage &a = saved[i], &b = here[i];
    std::string differs;
    if (a.name != b.name)
      differs = "the name differs" + other_views;
    else if (a.width != b.width || a.height != b.height)
      differs =
          "the size in pixels differs (another dataset, or other data.downscale / "
          "data.max_image_size / data.max_image_width / lens settings)";
    else if (a.file_bytes && b.file_bytes && a.file_bytes != b.file_bytes)
      differs = "the file size differs (another dataset, or its image files changed)";
    if (!differs.empty())
      throw Error("training image " + std::to_string(i + 1) + " of " +
                  std::to_string(saved.size()) + " is not the one the checkpoint was trained on: " +
                  describe(b) + " here, " + describe(a) + " in the checkpoint; " + differs);
  }
}

}  // namespace splat
