#include "io/run_dir.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "io/file_util.h"
#include "io/read_file.h"

namespace fs = std::filesystem;

namespace splat {

namespace {

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

bool exists_at(const fs::path& p) {
  std::error_code ec;
  return fs::symlink_status(p, ec).type() != fs::file_type::not_found && !ec;
}

// name's directories from the top: "a/b/c.png" -> "a", "a/b".
std::vector<std::string> ancestors(const std::string& name) {
  std::vector<std::string> out;
  for (fs::path p = fs::path(name).parent_path(); !p.empty(); p = p.parent_path())
    out.insert(out.begin(), p.generic_string());
  return out;
}

std::vector<std::string> string_list(const nlohmann::json& j, const char* key) {
  std::vector<std::string> out;
  if (!j.contains(key)) return out;
  for (const nlohmann::json& e : j.at(key)) out.push_back(e.get<std::string>());
  return out;
}

}  // namespace

RunDir::RunDir(const std::string& dir, std::string what, std::string kind)
    : dir_(dir), what_(std::move(what)), kind_(std::move(kind)) {
  std::error_code ec;
  if (exists_at(dir_) && !fs::is_directory(dir_, ec))
    throw Error(what_ + ": exists and is not a directory");
  fs::create_directories(dir_, ec);
  if (ec) throw Error(what_ + ": cannot create the directory: " + ec.message());

  // The lock: found now, not after hours of training, the folder also takes files.
  const fs::path lock = dir_ / kLockName;
  lock_fd_ = ::open(lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lock_fd_ < 0)
    throw Error(what_ + ": cannot write into the directory (" + lock.string() + ": " +
                std::strerror(errno) + ")");
  if (::flock(lock_fd_, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    char pid[32] = {};
    const ssize_t n = ::pread(lock_fd_, pid, sizeof pid - 1, 0);
    ::close(lock_fd_);
    lock_fd_ = -1;
    if (err != EWOULDBLOCK)
      throw Error(what_ + ": cannot lock " + lock.string() + ": " + std::strerror(err));
    throw Error(what_ + ": another splat process" +
                (n > 0 ? " (pid " + std::string(pid, std::size_t(n)) + ")" : std::string()) +
                " is writing into this folder; wait for it to finish or choose another folder");
  }
  const std::string me = std::to_string(::getpid());
  if (::ftruncate(lock_fd_, 0) != 0 || ::pwrite(lock_fd_, me.data(), me.size(), 0) < 0)
    throw Error(what_ + ": cannot write into the directory (" + lock.string() + ": " +
                std::strerror(errno) + ")");

  const fs::path manifest = dir_ / kManifestName;
  if (!exists_at(manifest)) return;
  try {
    const nlohmann::json j =
        nlohmann::json::parse(read_input_file(manifest.string(), "manifest", kMaxJsonBytes));
    previous_kind_ = j.at("kind").get<std::string>();
    files_ = string_list(j, "files");
    trees_ = string_list(j, "trees");
    dirs_ = string_list(j, "dirs");
  } catch (const nlohmann::json::exception& e) {
    throw Error(manifest.string() + ": " + e.what() + "; it lists the files splat wrote in " +
                dir_.string() + ": remove it (splat then treats every file there as yours)");
  }
}

RunDir::~RunDir() {
  if (lock_fd_ >= 0) ::close(lock_fd_);  // releases the flock
}

bool RunDir::owns(const std::string& name) const {
  if (contains(files_, name) || contains(trees_, name)) return true;
  for (const std::string& a : ancestors(name))
    if (contains(trees_, a)) return true;
  return false;
}

std::vector<std::string> RunDir::owned_existing() const {
  std::vector<std::string> out;
  for (const auto* list : {&files_, &trees_})
    for (const std::string& f : *list)
      if (exists_at(dir_ / f)) out.push_back(f);
  return out;
}

void RunDir::check_not_foreign(const std::string& name) const {
  if (owns(name) || !exists_at(dir_ / name)) return;
  throw Error(what_ + ": " + (dir_ / name).string() +
              " is not one of the files splat wrote there (the folder's " + kManifestName +
              " lists those), so splat will not replace it: move it away or choose another "
              "folder");
}

void RunDir::record_parent_dirs(const std::string& name) {
  for (const std::string& a : ancestors(name))
    if (!exists_at(dir_ / a) && !contains(dirs_, a)) dirs_.push_back(a);
}

void RunDir::save() const {
  const nlohmann::json j = {{"splat_manifest", 1},
                            {"kind", kind_},
                            {"files", files_},
                            {"trees", trees_},
                            {"dirs", dirs_}};
  write_atomically((dir_ / kManifestName).string(),
                   [&](std::ofstream& f) { f << j.dump(1) << "\n"; });
}

void RunDir::claim_all(const std::vector<std::string>& names) {
  for (const std::string& n : names) check_not_foreign(n);
  bool added = false;
  for (const std::string& n : names) {
    if (owns(n)) continue;
    record_parent_dirs(n);
    files_.push_back(n);
    added = true;
  }
  if (added) save();
  for (const std::string& n : names) {
    std::error_code ec;
    fs::create_directories((dir_ / n).parent_path(), ec);
    if (ec)
      throw Error(what_ + ": cannot create " + (dir_ / n).parent_path().string() + ": " +
                  ec.message());
  }
}

std::string RunDir::claim(const std::string& name) {
  claim_all({name});
  return (dir_ / name).string();
}

std::string RunDir::claim_tree(const std::string& name) {
  check_not_foreign(name);
  record_parent_dirs(name);
  if (!owns(name)) trees_.push_back(name);
  save();
  std::error_code ec;
  fs::create_directories(dir_ / name, ec);
  if (ec) throw Error(what_ + ": cannot create " + (dir_ / name).string() + ": " + ec.message());
  return (dir_ / name).string();
}

void RunDir::adopt(const std::vector<std::string>& names) {
  for (const std::string& n : names)
    if (exists_at(dir_ / n) && !owns(n)) files_.push_back(n);
  save();
}

void RunDir::remove_stale_tmp() const {
  std::error_code ec;
  for (const std::string& f : files_) fs::remove(dir_ / (f + ".tmp"), ec);
}

void RunDir::remove_owned() {
  std::error_code ec;
  remove_stale_tmp();
  for (const std::string& f : files_) fs::remove(dir_ / f, ec);
  for (const std::string& t : trees_) fs::remove_all(dir_ / t, ec);
  // The directories splat made, deepest first, where nothing of the user's is left in them.
  std::vector<std::string> dirs = dirs_;
  std::ranges::sort(dirs,
                    [](const std::string& a, const std::string& b) { return a.size() > b.size(); });
  for (const std::string& d : dirs)
    if (fs::is_empty(dir_ / d, ec)) fs::remove(dir_ / d, ec);
  files_.clear();
  trees_.clear();
  dirs_.clear();
  save();
}

}  // namespace splat
