#pragma once
// train.coarse_factor and train.coarse_until: a coarse-to-fine resolution schedule (as
// DashGaussian, Chen et al. 2025, schedules resolution). The first steps train on the training
// images and cameras downscaled by coarse_factor (a power of two); the factor halves at evenly
// spaced steps and reaches full resolution at coarse_until. Early steps, which fit coarse
// structure, then cost a fraction of the pixels. Held-out evaluation is always at full resolution.
#include <cstdint>
#include <string>
#include <vector>

#include "core/camera.h"
#include "core/image.h"
#include "io/dataset.h"
#include "report/progress.h"
#include "train/config.h"

namespace splat {

// The factor of the step after `completed` steps: coarse_factor >> floor(completed * L / until)
// with coarse_factor = 2^L, and 1 from coarse_until on.
int resolution_factor(const TrainConfig& t, std::int64_t completed);
// Where the factor changes from `completed` steps on, before `total`: (k, f) when the step after
// k completed steps is the first at factor f.
StepChanges resolution_changes(const TrainConfig& t, std::int64_t completed, std::int64_t total);

// A training image downscaled by `factor` as the loader downscales (box filter on the values the
// loss reads, rounded to bytes): straight alpha composited on its background first; a loss mask
// keeps a pixel where at least half of what it covers was kept.
Image8 downscaled_training_image(const Image8& img, int factor);

// The training images and cameras at one factor of the schedule.
struct TrainingLevel {
  int factor = 1;
  std::vector<Image8> images;
  std::vector<Camera> cameras;
};

// The views' images and cameras downscaled by `factor` (> 1); throws naming `who` (the setting
// that asked) and the first view that factor would leave without a pixel.
TrainingLevel training_level(const std::vector<View>& views, int factor, const std::string& who);

}  // namespace splat
