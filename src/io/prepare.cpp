#include "io/prepare.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>

#include "core/error.h"
#include "io/colmap.h"
#include "io/image_io.h"
#include "io/process.h"
#include "io/run_dir.h"
#include "io/video_frames.h"

namespace splat {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// Structure from motion needs a few views of every part; under three it cannot start.
constexpr int kMinImages = 3;

std::string lower(std::string s) {
  for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// The formats both COLMAP and splat's loaders decode.
bool is_image_file(const fs::path& p) {
  const std::string ext = lower(p.extension().string());
  return ext == ".jpg" || ext == ".jpeg" || ext == ".png";
}

bool has_dataset_layout(const fs::path& dir) {
  std::error_code ec;
  return fs::exists(dir / "transforms_train.json", ec) || fs::exists(dir / "transforms.json", ec) ||
         fs::exists(dir / "sparse", ec);
}

// The image files of a folder, sorted by name (capture order for a phone's or camera's names).
std::vector<fs::path> image_files(const fs::path& dir, std::vector<fs::path>* others) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (!e.is_regular_file(ec)) continue;
    (is_image_file(e.path()) ? out : *others).push_back(e.path());
  }
  if (ec) throw Error(dir.string() + ": cannot list the folder: " + ec.message());
  std::sort(out.begin(), out.end());
  std::sort(others->begin(), others->end());
  return out;
}

std::string seconds_text(double s) {
  char buf[32];
  if (s < 60)
    std::snprintf(buf, sizeof buf, "%.1f s", s);
  else
    std::snprintf(buf, sizeof buf, "%d min %02d s", int(s) / 60, int(s) % 60);
  return buf;
}

// COLMAP's progress lines: "Processed file [3/25]", "Matching image [4/12]", "Matching block
// [1/3, 2/3]", "Registering image #5 (7)".
bool is_progress(std::string_view line) {
  return line.find("Processed file [") != std::string_view::npos ||
         line.find("Matching ") != std::string_view::npos ||
         line.find("Registering image") != std::string_view::npos;
}

// One line per stage: its start with what it does, then (on a terminal) the elapsed time and
// the log's latest line updated in place, then its duration.
class StageDisplay {
 public:
  explicit StageDisplay(std::string log) : log_(std::move(log)), tty_(isatty(fileno(stderr))) {}

  void begin(const std::string& name, const std::string& what) {
    name_ = name;
    progress_.clear();
    start_ = last_draw_ = Clock::now();
    std::fprintf(stderr, "%-8s %s\n", (name + ":").c_str(), what.c_str());
  }
  void tick() {
    if (!tty_ || Clock::now() - last_draw_ < std::chrono::seconds(1)) return;
    last_draw_ = Clock::now();
    // The latest progress line, kept while the program prints others (bundle adjustment).
    if (std::string p = last_log_line(log_, is_progress); !p.empty()) progress_ = p;
    std::string line = "         " + seconds_text(elapsed()) + "  " + progress_;
    if (line.size() > 79) line.resize(79);
    std::fprintf(stderr, "\r\033[K%s", line.c_str());
  }
  void end(std::vector<PrepareStage>& stages, const std::string& result = "") {
    const double s = elapsed();
    if (tty_) std::fprintf(stderr, "\r\033[K");
    std::fprintf(stderr, "         %s%s%s\n", result.c_str(), result.empty() ? "" : ", ",
                 seconds_text(s).c_str());
    stages.push_back({name_, s});
  }

 private:
  double elapsed() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }
  std::string log_;
  bool tty_;
  std::string name_, progress_;
  Clock::time_point start_, last_draw_;
};

struct Inputs {
  std::vector<fs::path> files;     // the photos given
  std::vector<std::string> names;  // in out/images
  bool video = false;
  bool one_size = true;  // every image has the same width and height
};

// The photos of a folder, every one decoded: an unreadable one is found now, not by COLMAP.
Inputs check_photos(const fs::path& input) {
  std::vector<fs::path> others;
  const std::vector<fs::path> files = image_files(input, &others);
  if (!others.empty())
    std::fprintf(stderr, "warning: %s: %zu file%s not .jpg, .jpeg or .png left out (%s%s)\n",
                 input.c_str(), others.size(), others.size() == 1 ? "" : "s",
                 others.front().filename().c_str(), others.size() > 1 ? ", ..." : "");
  if (int(files.size()) < kMinImages)
    throw Error(input.string() + ": " + std::to_string(files.size()) + " image" +
                (files.size() == 1 ? "" : "s") +
                " (.jpg, .jpeg, .png); structure from motion needs at least " +
                std::to_string(kMinImages) +
                ", and a few dozen views of the scene from around it give a good model");
  Inputs in;
  in.files = files;
  std::vector<std::string> unreadable;
  int w0 = 0, h0 = 0;
  for (const fs::path& f : files) {
    try {
      const Image img = read_image(f.string());
      if (w0 == 0) w0 = img.width, h0 = img.height;
      in.one_size = in.one_size && img.width == w0 && img.height == h0;
    } catch (const Error& e) {
      unreadable.push_back(e.what());
    }
    in.names.push_back(f.filename().string());
  }
  if (!unreadable.empty()) {
    std::string list;
    for (std::size_t i = 0; i < unreadable.size() && i < 5; ++i) list += "\n  " + unreadable[i];
    if (unreadable.size() > 5) list += "\n  and " + std::to_string(unreadable.size() - 5) + " more";
    throw Error(input.string() + ": " + std::to_string(unreadable.size()) + " of " +
                std::to_string(files.size()) +
                " images cannot be decoded (remove them or replace them):" + list);
  }
  return in;
}

// Copies the photos into `images` (not when they are there already).
void copy_photos(const Inputs& in, const fs::path& images, bool in_place) {
  if (in_place) return;
  std::error_code ec;
  for (const fs::path& f : in.files) {
    fs::copy_file(f, images / f.filename(), fs::copy_options::overwrite_existing, ec);
    if (ec)
      throw Error((images / f.filename()).string() + ": cannot copy " + f.string() + ": " +
                  ec.message());
  }
}

bool colmap_has_cuda(const std::string& colmap, const std::string& log) {
  std::string text;
  run_reading({colmap, "help"}, log, [&](std::FILE* f) {
    char buf[4096];
    std::size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) text.append(buf, n);
  });
  return text.find("with CUDA") != std::string::npos;
}

PrepareCamera camera_model(const PrepareOptions& o, bool shared) {
  if (o.camera != PrepareCamera::Auto) return o.camera;
  return shared ? PrepareCamera::Opencv : PrepareCamera::SimpleRadial;
}

std::string_view camera_name(PrepareCamera c) {
  for (const auto& [value, name] : kPrepareCameraNames)
    if (value == c) return name;
  return "OPENCV";
}

struct Model {
  fs::path dir;
  ColmapModel model;
};

// The models the mapper wrote into `work` (one per part of the scene), the largest first.
std::vector<Model> read_models(const fs::path& work) {
  std::vector<Model> models;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(work, ec))
    if (fs::exists(e.path() / "cameras.bin", ec))
      models.push_back({e.path(), read_colmap_model(e.path().string())});
  std::sort(models.begin(), models.end(), [](const Model& a, const Model& b) {
    return a.model.images.size() > b.model.images.size();
  });
  return models;
}

// The images that are not in the largest model, each with why.
std::vector<std::string> left_out(const std::vector<std::string>& names,
                                  const std::vector<Model>& models) {
  std::map<std::string, std::size_t> model_of;
  for (std::size_t k = 0; k < models.size(); ++k)
    for (const ColmapImage& im : models[k].model.images) model_of.emplace(im.name, k);
  std::vector<std::string> out;
  for (const std::string& name : names) {
    const auto it = model_of.find(name);
    if (it == model_of.end())
      out.push_back(name + " (not registered: too few matches with the others)");
    else if (it->second != 0)
      out.push_back(name + " (in a separate model of " +
                    std::to_string(models[it->second].model.images.size()) +
                    " images that COLMAP could not join to the largest)");
  }
  return out;
}

void print_summary(const PrepareSummary& sum, double total_seconds) {
  std::fprintf(stderr,
               "\nprepared %s: %d of %d images registered, %zu points, mean reprojection error "
               "%.2f px\n",
               sum.dataset.c_str(), sum.registered, sum.given, sum.points,
               sum.mean_reprojection_error);
  for (const std::string& l : sum.left_out) std::fprintf(stderr, "  left out: %s\n", l.c_str());
  std::string times;
  for (const PrepareStage& s : sum.stages)
    times += (times.empty() ? "" : ", ") + s.name + " " + seconds_text(s.seconds);
  std::fprintf(stderr, "  time: %s (total %s)\n", times.c_str(),
               seconds_text(total_seconds).c_str());
}

// Mean reprojection error over every observation (COLMAP's figure): each point's mean error
// weighted by its track length.
double mean_reprojection_error(const ColmapModel& m) {
  double sum = 0, n = 0;
  for (const ColmapPoint& p : m.points) {
    sum += p.error * double(p.track_length);
    n += double(p.track_length);
  }
  return n > 0 ? sum / n : 0;
}

// The output folder under the output-folder rules (io/run_dir.h): a dataset splat prepared there
// before is refused, or with `overwrite` removed; a dataset of someone else's is refused (splat
// deletes nothing it did not write). Every name the preparation writes is claimed now, before
// any work: images/ (unless the photos are there already), sparse/, sfm/ (COLMAP's work, removed
// at the end), database.db and prepare.log.
std::unique_ptr<RunDir> open_dataset_folder(const fs::path& out, bool overwrite, bool in_place) {
  auto dir = std::make_unique<RunDir>(out.string(), "--out " + out.string(), "prepare");
  const std::vector<std::string> previous = dir->owned_existing();
  if (!previous.empty()) {
    if (dir->previous_kind() != "prepare")
      throw Error("--out " + out.string() + " holds the outputs of splat " + dir->previous_kind() +
                  " (" + previous.front() + ", ...); choose another --out for the dataset");
    if (!overwrite)
      throw Error("--out " + out.string() + " already holds a dataset splat prepared (" +
                  previous.front() +
                  ", ...); give --overwrite to replace it, or choose another --out");
    dir->remove_owned();
  }
  std::error_code ec;
  for (const char* name : {"sparse", "database.db", in_place ? "" : "images"})
    if (*name && fs::exists(out / name, ec) && !dir->owns(name))
      throw Error("--out " + out.string() + " already holds a dataset that splat did not write (" +
                  (out / name).string() +
                  "); splat never replaces files it did not write: choose another --out");
  dir->claim_all({"prepare.log", "database.db"});
  if (!in_place) dir->claim_tree("images");
  dir->claim_tree("sparse");
  dir->claim_tree("sfm");
  return dir;
}

}  // namespace

bool is_unposed_input(const std::string& path) {
  std::error_code ec;
  if (fs::is_regular_file(path, ec)) {
    const std::string ext = lower(fs::path(path).extension().string());
    for (const char* v : {".mp4", ".mov", ".m4v", ".mkv", ".avi", ".webm", ".mts"})
      if (ext == v) return true;
    return false;
  }
  if (!fs::is_directory(path, ec) || has_dataset_layout(path)) return false;
  for (const auto& e : fs::directory_iterator(path, ec))
    if (e.is_regular_file(ec) && is_image_file(e.path())) return true;
  return false;
}

PrepareSummary prepare_dataset(const std::string& input,
                               const std::string& out_dir,
                               const PrepareOptions& opts,
                               bool overwrite) {
  const auto t0 = Clock::now();
  std::error_code ec;
  const fs::file_status st = fs::status(input, ec);
  if (st.type() == fs::file_type::not_found) throw Error(input + ": not found");
  const bool video = fs::is_regular_file(st);
  if (!video && !fs::is_directory(st))
    throw Error(input + ": neither a folder of images nor a video file");
  if (!video && has_dataset_layout(input))
    throw Error(input +
                ": already a dataset (it has transforms.json, transforms_train.json or sparse/); "
                "train on it directly");
  // Every program is found before any work.
  const std::string colmap = find_program("colmap", "colmap");
  const std::string ffmpeg = video ? find_program("ffmpeg", "ffmpeg") : "";

  const fs::path out(out_dir), images = out / "images", work = out / "sfm";
  const std::string log = (out / "prepare.log").string();
  StageDisplay stage(log);
  PrepareSummary sum;
  sum.dataset = out.string();
  // Photos are checked before the output folder is touched.
  Inputs in;
  if (!video) {
    stage.begin("images", "checking the images of " + input);
    in = check_photos(input);
  }
  const bool in_place = !video && fs::equivalent(input, images, ec);  // photos in DATASET/images
  const std::unique_ptr<RunDir> dir = open_dataset_folder(out, overwrite, in_place);
  fs::remove(log, ec);  // this preparation's log only
  // Runs a COLMAP command; `no_model_ok`: the mapper's failure to build any model is a result
  // (no image registered), not an error.
  const auto run = [&](std::vector<std::string> argv, bool no_model_ok = false) {
    std::ofstream(log, std::ios::app) << "\n$ " << command_text(argv) << "\n";
    const int rc = run_logged(argv, log, [&] { stage.tick(); });
    const std::string said = last_log_line(log);
    if (rc != 0 &&
        !(no_model_ok && said.find("failed to create sparse model") != std::string::npos))
      throw Error(argv[0] + " " + argv[1] + " failed (exit status " + std::to_string(rc) +
                  "): " + said + " (the whole output is in " + log + ")");
  };

  // 1. The images: the photos, or the sharpest frames of the video.
  if (video) {
    stage.begin("frames", "the sharpest frame in each of " + std::to_string(opts.frames) +
                              " windows of " + input + " (ffmpeg)");
    fs::create_directories(images, ec);
    const VideoFrames v = extract_video_frames(ffmpeg, input, images.string(), int(opts.frames),
                                               log, [&] { stage.tick(); });
    in.names = v.files;
    in.video = true;
    stage.end(sum.stages,
              std::to_string(v.files.size()) + " of " + std::to_string(v.decoded) + " frames");
    if (int(in.names.size()) < kMinImages)
      throw Error(input + ": " + std::to_string(v.decoded) +
                  " frames; structure from motion needs at least " + std::to_string(kMinImages) +
                  " views");
  } else {
    copy_photos(in, images, in_place);
    stage.end(sum.stages, std::to_string(in.names.size()) + " images");
  }
  sum.given = int(in.names.size());

  // 2. Features: SIFT on images shrunk to prepare.max_image_size (COLMAP scales the keypoints
  // back, so the model's cameras are those of the full-size images).
  const bool shared = opts.sharing == PrepareSharing::Shared ||
                      (opts.sharing == PrepareSharing::Auto && (in.video || in.one_size));
  const PrepareCamera cam = camera_model(opts, shared);
  const bool gpu = colmap_has_cuda(colmap, log);
  const std::string threads = std::to_string(opts.threads > 0 ? opts.threads : -1);
  const std::string database = (out / "database.db").string();
  fs::remove(database, ec);  // a failed earlier attempt's, in a folder splat prepared
  stage.begin("extract", "SIFT features (" + std::string(gpu ? "GPU" : "CPU") + "), " +
                             std::string(camera_name(cam)) + " camera" +
                             (shared ? ", one shared" : ", one per image"));
  run({colmap, "feature_extractor", "--database_path", database, "--image_path", images.string(),
       "--ImageReader.camera_model", std::string(camera_name(cam)), "--ImageReader.single_camera",
       shared ? "1" : "0", "--SiftExtraction.use_gpu", gpu ? "1" : "0",
       "--SiftExtraction.num_threads", threads, "--SiftExtraction.max_image_size",
       std::to_string(opts.max_image_size > 0 ? opts.max_image_size : 1 << 20)});
  stage.end(sum.stages);

  // 3. Matching: neighbours in time for video frames (or many photos), every pair otherwise.
  const bool sequential = opts.matcher == PrepareMatcher::Sequential ||
                          (opts.matcher == PrepareMatcher::Auto &&
                           (in.video || std::int64_t(in.names.size()) > opts.exhaustive_max));
  stage.begin("match", sequential ? "sequential: each image with the next 10 by name"
                                  : "exhaustive: every pair of images");
  std::vector<std::string> match = {colmap,
                                    sequential ? "sequential_matcher" : "exhaustive_matcher",
                                    "--database_path",
                                    database,
                                    "--SiftMatching.use_gpu",
                                    gpu ? "1" : "0",
                                    "--SiftMatching.num_threads",
                                    threads};
  if (sequential) match.insert(match.end(), {"--SequentialMatching.loop_detection", "0"});
  run(match);
  stage.end(sum.stages);

  // 4. Incremental mapping; COLMAP writes one model per part of the scene it could not join.
  stage.begin("map", "incremental structure from motion");
  fs::remove_all(work, ec);
  fs::create_directories(work, ec);
  run({colmap, "mapper", "--database_path", database, "--image_path", images.string(),
       "--output_path", work.string(), "--Mapper.num_threads", threads,
       "--Mapper.ba_global_function_tolerance", "0.000001"},
      true);
  const std::vector<Model> models = read_models(work);
  stage.end(sum.stages,
            models.empty()
                ? "no model"
                : std::to_string(models.front().model.images.size()) + " images registered" +
                      (models.size() > 1
                           ? " in the largest of " + std::to_string(models.size()) + " models"
                           : ""));

  sum.left_out = left_out(in.names, models);
  sum.registered = models.empty() ? 0 : int(models.front().model.images.size());
  if (2 * sum.registered < sum.given) {
    std::string list;
    for (std::size_t i = 0; i < sum.left_out.size() && i < 10; ++i)
      list += "\n  " + sum.left_out[i];
    if (sum.left_out.size() > 10)
      list += "\n  and " + std::to_string(sum.left_out.size() - 10) + " more";
    throw Error(input + ": structure from motion registered " + std::to_string(sum.registered) +
                " of " + std::to_string(sum.given) +
                " images, under half: the images need more overlap (each part of the scene in "
                "several views, taken from nearby positions), sharpness and texture. Left out:" +
                list + "\n(COLMAP's output is in " + log + ")");
  }

  // 5. The dataset: the largest model as sparse/0.
  stage.begin("write", "the largest model into " + (out / "sparse" / "0").string());
  const ColmapModel& best = models.front().model;
  sum.points = best.points.size();
  sum.mean_reprojection_error = mean_reprojection_error(best);
  fs::create_directories(out / "sparse" / "0", ec);
  for (const char* f : {"cameras.bin", "images.bin", "points3D.bin"}) {
    fs::copy_file(models.front().dir / f, out / "sparse" / "0" / f,
                  fs::copy_options::overwrite_existing, ec);
    if (ec) throw Error((out / "sparse" / "0" / f).string() + ": cannot write: " + ec.message());
  }
  fs::remove_all(work, ec);
  stage.end(sum.stages);

  print_summary(sum, std::chrono::duration<double>(Clock::now() - t0).count());
  return sum;
}

}  // namespace splat
