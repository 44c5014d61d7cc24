#include "io/video_frames.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>

#include "core/error.h"
#include "io/process.h"

namespace splat {
namespace {

namespace fs = std::filesystem;

// The frames are scored at this long side: enough to see blur, cheap for a 4K video.
constexpr int kScoreSize = 480;

// One unsigned number of a PGM header, after whitespace and # comments; -1 at the end of input.
long pgm_number(std::FILE* f) {
  int c = std::fgetc(f);
  for (;;) {
    if (c == '#')
      while (c != '\n' && c != EOF) c = std::fgetc(f);
    else if (c != EOF && std::isspace(c))
      c = std::fgetc(f);
    else
      break;
  }
  if (c == EOF || !std::isdigit(c)) return -1;
  long v = 0;
  while (c != EOF && std::isdigit(c)) {
    v = v * 10 + (c - '0');
    if (v > (1L << 30)) return -1;
    c = std::fgetc(f);
  }
  return v;  // the one whitespace character after the number is consumed
}

// Reads binary PGM frames (P5, 8-bit) from ffmpeg's stdout and scores each.
std::vector<double> score_frames(std::FILE* in, const std::function<void()>& tick) {
  std::vector<double> scores;
  std::vector<std::uint8_t> gray;
  for (;;) {
    const int p = std::fgetc(in);
    if (p == EOF) break;
    if (p != 'P' || std::fgetc(in) != '5') throw Error("ffmpeg: unexpected frame data");
    const long w = pgm_number(in), h = pgm_number(in), maxval = pgm_number(in);
    if (w <= 0 || h <= 0 || maxval != 255) throw Error("ffmpeg: unexpected frame header");
    gray.resize(std::size_t(w) * std::size_t(h));
    if (std::fread(gray.data(), 1, gray.size(), in) != gray.size()) break;  // cut off at the end
    scores.push_back(laplacian_variance(gray, int(w), int(h)));
    if (tick) tick();
  }
  return scores;
}

std::vector<std::string> ffmpeg_args(const std::string& ffmpeg, const std::string& video) {
  // Rotation metadata is applied by ffmpeg's default -autorotate; passthrough keeps each decoded
  // frame once (a variable frame rate would otherwise be resampled with duplicates).
  return {ffmpeg, "-nostdin", "-hide_banner", "-loglevel", "error",      "-i",
          video,  "-map",     "0:v:0",        "-vsync",    "passthrough"};
}

}  // namespace

double laplacian_variance(const std::vector<std::uint8_t>& gray, int w, int h) {
  if (w < 3 || h < 3) return 0;
  double sum = 0, sum2 = 0;
  for (int y = 1; y + 1 < h; ++y)
    for (int x = 1; x + 1 < w; ++x) {
      const std::size_t i = std::size_t(y) * w + x;
      const double lap =
          double(gray[i - 1]) + gray[i + 1] + gray[i - w] + gray[i + w] - 4.0 * gray[i];
      sum += lap;
      sum2 += lap * lap;
    }
  const double n = double(w - 2) * double(h - 2);
  const double mean = sum / n;
  return sum2 / n - mean * mean;
}

std::vector<int> sharpest_per_window(const std::vector<double>& sharpness, int n) {
  const int total = int(sharpness.size());
  std::vector<int> kept;
  if (total <= n) {
    for (int i = 0; i < total; ++i) kept.push_back(i);
    return kept;
  }
  for (int k = 0; k < n; ++k) {
    const int begin = int(std::int64_t(k) * total / n), end = int(std::int64_t(k + 1) * total / n);
    kept.push_back(int(std::max_element(sharpness.begin() + begin, sharpness.begin() + end) -
                       sharpness.begin()));
  }
  return kept;
}

VideoFrames extract_video_frames(const std::string& ffmpeg,
                                 const std::string& video,
                                 const std::string& dir,
                                 int n,
                                 const std::string& log_path,
                                 const std::function<void()>& tick) {
  const auto cannot_decode = [&](const std::string& why) {
    const std::string said = last_log_line(log_path);
    return Error(video + ": ffmpeg cannot decode it as a video (" + why +
                 (said.empty() ? "" : "; ffmpeg: " + said) + "; its output is in " + log_path +
                 ")");
  };
  std::vector<std::string> score = ffmpeg_args(ffmpeg, video);
  const std::string size = std::to_string(kScoreSize);
  score.insert(
      score.end(),
      {"-vf", "scale=" + size + ":" + size + ":force_original_aspect_ratio=decrease,format=gray",
       "-f", "image2pipe", "-c:v", "pgm", "-"});
  std::vector<double> sharpness;
  const int rc =
      run_reading(score, log_path, [&](std::FILE* in) { sharpness = score_frames(in, tick); });
  if (rc != 0) throw cannot_decode("exit status " + std::to_string(rc));
  if (sharpness.empty()) throw cannot_decode("no video frames");

  VideoFrames out;
  out.decoded = int(sharpness.size());
  out.kept = sharpest_per_window(sharpness, n);
  std::string select;
  for (const int i : out.kept)
    select += (select.empty() ? "" : "+") + ("eq(n," + std::to_string(i) + ")");
  std::vector<std::string> write = ffmpeg_args(ffmpeg, video);
  write.insert(write.end(), {"-vf", "select='" + select + "'", "-q:v", "2",
                             (fs::path(dir) / "frame_%05d.jpg").string()});
  if (const int rc2 = run_logged(write, log_path, tick); rc2 != 0)
    throw cannot_decode("exit status " + std::to_string(rc2) + " writing the frames");
  for (std::size_t k = 0; k < out.kept.size(); ++k) {
    char name[32];
    std::snprintf(name, sizeof name, "frame_%05zu.jpg", k + 1);
    if (!fs::is_regular_file(fs::path(dir) / name))
      throw cannot_decode("frame " + std::to_string(out.kept[k]) + " was not written");
    out.files.push_back(name);
  }
  return out;
}

}  // namespace splat
