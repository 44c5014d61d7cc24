#pragma once
// The keys a config may leave to the dataset (value 0 = auto), chosen when training starts so that
// `splat train DATA` with no config gives a good model. The choices go into the resolved config,
// so config.toml and checkpoints hold the concrete values and a resumed run keeps them.
#include <cstdint>
#include <string>
#include <vector>

#include "io/dataset.h"
#include "train/config.h"

namespace splat {

struct AutoChoice {
  std::string key;  // "train.iterations"
  std::int64_t value;
  std::string reason;  // how it was chosen, for the start of the log
};

// train.iterations = 0: the field's 30,000 steps (3DGS, gsplat, FastGS), fewer on captures of
// many pixels, with the recipe's schedule compressed alike (compressed_recipe, as a time budget
// does): kAutoCaptureSteps megapixel-steps over the capture's training pixels reach the 30k
// recipe's quality. Measured on one H100 (docs/benchmarks.md "How many steps"; fox 58 views, 9
// held out, seeds 0-1; figurine 2 seeds; Lego 100 views, 200 held out): fox at full size (118
// MP) scores as 30,000 with 10,000 compressed steps (32.630 / 32.607 against 32.593 / 32.647 dB) in
// 0.34 of the time; at 1440 px (68 MP) 17,000 score +0.17 dB, 10,000 -0.09; at 1/2 (30 MP) 15,000
// lose 0.25 dB and at 1/4 0.28, so small captures keep 30,000; Lego (64 MP) loses 0.07 dB at
// 17,000 (36.150 against 36.217) in 0.56 of the time. The per-view form of the rule (20,000
// megapixel-steps a view: fox's 58 views times 20,000 is 1.16M) gave Lego 30,000; 1.08M is the
// round value that leaves Lego on its measured 17,000 (the visits floor below). Never fewer than
// kAutoMinIterations (a capture of 500 MP would get 2,200), nor than kAutoStepsPerView a training
// view: fox's plateau at 10,000 steps is also 172 visits of each of its 58 views, and a capture
// of many views must not get fewer visits than what was measured enough. The earlier 500 per
// training view, with the schedule not compressed, stopped small captures short (issue 48's
// 17-view capture: +0.72 dB at 30k steps against that rule's 9k).
inline constexpr std::int64_t kAutoIterations = 30000;
inline constexpr std::int64_t kAutoMinIterations = 10000;
inline constexpr double kAutoCaptureSteps = 1.08e6;
inline constexpr double kAutoStepsPerView = 170;
std::int64_t auto_iterations(double train_megapixels, std::size_t views);

// densify.cap_max = 0 (MCMC): the splats a capture's detail asks for, at least those its pixels
// do: the larger of 5000 splats per training megapixel and kSplatsPerEdgeMegapixel per edge
// megapixel (edge_megapixels), in [100k, 3M], and at least twice the initial splats (MCMC grows
// but never removes). A 2 MP phone photo holds no more edges than a 0.64 MP render: fox's 58
// photos of 1920x1080 (undistorted) have 2.8 edge megapixels, Lego's 100 views of 800x800 5.6.
// Measured on one H100 (docs/benchmarks.md "How many steps and splats"): Lego gains 0.28 dB from
// 320k to 1M at 17,000 steps, fox at full size loses 0.07-0.15 dB from 590k to 1M; 175k per edge
// megapixel gives Lego 980k and leaves fox on its pixels' 590k (the floor: a smooth capture keeps
// the splats its pixels give).
inline constexpr double kSplatsPerEdgeMegapixel = 175000;
std::int64_t auto_cap_max(double train_megapixels,
                          double edge_megapixels,
                          std::size_t initial_splats);

// The training views' edge pixels in megapixels: pixels whose loss target's luminance (the mean
// of its RGB) differs from its right and lower neighbours' by more than kEdgeStep (the length of
// the two differences).
inline constexpr float kEdgeStep = 0.05f;
double edge_megapixels(const std::vector<View>& views);

// train.iterations = 0 with an auto cap above the pixel rule's: the steps pay for the extra splats,
// so the run takes the time the pixel rule's would. A step costs about as much per megapixel of its
// view as per million splats (H100: Lego 1.01 ms at 320k, 1.70 at 1M; fox at 1/2 0.97 at 200k,
// 1.35 at 440k), so `iterations` scale by (view MP + pixel_cap / 1M) / (view MP + cap / 1M),
// never below kAutoMinIterations. Lego: 10,000 steps at 1M scored 0.19 / 0.17 dB (seeds 0 / 1)
// above 17,000 at 320k in the same 17 s; fox at 1/2, 23,000 at 440k against 30,000 at 200k,
// +0.05 / +0.09 dB, SSIM -0.003, 6% more time.
std::int64_t steps_for_splats(std::int64_t iterations,
                              double megapixels_per_view,
                              std::int64_t pixel_cap,
                              std::int64_t cap);

// train.coarse_factor = 0: 4 (measured on the H200: fox -23% time, +0.05 dB; Lego -2.7%, the same
// PSNR), halved while the smallest training image would be under 32 px. train.coarse_until = 0:
// half of the iterations (against a third, on the H200: fox -16 to -17% time with no config and
// at 30k steps / 1M splats, -0.03 and +0.07 dB; Lego the same time, -0.02 dB).
int auto_coarse_factor(int smallest_side);

// Replaces the auto values of `cfg` with their choices for `data`; returns what it chose.
std::vector<AutoChoice> resolve_auto(Config& cfg, const Dataset& data);

}  // namespace splat
