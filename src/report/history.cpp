#include "report/history.h"

#include <cerrno>
#include <cstring>
#include <fstream>

#include "core/error.h"
#include "io/file_util.h"

namespace splat {

std::vector<nlohmann::json> read_history(const std::string& path) {
  std::vector<nlohmann::json> out;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_object()) out.push_back(std::move(j));
  }
  return out;
}

History::History(const std::string& path, std::int64_t first) : path_(path) {
  if (first > 0) {
    std::vector<nlohmann::json> kept = read_history(path);
    std::erase_if(
        kept, [&](const nlohmann::json& j) { return j.value("step", std::int64_t(0)) > first; });
    if (!kept.empty()) resumed_elapsed_ = kept.back().value("elapsed", 0.0);
    write_atomically(path, [&](std::ofstream& out) {
      for (const nlohmann::json& j : kept) out << j.dump() << "\n";
    });
  }
  file_ = std::fopen(path.c_str(), first > 0 ? "a" : "w");
  if (!file_) throw input_error(path, "write", std::strerror(errno));
}

History::~History() {
  if (file_) std::fclose(file_);
}

void History::add(const nlohmann::json& record) {
  if (!file_) return;
  const std::string line = record.dump() + "\n";
  if (std::fputs(line.c_str(), file_) < 0 || std::fflush(file_) != 0)
    throw input_error(path_, "write", std::string("writing failed: ") + std::strerror(errno));
}

}  // namespace splat
