#include "io/model_file.h"

#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "io/compressed_ply.h"
#include "io/ply.h"
#include "io/ply_header.h"
#include "io/quantize.h"
#include "io/splat_format.h"
#include "io/spz.h"

namespace splat {

std::string_view to_string(ModelFormat f) {
  for (const auto& [value, name] : kModelFormatNames)
    if (value == f) return name;
  return "?";  // only reachable through a cast of an out-of-range integer
}

std::string model_file_name(ModelFormat f) {
  switch (f) {
    case ModelFormat::Ply:
      return "model.ply";
    case ModelFormat::Splat:
      return "model.splat";
    case ModelFormat::Spz:
      return "model.spz";
    case ModelFormat::CompressedPly:
      return "model.compressed.ply";
  }
  return "model.ply";
}

std::optional<ModelFormat> format_from_name(const std::string& path) {
  const auto ends_with = [&](const char* s) { return path.ends_with(s); };
  if (ends_with(".splat")) return ModelFormat::Splat;
  if (ends_with(".spz")) return ModelFormat::Spz;
  if (ends_with(".compressed.ply")) return ModelFormat::CompressedPly;
  if (ends_with(".ply")) return ModelFormat::Ply;
  return std::nullopt;
}

Gaussians with_sh_degree(const Gaussians& g, int degree) {
  if (degree < 0 || degree > 3)
    throw Error("SH degree " + std::to_string(degree) + " is outside 0..3");
  Gaussians out = g;
  out.sh_degree = degree;
  const std::size_t K = std::size_t(g.K()), k = std::size_t(out.K()), kept = std::min(K, k);
  out.sh.assign(g.size() * k * 3, 0.0f);
  for (std::size_t i = 0; i < g.size(); ++i)
    std::copy_n(g.sh.begin() + i * K * 3, kept * 3, out.sh.begin() + i * k * 3);
  return out;
}

void write_model(const std::string& path, const Gaussians& g, ModelFormat f) {
  // The quantizing writers would turn NaN or infinity into arbitrary integers.
  const auto widths = g.widths();
  std::size_t group = 0;
  g.for_each_group([&](const char* name, const std::vector<float>& v) {
    const std::size_t width = widths[group++];
    for (std::size_t k = 0; k < v.size(); ++k)
      if (!std::isfinite(v[k]))
        throw input_error(path, "splat " + std::to_string(k / width) + ", " + name,
                          "not a finite number");
  });
  switch (f) {
    case ModelFormat::Ply:
      return write_ply(path, g);
    case ModelFormat::Splat:
      return write_splat(path, g);
    case ModelFormat::Spz:
      return write_spz(path, g);
    case ModelFormat::CompressedPly:
      return write_compressed_ply(path, g);
  }
}

Gaussians read_model(const std::string& path) {
  if (path.ends_with(".spz")) return read_spz(path);
  if (path.ends_with(".splat")) return read_splat(path);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw input_error(path, "file", std::string("cannot open: ") + std::strerror(errno));
  const PlyHeader h = parse_ply_header(path, in);
  if (!h.elements.empty() && h.elements.front().name == "chunk") return read_compressed_ply(path);
  return read_ply(path);
}

}  // namespace splat
