#pragma once
// Camera paths for fly-through videos (`splat render --path`), built from a dataset's training
// cameras: their intrinsics, the up direction they share and the point they look at.
//   orbit   one turn around the scene at the cameras' mean height and distance
//   spiral  two turns whose height sweeps between the cameras' lowest and highest and back
//   views   through the training cameras in order (positions linear, rotations slerped)
// Every path starts near the first training camera, so consecutive frames differ by a small
// turn and frame 0 resembles a training view.
#include <string>
#include <vector>

#include "core/camera.h"
#include "io/dataset.h"

namespace splat {

enum class CameraPath { Orbit, Spiral, Views };

// "orbit", "spiral" or "views"; anything else is an error naming the value.
CameraPath parse_camera_path(const std::string& name);

// `frames` cameras along the path (frames >= 1); throws splat::Error when the dataset has no
// training cameras.
std::vector<Camera> camera_path(const Dataset& data, CameraPath path, int frames);

// A camera at `eye` looking at `target` with `up` pointing up in the image (OpenCV axes).
Camera look_at(const Camera& intrinsics, Vec3<double> eye, Vec3<double> target, Vec3<double> up);

}  // namespace splat
