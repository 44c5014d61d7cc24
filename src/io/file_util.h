#pragma once
// Output files are written whole or not at all.
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/error.h"

namespace splat {

// Writes through PATH.tmp and renames, so a failed write never leaves a half-written PATH.
// body(std::ofstream&) writes the content.
template <class Body>
void write_atomically(const std::string& path, Body&& body) {
  const std::string tmp = path + ".tmp";
  try {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out)
      throw input_error(path, "write", "cannot create " + tmp + ": " + std::strerror(errno));
    body(out);
    out.close();
    if (!out) throw input_error(path, "write", "writing " + tmp + " failed (disk full?)");
    std::error_code ec;
    std::filesystem::rename(tmp, path, ec);
    if (ec) throw input_error(path, "write", "cannot rename " + tmp + ": " + ec.message());
  } catch (...) {
    std::error_code ignored;
    std::filesystem::remove(tmp, ignored);
    throw;
  }
}

// Creates the output directory `path` (with its parents) unless it exists; throws splat::Error
// naming the option that gave it (`option`, e.g. "--out") when a file is in the way or it cannot.
inline void make_output_dir(const std::string& option, const std::string& path) {
  std::error_code ec;
  const auto st = std::filesystem::status(path, ec);
  if (std::filesystem::exists(st) && !std::filesystem::is_directory(st))
    throw Error(option + " " + path + ": exists and is not a directory");
  std::filesystem::create_directories(path, ec);
  if (ec) throw Error(option + " " + path + ": cannot create the directory: " + ec.message());
}

}  // namespace splat
