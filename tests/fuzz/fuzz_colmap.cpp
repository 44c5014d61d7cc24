// COLMAP sparse models, binary and text. The first byte chooses the form and the file the rest
// of the input becomes; the other two files are a valid one-camera, one-image model.
#include "core/error.h"
#include "fuzz_util.h"
#include "io/colmap.h"

namespace {

const char* kNames[] = {"cameras", "images", "points3D"};

// The valid files: text, and binary (little-endian, as COLMAP writes them).
std::string valid_text(int file) {
  switch (file) {
    case 0:
      return "1 PINHOLE 16 12 20 20 8 6\n";
    case 1:
      return "1 1 0 0 0 0 0 3 1 a.png\n\n";
    default:
      return "1 0 0 0 255 128 0 0.5\n";
  }
}

template <class T>
void put(std::string& s, T v) {
  s.append(reinterpret_cast<const char*>(&v), sizeof v);
}

std::string valid_binary(int file) {
  std::string s;
  put<std::uint64_t>(s, 1);
  if (file == 0) {
    put<std::uint32_t>(s, 1);
    put<std::int32_t>(s, 1);
    put<std::uint64_t>(s, 16);
    put<std::uint64_t>(s, 12);
    for (double p : {20.0, 20.0, 8.0, 6.0}) put(s, p);
  } else if (file == 1) {
    put<std::uint32_t>(s, 1);
    for (double q : {1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 3.0}) put(s, q);
    put<std::uint32_t>(s, 1);
    s += std::string("a.png") + '\0';
    put<std::uint64_t>(s, 0);
  } else {
    put<std::uint64_t>(s, 1);
    for (double x : {0.0, 0.0, 0.0}) put(s, x);
    for (std::uint8_t c : {255, 128, 0}) put(s, c);
    put(s, 0.5);
    put<std::uint64_t>(s, 0);
  }
  return s;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const bool binary = data[0] & 1;
  const int fuzzed = (data[0] >> 1) % 3;
  const auto dir = splat::fuzz::work_dir() / (binary ? "bin" : "txt");
  std::filesystem::create_directories(dir);
  for (int f = 0; f < 3; ++f) {
    const auto path = dir / (std::string(kNames[f]) + (binary ? ".bin" : ".txt"));
    if (f == fuzzed)
      splat::fuzz::write_file(path, data + 1, size - 1);
    else
      splat::fuzz::write_file(path, binary ? valid_binary(f) : valid_text(f));
  }
  try {
    splat::read_colmap_model(dir.string());
  } catch (const splat::Error&) {
  }
  return 0;
}
