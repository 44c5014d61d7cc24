#pragma once
// Video frames for structure from motion: the sharpest frame of each window, decoded by ffmpeg
// (Debian package ffmpeg), which also applies the rotation a phone records in the file's metadata.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace splat {

// Sharpness of a gray image (row-major, w x h): the variance of its discrete Laplacian, which
// motion blur and defocus lower (Pech-Pacheco et al. 2000).
double laplacian_variance(const std::vector<std::uint8_t>& gray, int w, int h);

// The frames to keep from one score per frame: the frames split into `n` equal windows and the
// highest-scoring frame of each (the first among equals); every frame when there are at most n.
std::vector<int> sharpest_per_window(const std::vector<double>& sharpness, int n);

struct VideoFrames {
  int decoded = 0;                 // frames in the video
  std::vector<int> kept;           // the indices written, in order
  std::vector<std::string> files;  // their names in the output folder
};

// Decodes `video` with the ffmpeg program at `ffmpeg` twice: small gray frames to score, then
// the kept frames at full size as dir/frame_00001.jpg, ... (high-quality JPEG). ffmpeg's messages
// are appended to log_path; tick() is called while it runs. A video ffmpeg cannot decode, or one
// without frames, throws splat::Error naming the file and ffmpeg's message.
VideoFrames extract_video_frames(const std::string& ffmpeg,
                                 const std::string& video,
                                 const std::string& dir,
                                 int n,
                                 const std::string& log_path,
                                 const std::function<void()>& tick = {});

}  // namespace splat
