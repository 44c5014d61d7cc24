#pragma once
// Small valid datasets of every format, written field by field so that a bad-input case changes
// one field and checks the error that names it.
#include <filesystem>
#include <functional>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "io/colmap.h"

namespace splat::test {

void write_text(const std::filesystem::path& p, const std::string& s);
// A w x h RGB PNG with a gradient.
void write_rgb_png(const std::filesystem::path& p, int w, int h);

// A camera-to-world matrix (OpenGL axes) at `z` on the z axis looking at the origin.
nlohmann::json c2w_at(double z);

// transforms.json of four 16x12 frames images/f0.png .. f3.png with shared intrinsics; `edit`
// changes it before it is written to dir (with the images).
void write_transforms_scene(const std::filesystem::path& dir,
                            const std::function<void(nlohmann::json&)>& edit = {});
// NeRF-synthetic: transforms_{train,test}.json of three and one 16x16 frames.
void write_blender_scene(const std::filesystem::path& dir,
                         const std::function<void(nlohmann::json& train)>& edit = {});

// A COLMAP model of one PINHOLE camera (16x12), four images and a few points.
ColmapModel small_colmap_model();
enum class ColmapForm { Binary, Text };
// Writes sparse/0/{cameras,images,points3D}.{bin,txt} and images/ (the images every model image
// names, at its camera's size).
void write_colmap_scene(const std::filesystem::path& dir, const ColmapModel& m, ColmapForm form);

// EXPECTs the error message msg to mention every part (a bad-input case's expectations).
void expect_error(const std::string& msg, const std::vector<std::string>& parts);

}  // namespace splat::test
