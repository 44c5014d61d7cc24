// Bad datasets, one case per defect and format: every load fails with an error that names the
// file and the field or record at fault (never a crash, a hang or a silently wrong camera).
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <functional>
#include <limits>

#include "bad_input_util.h"
#include "io/dataset.h"
#include "test_util.h"

namespace splat {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNan = std::numeric_limits<double>::quiet_NaN();

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

void expect_error(const std::string& msg, const std::vector<std::string>& parts) {
  for (const std::string& p : parts) EXPECT_MENTIONS(msg, p);
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
    {"FisheyeModel",
     [](json& j) { j["camera_model"] = "OPENCV_FISHEYE"; },
     {},
     {"transforms.json", "camera_model"}},
    {"IsFisheye", [](json& j) { j["is_fisheye"] = true; }, {}, {"transforms.json", "is_fisheye"}},
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

// ---- COLMAP, binary and text -------------------------------------------------------------------

struct ColmapCase {
  std::string name;
  std::function<void(ColmapModel&)> edit;
  std::function<void(const fs::path& dir, const std::string& ext)> after;  // ext: "bin" or "txt"
  std::vector<std::string> expect;  // "{file}" stands for cameras / images / points3D
  bool binary = true, text = true;  // the forms that can hold the defect
};

void PrintTo(const ColmapCase& c, std::ostream* os) {
  *os << c.name;
}

const std::vector<ColmapCase> kColmapCases = {
    {"FocalZero",
     [](ColmapModel& m) { m.cameras[0].params[0] = 0; },
     {},
     {"cameras.", "camera 1", "focal length fx = 0"}},
    {"FocalNegative",
     [](ColmapModel& m) { m.cameras[0].params[1] = -20; },
     {},
     {"cameras.", "focal length fy = -20"}},
    {"FocalTiny",
     [](ColmapModel& m) { m.cameras[0].params[0] = 1e-300; },
     {},
     {"cameras.", "focal length fx = 1e-300"}},
    {"FocalHuge",
     [](ColmapModel& m) { m.cameras[0].params[0] = 1e300; },
     {},
     {"cameras.", "focal length fx = 1e+300"}},
    {"SimplePinholeFocalZero",
     [](ColmapModel& m) {
       m.cameras[0].model_id = 0;
       m.cameras[0].params = {0, 8, 6};
     },
     {},
     {"cameras.", "focal length fx = 0"}},
    {"PrincipalPointFar",
     [](ColmapModel& m) { m.cameras[0].params[2] = 1e6; },
     {},
     {"cameras.", "principal point cx"}},
    {"PrincipalPointNan",
     [](ColmapModel& m) { m.cameras[0].params[3] = kNan; },
     {},
     {"cameras.", "camera 1", "not finite"}},
    {"FocalInfinite",
     [](ColmapModel& m) { m.cameras[0].params[0] = kInf; },
     {},
     {"cameras.", "not finite"}},
    {"WidthZero",
     [](ColmapModel& m) { m.cameras[0].width = 0; },
     {},
     {"cameras.", "implausible size 0x12"}},
    {"HeightHuge",
     [](ColmapModel& m) { m.cameras[0].height = 1ull << 40; },
     {},
     {"cameras.", "implausible size"}},
    {"Distorted",
     [](ColmapModel& m) {
       m.cameras[0].model_id = 4;
       m.cameras[0].params = {20, 20, 8, 6, 0.1, 0, 0, 0};
     },
     {},
     {"cameras.", "camera 1", "OPENCV", "image_undistorter"}},
    {"Fisheye",
     [](ColmapModel& m) {
       m.cameras[0].model_id = 5;
       m.cameras[0].params = {20, 20, 8, 6, 0, 0, 0, 0};
     },
     {},
     {"cameras.", "fisheye"}},
    {"UnknownModelId",
     [](ColmapModel& m) { m.cameras[0].model_id = 99; },
     {},
     {"cameras.bin", "unknown camera model id 99"},
     true,
     false},
    {"UnknownModelName",
     {},
     [](const fs::path& d, const std::string&) {
       test::write_text(d / "sparse/0/cameras.txt", "1 PANORAMA 16 12 20 20 8 6\n");
     },
     {"cameras.txt", "line 1", "unknown camera model 'PANORAMA'"},
     false,
     true},
    {"WrongParameterCount",
     {},
     [](const fs::path& d, const std::string&) {
       test::write_text(d / "sparse/0/cameras.txt", "1 PINHOLE 16 12 20 20 8\n");
     },
     {"cameras.txt", "line 1", "takes 4 parameters, got 3"},
     false,
     true},
    {"NotANumber",
     {},
     [](const fs::path& d, const std::string&) {
       test::write_text(d / "sparse/0/cameras.txt", "1 PINHOLE 16 twelve 20 20 8 6\n");
     },
     {"cameras.txt", "line 1", "HEIGHT", "'twelve'"},
     false,
     true},
    {"ImageLineFieldCount",
     {},
     [](const fs::path& d, const std::string&) {
       test::write_text(d / "sparse/0/images.txt", "1 1 0 0 0 0 0 3 1\n\n");
     },
     {"images.txt", "line 1", "10 fields"},
     false,
     true},
    {"PointsLineOddPairs",
     {},
     [](const fs::path& d, const std::string&) {
       test::write_text(d / "sparse/0/points3D.txt", "1 0 0 0 1 2 3 0.5 7\n");
     },
     {"points3D.txt", "line 1", "pairs"},
     false,
     true},
    {"PointColorAbove255",
     {},
     [](const fs::path& d, const std::string&) {
       test::write_text(d / "sparse/0/points3D.txt", "1 0 0 0 1 2 300 0.5\n");
     },
     {"points3D.txt", "line 1", "above 255"},
     false,
     true},
    {"PointFarBeyondFloat",
     [](ColmapModel& m) { m.points[3].xyz[1] = 1e300; },
     {},
     {"points3D.", "point 4", "xyz coordinate 1e+300"}},
    {"PointBeyondFloatPrecision",
     [](ColmapModel& m) { m.points[0].xyz[0] = -1e20; },
     {},
     {"points3D.", "point 1", "xyz"}},
    {"PointInfinite",
     [](ColmapModel& m) { m.points[2].xyz[2] = kInf; },
     {},
     {"points3D.", "point 3", "not finite"}},
    {"PointNan",
     [](ColmapModel& m) { m.points[1].xyz[0] = kNan; },
     {},
     {"points3D.", "point 2", "not finite"}},
    {"QuaternionNotUnit",
     [](ColmapModel& m) {
       m.images[1].qvec = {2, 0, 0, 0};
     },
     {},
     {"images.", "image 2", "unit quaternion"}},
    {"QuaternionZero",
     [](ColmapModel& m) {
       m.images[1].qvec = {0, 0, 0, 0};
     },
     {},
     {"images.", "image 2", "unit quaternion"}},
    {"QuaternionNan",
     [](ColmapModel& m) { m.images[0].qvec[2] = kNan; },
     {},
     {"images.", "image 1", "qvec"}},
    {"TranslationInfinite",
     [](ColmapModel& m) { m.images[3].tvec[0] = kInf; },
     {},
     {"images.", "image 4", "tvec"}},
    {"CameraOfImageMissing",
     [](ColmapModel& m) { m.images[2].camera_id = 7; },
     {},
     {"images.", "image 3", "camera 7"}},
    {"DuplicateImageName",
     [](ColmapModel& m) { m.images[2].name = m.images[1].name; },
     {},
     {"images.", "im1.png", "also used by image"}},
    {"DuplicateImageId",
     [](ColmapModel& m) { m.images[2].id = 1; },
     {},
     {"images.", "image 1", "more than once"}},
    {"DuplicateCameraId",
     [](ColmapModel& m) { m.cameras.push_back(m.cameras[0]); },
     {},
     {"cameras.", "camera 1", "more than once"}},
    {"DuplicatePointId",
     [](ColmapModel& m) { m.points[4].id = 2; },
     {},
     {"points3D.", "point 2", "more than once"}},
    {"EmptyImageName",
     [](ColmapModel& m) { m.images[0].name = ""; },
     {},
     {"images.bin", "empty image name"},
     true,
     false},
    {"NoImages", [](ColmapModel& m) { m.images.clear(); }, {}, {"images.", "no images"}},
    {"OnlyOneImage",
     [](ColmapModel& m) { m.images.resize(1); },
     {},
     {"images.", "no training images"}},
    {"ImageFileMissing",
     {},
     [](const fs::path& d, const std::string&) { fs::remove(d / "images/im2.png"); },
     {"images.", "image 3", "im2.png not found"}},
    {"ImageFileCaseDiffers",
     {},
     [](const fs::path& d, const std::string&) {
       fs::rename(d / "images/im2.png", d / "images/IM2.png");
     },
     {"images.", "im2.png not found", "case differs"}},
    {"ImageSizeDiffers",
     {},
     [](const fs::path& d, const std::string&) { test::write_rgb_png(d / "images/im1.png", 8, 6); },
     {"images.", "image 2", "8x6", "16x12"}},
    {"ImageCorrupt",
     {},
     [](const fs::path& d, const std::string&) {
       test::write_text(d / "images/im3.png", "\x89PNG broken");
     },
     {"images.", "image 4", "im3.png"}},
    {"TruncatedCameras",
     {},
     [](const fs::path& d, const std::string&) { fs::resize_file(d / "sparse/0/cameras.bin", 30); },
     {"cameras.bin", "camera record 1 of 1", "truncated"},
     true,
     false},
    {"TruncatedImages",
     {},
     [](const fs::path& d, const std::string&) { fs::resize_file(d / "sparse/0/images.bin", 100); },
     {"images.bin", "image record 2 of 4", "truncated"},
     true,
     false},
    {"TruncatedPoints",
     {},
     [](const fs::path& d, const std::string&) { fs::resize_file(d / "sparse/0/points3D.bin", 4); },
     {"points3D.bin", "header", "truncated"},
     true,
     false},
    {"TrailingBytes",
     {},
     [](const fs::path& d, const std::string&) {
       std::ofstream(d / "sparse/0/points3D.bin", std::ios::app | std::ios::binary) << "junk";
     },
     {"points3D.bin", "4 bytes after the last record"},
     true,
     false},
    {"HugeRecordCount",
     {},
     [](const fs::path& d, const std::string&) {
       std::fstream f(d / "sparse/0/points3D.bin", std::ios::in | std::ios::out | std::ios::binary);
       const std::uint64_t n = 4'000'000'000ull;
       f.write(reinterpret_cast<const char*>(&n), sizeof n);
     },
     {"points3D.bin", "truncated"},
     true,
     false},
    {"ImagesFileMissing",
     {},
     [](const fs::path& d, const std::string& ext) { fs::remove(d / ("sparse/0/images." + ext)); },
     {"images.bin", "not found", "images.txt"}},
    {"PointsFileIsDirectory",
     {},
     [](const fs::path& d, const std::string& ext) {
       fs::remove(d / ("sparse/0/points3D." + ext));
       fs::create_directories(d / ("sparse/0/points3D." + ext));
     },
     {"points3D.bin", "not found"}},
};

class BadInputColmap : public ::testing::TestWithParam<std::tuple<ColmapCase, test::ColmapForm>> {};

TEST_P(BadInputColmap, NamesFileAndRecord) {
  const auto& [c, form] = GetParam();
  const bool binary = form == test::ColmapForm::Binary;
  const auto dir = test::temp_dir("bad_colmap_" + c.name + (binary ? "_bin" : "_txt"));
  ColmapModel m = test::small_colmap_model();
  if (c.edit) c.edit(m);
  test::write_colmap_scene(dir, m, form);
  if (c.after) c.after(dir, binary ? "bin" : "txt");
  expect_error(test::error_of([&] { load_colmap(dir.string(), {}); }), c.expect);
}

std::vector<std::tuple<ColmapCase, test::ColmapForm>> colmap_params() {
  std::vector<std::tuple<ColmapCase, test::ColmapForm>> out;
  for (const ColmapCase& c : kColmapCases) {
    if (c.binary) out.emplace_back(c, test::ColmapForm::Binary);
    if (c.text) out.emplace_back(c, test::ColmapForm::Text);
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(
    Cases,
    BadInputColmap,
    ::testing::ValuesIn(colmap_params()),
    [](const ::testing::TestParamInfo<std::tuple<ColmapCase, test::ColmapForm>>& info) {
      return std::get<0>(info.param).name +
             (std::get<1>(info.param) == test::ColmapForm::Binary ? "Bin" : "Txt");
    });

}  // namespace
}  // namespace splat
