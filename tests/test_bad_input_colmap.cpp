// Bad COLMAP datasets, binary and text, one case per defect and form: every load fails with an
// error that names the file and the camera, image, point or line at fault (never a crash, a hang
// or a silently wrong camera). The JSON formats: test_bad_input_datasets.cpp.
#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <limits>
#include <tuple>

#include "bad_input_util.h"
#include "io/dataset.h"
#include "test_util.h"

namespace splat {
namespace {

namespace fs = std::filesystem;
using test::expect_error;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNan = std::numeric_limits<double>::quiet_NaN();

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
    {"UnsupportedModel",  // FOV: f f cx cy omega
     [](ColmapModel& m) {
       m.cameras[0].model_id = 7;
       m.cameras[0].params = {20, 20, 8, 6, 0.5};
     },
     {},
     {"cameras.", "camera 1", "FOV", "image_undistorter"}},
    {"FoldingLens",  // k1 = -1.5 folds the image before its corners: no pinhole sees them
     [](ColmapModel& m) {
       m.cameras[0].model_id = 4;
       m.cameras[0].params = {20, 20, 8, 6, -1.5, 0, 0, 0};
     },
     {},
     {"cameras.", "camera 1", "cannot be inverted"}},
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
     {"sparse/0/points3D.", "not a regular file (a directory)"}},
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
