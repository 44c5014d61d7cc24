#pragma once
// An output folder that splat writes into (a training run's --out, eval's and render's --out).
// The rules, in one place:
//  - splat replaces or deletes only what it wrote there itself: every file is recorded in the
//    folder's manifest (.splat-manifest.json) before it is written, and a file at a name splat
//    wants that the manifest does not list is the user's: the run stops with an error before any
//    work rather than replace it;
//  - one process at a time writes into a folder: an exclusive lock (.splat-lock, flock) is taken
//    when the RunDir opens and held until it is destroyed;
//  - the manifest says which command wrote the folder (`kind`), so that `splat demo` replaces an
//    earlier demo but never a training run.
#include <filesystem>
#include <string>
#include <vector>

namespace splat {

class RunDir {
 public:
  // Creates `dir` if needed, takes its lock and reads its manifest. `what` names the folder in
  // messages (e.g. "--out DIR"); `kind` is the command writing it ("train", "demo", "eval",
  // "render"). Throws splat::Error when dir is not a directory, cannot be written, or another
  // process holds the lock (the message names its pid).
  RunDir(const std::string& dir, std::string what, std::string kind);
  ~RunDir();
  RunDir(const RunDir&) = delete;
  RunDir& operator=(const RunDir&) = delete;

  const std::filesystem::path& path() const { return dir_; }
  const std::string& what() const { return what_; }

  // The kind of the run that wrote the manifest found at opening ("" when there was none).
  const std::string& previous_kind() const { return previous_kind_; }
  // The files of the manifest (relative paths) that exist now, whole trees counted as one entry.
  std::vector<std::string> owned_existing() const;
  bool owns(const std::string& name) const;

  // Records `name` (a path relative to the folder) as splat's and returns its full path; throws
  // naming the file when something splat did not write is there. Its FILE.tmp (file_util.h)
  // goes with it.
  std::string claim(const std::string& name);
  // The same for several names, with one manifest write.
  void claim_all(const std::vector<std::string>& names);
  // A directory splat creates and fills whole (the demo's scene): it must not exist unless splat
  // made it; all of it is splat's.
  std::string claim_tree(const std::string& name);
  // Takes files that are already in the folder as splat's (a resumed run's own outputs from a
  // version that kept no manifest).
  void adopt(const std::vector<std::string>& names);

  // Deletes everything the manifest lists (files, trees, and the directories splat created once
  // they are empty) and starts an empty manifest of this RunDir's kind.
  void remove_owned();
  // Deletes the FILE.tmp leftovers of the manifest's files (a write killed part way).
  void remove_stale_tmp() const;

 private:
  void save() const;
  void check_not_foreign(const std::string& name) const;
  void record_parent_dirs(const std::string& name);

  std::filesystem::path dir_;
  std::string what_, kind_, previous_kind_;
  int lock_fd_ = -1;
  std::vector<std::string> files_, trees_, dirs_;  // relative paths; dirs_: made by splat
};

// The manifest's and the lock's names inside a RunDir.
inline constexpr const char* kManifestName = ".splat-manifest.json";
inline constexpr const char* kLockName = ".splat-lock";

}  // namespace splat
