// Bad JSON datasets (instant-ngp / nerfstudio transforms.json and NeRF-synthetic), one case per
// defect: every load fails with an error that names the file and the field or frame at fault
// (never a crash, a hang or a silently wrong camera). COLMAP: test_bad_input_colmap.cpp.
#include <gtest/gtest.h>

#include <fstream>
#include <functional>

#include "bad_input_util.h"
#include "io/dataset.h"
#include "test_util.h"

namespace splat {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using test::expect_error;

struct JsonCase {
  std::string name;
  std::function<void(json&)> edit;             // applied to the valid JSON
  std::function<void(const fs::path&)> after;  // then to the written scene, if set
  std::vector<std::string> expect;             // parts of the error message
};

// gtest prints a failing case by its name rather than its bytes.
void PrintTo(const JsonCase& c, std::ostream* os) {
  *os << c.name;
}

std::string name_of(const ::testing::TestParamInfo<JsonCase>& info) {
  return info.param.name;
}

// ---- instant-ngp / nerfstudio transforms.json --------------------------------------------------

json& frame(json& j, int i) {
  return j["frames"][std::size_t(i)];
}

const std::vector<JsonCase> kTransformsCases = {
    // Used to segfault in undistort: NaN coordinates reached an index through std::clamp.
    {"FocalTinyWithDistortion",
     [](json& j) {
       j["fl_x"] = j["fl_y"] = 1e-300;
       j["k1"] = 0.1;
     },
     {},
     {"transforms.json", "frames[", "focal length fx = 1e-300", "implausible"}},
    {"FocalTiny",
     [](json& j) { j["fl_x"] = j["fl_y"] = 1e-300; },
     {},
     {"transforms.json", "focal length fx"}},
    {"FocalHuge",
     [](json& j) { j["fl_x"] = 1e12; },
     {},
     {"transforms.json", "focal length fx = 1e+12"}},
    {"FocalYHuge", [](json& j) { j["fl_y"] = 1e9; }, {}, {"transforms.json", "focal length fy"}},
    {"FocalZero", [](json& j) { j["fl_x"] = 0; }, {}, {"transforms.json", "fl_x", "must be > 0"}},
    {"FocalNegative",
     [](json& j) { j["fl_y"] = -20; },
     {},
     {"transforms.json", "fl_y", "must be > 0"}},
    {"FocalOverflowingNumber",
     {},
     [](const fs::path& d) {
       std::ifstream in(d / "transforms.json");
       std::string s((std::istreambuf_iterator<char>(in)), {});
       s.replace(s.find("\"fl_x\": 20.0"), 12, "\"fl_x\": 1e999");
       test::write_text(d / "transforms.json", s);
     },
     {"transforms.json", "JSON", "number overflow", "1e999"}},
    {"PrincipalPointFar",
     [](json& j) { j["cx"] = 1e300; },
     {},
     {"transforms.json", "principal point cx"}},
    {"PrincipalPointNegativeFar",
     [](json& j) { j["cy"] = -1000; },
     {},
     {"transforms.json", "principal point cy"}},
    {"PerFrameFocalTiny",
     [](json& j) { frame(j, 2)["fl_x"] = 1e-30; },
     {},
     {"transforms.json", "frames[2]", "focal length"}},
    {"WidthZero", [](json& j) { j["w"] = 0; }, {}, {"transforms.json", "w", "must be > 0"}},
    {"FocalAsString",
     [](json& j) { j["fl_x"] = "20"; },
     {},
     {"transforms.json", "fl_x", "expected a number"}},
    {"AngleOutOfRange",
     [](json& j) {
       j.erase("fl_x");
       j.erase("fl_y");
       j["camera_angle_x"] = 3.5;
     },
     {},
     {"transforms.json", "camera_angle_x", "(0, pi)"}},
    {"NoFocal",
     [](json& j) {
       j.erase("fl_x");
       j.erase("fl_y");
     },
     {},
     {"transforms.json", "camera_angle_x", "missing"}},
    {"ReflectedPose",
     [](json& j) { frame(j, 1)["transform_matrix"][2][2] = -1; },
     {},
     {"transforms.json", "frames[1].transform_matrix", "reflection"}},
    {"ScaledPose",
     [](json& j) { frame(j, 1)["transform_matrix"][0][0] = 2; },
     {},
     {"transforms.json", "frames[1].transform_matrix", "not a rotation"}},
    {"PoseThreeRows",
     [](json& j) { frame(j, 0)["transform_matrix"].erase(3); },
     {},
     {"transforms.json", "frames[0].transform_matrix", "4x4"}},
    {"PoseStringEntry",
     [](json& j) { frame(j, 0)["transform_matrix"][0][3] = "x"; },
     {},
     {"transforms.json", "frames[0].transform_matrix", "4x4"}},
    {"PoseOverflowingNumber",
     {},
     [](const fs::path& d) {
       json j = json::parse(std::ifstream(d / "transforms.json"));
       std::string s = j.dump();
       const std::string from = "[0,0,1,3.0]";
       s.replace(s.find(from), from.size(), "[0,0,1,1e999]");
       test::write_text(d / "transforms.json", s);
     },
     {"transforms.json", "JSON", "1e999"}},
    {"PoseMissing",
     [](json& j) { frame(j, 3).erase("transform_matrix"); },
     {},
     {"transforms.json", "frames[3].transform_matrix", "missing"}},
    {"DuplicateFrame",
     [](json& j) { frame(j, 2)["file_path"] = "images/f1.png"; },
     {},
     {"transforms.json", "frames[2].file_path", "frames[1]"}},
    {"FramesMissing",
     [](json& j) { j.erase("frames"); },
     {},
     {"transforms.json", "frames", "missing"}},
    {"FramesNotArray",
     [](json& j) { j["frames"] = 3; },
     {},
     {"transforms.json", "frames", "expected an array"}},
    {"FramesEmpty",
     [](json& j) { j["frames"] = json::array(); },
     {},
     {"transforms.json", "frames", "no frames"}},
    {"FrameNotObject",
     [](json& j) { frame(j, 1) = 7; },
     {},
     {"transforms.json", "frames[1]", "expected an object"}},
    {"FilePathMissing",
     [](json& j) { frame(j, 1).erase("file_path"); },
     {},
     {"transforms.json", "frames[1].file_path", "missing"}},
    {"FilePathNotString",
     [](json& j) { frame(j, 1)["file_path"] = 5; },
     {},
     {"transforms.json", "frames[1].file_path", "expected a string"}},
    {"NoImageFound",
     [](json& j) {
       for (auto& f : j["frames"]) f["file_path"] = "nope/x.png";
     },
     {},
     {"transforms.json", "frames", "no frame has its image"}},
    {"OnlyOneFrameLeavesNoTraining",
     [](json& j) {
       j["frames"].erase(1);
       j["frames"].erase(1);
       j["frames"].erase(1);
     },
     {},
     {"transforms.json", "no training frames"}},
    {"MalformedJson",
     {},
     [](const fs::path& d) { test::write_text(d / "transforms.json", "{\"frames\": [}"); },
     {"transforms.json", "JSON", "malformed"}},
    {"EmptyFile",
     {},
     [](const fs::path& d) { test::write_text(d / "transforms.json", ""); },
     {"transforms.json", "JSON"}},
    {"TopLevelArray",
     {},
     [](const fs::path& d) { test::write_text(d / "transforms.json", "[1, 2]"); },
     {"transforms.json", "top level must be an object"}},
    {"UnsupportedCameraModel",
     [](json& j) { j["camera_model"] = "EQUIRECTANGULAR"; },
     {},
     {"transforms.json", "camera_model", "EQUIRECTANGULAR"}},
    {"IsFisheyeNotBoolean",
     [](json& j) { j["is_fisheye"] = "yes"; },
     {},
     {"transforms.json", "is_fisheye", "expected true or false"}},
    {"CameraModelNotString",
     [](json& j) { j["camera_model"] = 1; },
     {},
     {"transforms.json", "camera_model"}},
    {"AabbScaleNegative",
     [](json& j) { j["aabb_scale"] = -4; },
     {},
     {"transforms.json", "aabb_scale"}},
    {"ScaleZero",
     [](json& j) {
       j["aabb_scale"] = 4;
       j["scale"] = 0;
     },
     {},
     {"transforms.json", "scale"}},
    {"OffsetWrongLength",
     [](json& j) {
       j["aabb_scale"] = 4;
       j["offset"] = {1, 2};
     },
     {},
     {"transforms.json", "offset"}},
    {"DistortionAsString", [](json& j) { j["k1"] = "0.1"; }, {}, {"transforms.json", "k1"}},
    {"CorruptImage",
     {},
     [](const fs::path& d) { test::write_text(d / "images/f1.png", "not an image at all"); },
     {"transforms.json", "frames[1]", "f1.png"}},
    {"EmptyImage",
     {},
     [](const fs::path& d) { test::write_text(d / "images/f2.png", ""); },
     {"transforms.json", "frames[2]", "f2.png"}},
    {"TruncatedPng",
     {},
     [](const fs::path& d) { fs::resize_file(d / "images/f3.png", 60); },
     {"transforms.json", "frames[3]", "f3.png"}},
};

class BadInputTransforms : public ::testing::TestWithParam<JsonCase> {};

TEST_P(BadInputTransforms, NamesFileAndField) {
  const JsonCase& c = GetParam();
  const auto dir = test::temp_dir("bad_transforms_" + c.name);
  test::write_transforms_scene(dir, c.edit);
  if (c.after) c.after(dir);
  expect_error(test::error_of([&] { load_transforms(dir.string(), {}); }), c.expect);
}

INSTANTIATE_TEST_SUITE_P(Cases, BadInputTransforms, ::testing::ValuesIn(kTransformsCases), name_of);

// ---- NeRF-synthetic --------------------------------------------------------------------------

const std::vector<JsonCase> kBlenderCases = {
    {"NoTrainSplit",
     {},
     [](const fs::path& d) { fs::remove(d / "transforms_train.json"); },
     {"transforms_train.json", "not found"}},
    {"NoFrames",
     [](json& j) { j["frames"] = json::array(); },
     {},
     {"transforms_train.json", "no frames"}},
    {"AngleMissing",
     [](json& j) { j.erase("camera_angle_x"); },
     {},
     {"transforms_train.json", "camera_angle_x", "missing"}},
    {"AngleZero",
     [](json& j) { j["camera_angle_x"] = 0; },
     {},
     {"transforms_train.json", "camera_angle_x"}},
    {"AngleNegative",
     [](json& j) { j["camera_angle_x"] = -0.5; },
     {},
     {"transforms_train.json", "camera_angle_x"}},
    {"FocalTiny",
     [](json& j) { j["fl_x"] = 1e-300; },
     {},
     {"transforms_train.json", "focal length"}},
    {"ReflectedPose",
     [](json& j) { j["frames"][1]["transform_matrix"][0][0] = -1; },
     {},
     {"transforms_train.json", "frames[1].transform_matrix", "reflection"}},
    {"ShearedPose",
     [](json& j) { j["frames"][1]["transform_matrix"][0][1] = 0.5; },
     {},
     {"transforms_train.json", "frames[1].transform_matrix", "not a rotation"}},
    {"DuplicateFrame",
     [](json& j) { j["frames"][2]["file_path"] = "./train/r_0"; },
     {},
     {"transforms_train.json", "frames[2].file_path", "frames[0]"}},
    {"ImageMissing",
     [](json& j) { j["frames"][1]["file_path"] = "./train/r_9"; },
     {},
     {"transforms_train.json", "frames[1].file_path", "image not found"}},
    {"ImageSizeDiffers",
     {},
     [](const fs::path& d) { test::write_rgb_png(d / "train/r_2.png", 8, 8); },
     {"transforms_train.json", "frames[2]", "one size"}},
    {"CorruptImage",
     {},
     [](const fs::path& d) { test::write_text(d / "train/r_1.png", "GIF89a garbage"); },
     {"transforms_train.json", "frames[1]", "r_1.png"}},
    {"MalformedJson",
     {},
     [](const fs::path& d) { test::write_text(d / "transforms_train.json", "{,}"); },
     {"transforms_train.json", "malformed"}},
    {"MalformedTestSplit",
     {},
     [](const fs::path& d) { test::write_text(d / "transforms_test.json", "[[["); },
     {"transforms_test.json", "malformed"}},
    {"TestSplitImageMissing",
     {},
     [](const fs::path& d) { fs::remove(d / "test/r_0.png"); },
     {"transforms_test.json", "frames[0].file_path", "image not found"}},
    {"AngleOverflowingNumber",
     {},
     [](const fs::path& d) {
       test::write_text(d / "transforms_train.json", "{\"camera_angle_x\": 1e999, \"frames\": []}");
     },
     {"transforms_train.json", "JSON", "1e999"}},
};

class BadInputBlender : public ::testing::TestWithParam<JsonCase> {};

TEST_P(BadInputBlender, NamesFileAndField) {
  const JsonCase& c = GetParam();
  const auto dir = test::temp_dir("bad_blender_" + c.name);
  test::write_blender_scene(dir, c.edit);
  if (c.after) c.after(dir);
  expect_error(test::error_of([&] { load_blender(dir.string(), {}); }), c.expect);
}

INSTANTIATE_TEST_SUITE_P(Cases, BadInputBlender, ::testing::ValuesIn(kBlenderCases), name_of);

}  // namespace
}  // namespace splat
