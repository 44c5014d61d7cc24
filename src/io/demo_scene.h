#pragma once
// The scene behind `splat demo`: a small still life of analytic shapes, ray cast (not made of
// Gaussians) and written as a NeRF-synthetic dataset, so a fresh checkout can train on something
// real without downloading anything.
#include <cstdint>
#include <string>

namespace splat {

struct DemoSceneOptions {
  int width = 128, height = 128;
  int train_views = 60, test_views = 12;
  double camera_angle_x = 0.69;  // horizontal FOV in radians
  int supersample = 3;           // s x s rays per pixel, averaged (anti-aliased edges)
  std::uint64_t seed = 7;        // picks the camera positions; the scene itself is fixed
};

// Renders the scene by ray casting and writes it in the NeRF-synthetic layout:
// dir/transforms_train.json, dir/transforms_test.json, dir/train/r_<i>.png, dir/test/r_<i>.png
// (RGBA PNG, alpha = coverage, background transparent). Creates dir.
//
// World axes are Blender's (z up). Every shape lies inside [-1, 1]^3 and the origin is inside a
// shape, so every view, which looks at the origin from radius 4, sees an object at its center.
// Cameras sit on golden-angle spirals over the upper hemisphere and a band just below the
// equator; each test camera is turned into a gap between training cameras, so test views are
// novel.
// The output is a pure function of opts (byte-identical across runs and thread counts).
// Throws splat::Error naming the path when a directory or file cannot be written, or on options
// out of range.
void write_demo_scene(const std::string& dir, const DemoSceneOptions& opts);

// What a video circling the scene would show: `frames` views from radius 4 at `elevation`
// radians above the equator, `arc` radians of azimuth apart in all, the scene standing on a
// finely textured floor (the detail structure from motion needs, which the shapes' soft textures
// lack) before a grey background, written as dir/frame_0000.png, frame_0001.png, ... (tests of
// splat prepare encode them with ffmpeg). opts gives the size, field of view and supersampling;
// its view counts and seed are not used.
void write_demo_orbit(
    const std::string& dir, int frames, double elevation, double arc, const DemoSceneOptions& opts);

}  // namespace splat
