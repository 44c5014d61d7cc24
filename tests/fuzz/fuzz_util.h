#pragma once
// libFuzzer targets: each feeds its input to one parser through the file API users reach, and
// accepts only a splat::Error as a failure; any other exception, a crash, a hang or a sanitizer
// report is a bug that the fuzzer keeps.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

namespace splat::fuzz {

// A directory of this process for the files an input becomes.
inline const std::filesystem::path& work_dir() {
  static const std::filesystem::path dir = [] {
    auto d = std::filesystem::temp_directory_path() / ("splat_fuzz_" + std::to_string(getpid()));
    std::filesystem::create_directories(d);
    return d;
  }();
  return dir;
}

inline void write_file(const std::filesystem::path& p, const std::uint8_t* data, std::size_t size) {
  std::ofstream(p, std::ios::binary | std::ios::trunc)
      .write(reinterpret_cast<const char*>(data), std::streamsize(size));
}

inline void write_file(const std::filesystem::path& p, const std::string& s) {
  write_file(p, reinterpret_cast<const std::uint8_t*>(s.data()), s.size());
}

}  // namespace splat::fuzz
