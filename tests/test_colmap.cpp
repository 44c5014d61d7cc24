// COLMAP loader: the real figurine model (binary), a text export of it, small hand-written
// models for layouts and bad input, and a short training run on the real scene.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "core/error.h"
#include "engine/backend.h"
#include "engine/target.h"
#include "io/colmap.h"
#include "io/dataset.h"
#include "io/image_io.h"
#include "test_util.h"
#include "train/backend_factory.h"
#include "train/trainer.h"

namespace splat {
namespace {

using test::error_of;

namespace fs = std::filesystem;

fs::path figurine() {
  return test::shared_dir() / "data/figurine";
}

void write_text(const fs::path& p, const std::string& s) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << s;
}

// A text export of a model, written independently of the reader: full precision, so the text
// form holds exactly the binary values. 2D points and tracks are left out (the reader drops them).
void write_text_model(const ColmapModel& m, const fs::path& dir) {
  std::ostringstream cams, ims, pts;
  for (std::ostringstream* s : {&cams, &ims, &pts}) s->precision(17);
  cams << "# Camera list with one line of data per camera:\n";
  for (const ColmapCamera& c : m.cameras) {
    cams << c.id << " " << colmap_camera_model(c.model_id)->name << " " << c.width << " "
         << c.height;
    for (double p : c.params) cams << " " << p;
    cams << "\n";
  }
  ims << "# Image list with two lines of data per image:\n";
  for (const ColmapImage& im : m.images) {
    ims << im.id;
    for (double q : im.qvec) ims << " " << q;
    for (double t : im.tvec) ims << " " << t;
    ims << " " << im.camera_id << " " << im.name << "\n\n";
  }
  pts << "# 3D point list with one line of data per point:\n";
  for (const ColmapPoint& p : m.points) {
    pts << p.id << " " << p.xyz[0] << " " << p.xyz[1] << " " << p.xyz[2] << " " << int(p.rgb[0])
        << " " << int(p.rgb[1]) << " " << int(p.rgb[2]) << " " << p.error << "\n";
  }
  write_text(dir / "cameras.txt", cams.str());
  write_text(dir / "images.txt", ims.str());
  write_text(dir / "points3D.txt", pts.str());
}

LoadOptions downscaled(int factor) {
  LoadOptions o;
  o.downscale = factor;
  return o;
}

// ---- the real figurine model -------------------------------------------------------------------

TEST(Colmap, FigurineModelParsesExactly) {
  SPLAT_REQUIRE_SHARED("data/figurine");
  const ColmapModel m = read_colmap_model((figurine() / "sparse/0").string());
  ASSERT_EQ(m.cameras.size(), 23u);
  ASSERT_EQ(m.images.size(), 23u);
  ASSERT_EQ(m.points.size(), 1443u);
  std::set<std::uint64_t> heights;
  std::set<std::uint32_t> cameras_used;
  for (const ColmapCamera& c : m.cameras) {
    EXPECT_EQ(colmap_camera_model(c.model_id)->name, "PINHOLE");
    EXPECT_EQ(c.params.size(), 4u);
    EXPECT_EQ(c.width, 1000u);
    heights.insert(c.height);
  }
  for (const ColmapImage& im : m.images) cameras_used.insert(im.camera_id);
  EXPECT_EQ(cameras_used.size(), 23u);  // one camera per image
  EXPECT_GT(heights.size(), 1u);        // heights differ per image
  // Values read independently (Python struct) from cameras.bin and images.bin.
  EXPECT_EQ(m.cameras[0].height, 658u);
  EXPECT_DOUBLE_EQ(m.cameras[0].params[0], 2048.0526947241324);
  EXPECT_EQ(m.images[0].name, "DSC_5283.jpg");
  EXPECT_DOUBLE_EQ(m.images[0].qvec[2], 0.7052195658556412);
  EXPECT_DOUBLE_EQ(m.images[0].tvec[2], 2.595650696727169);
  std::size_t colored = 0;
  for (const ColmapPoint& p : m.points) colored += (p.rgb[0] | p.rgb[1] | p.rgb[2]) != 0;
  EXPECT_GT(colored, 1400u);
}

void check_figurine_dataset(const ColmapModel& m, const Dataset& data, int f);

TEST(Colmap, FigurineLoadsWithPerImageIntrinsicsAndHoldout) {
  SPLAT_REQUIRE_SHARED("data/figurine");
  const ColmapModel m = read_colmap_model((figurine() / "sparse/0").string());
  for (const int factor : {1, 8}) {
    SCOPED_TRACE("downscale " + std::to_string(factor));
    check_figurine_dataset(m, load_colmap(figurine().string(), downscaled(factor)), factor);
  }
}

void check_figurine_dataset(const ColmapModel& m, const Dataset& data, int f) {
  ASSERT_EQ(data.train.size(), 20u);
  ASSERT_EQ(data.test.size(), 3u);  // sorted names 0, 8, 16
  EXPECT_EQ(data.test[0].name, "DSC_5283");
  EXPECT_EQ(data.test[1].name, "DSC_5291");
  EXPECT_EQ(data.test[2].name, "DSC_5299");
  ASSERT_TRUE(data.points.has_value());
  ASSERT_EQ(data.points->positions.size(), 3 * 1443u);
  EXPECT_FLOAT_EQ(data.points->colors[0], m.points[0].rgb[0] / 255.0f);
  EXPECT_FLOAT_EQ(data.points->positions[5], float(m.points[1].xyz[2]));

  std::set<int> heights;
  for (const auto* split : {&data.train, &data.test}) {
    for (const View& v : *split) {
      SCOPED_TRACE(v.name);
      const ColmapImage* im = nullptr;
      for (const ColmapImage& i : m.images) {
        if (fs::path(i.name).stem() == v.name) im = &i;
      }
      ASSERT_NE(im, nullptr);
      const ColmapCamera& c = m.cameras[im->camera_id - 1];
      ASSERT_EQ(c.id, im->camera_id);
      EXPECT_EQ(v.camera.width, int(c.width) / f);
      EXPECT_EQ(v.camera.height, int(c.height) / f);
      EXPECT_EQ(v.image.width, v.camera.width);
      EXPECT_EQ(v.image.height, v.camera.height);
      EXPECT_NEAR(v.camera.fx, c.params[0] * double(c.width / f) / double(c.width), 1e-9);
      EXPECT_NEAR(v.camera.fy, c.params[1] * double(c.height / f) / double(c.height), 1e-9);
      EXPECT_NEAR(v.camera.cy, c.params[3] * double(c.height / f) / double(c.height), 1e-9);
      EXPECT_NEAR(v.camera.t.z, im->tvec[2], 1e-12);
      heights.insert(v.camera.height);
      // Most sparse points project into the image in front of the camera: the pose is
      // world-to-camera in OpenCV axes (an inverted or flipped pose would fail this).
      std::size_t inside = 0;
      for (std::size_t k = 0; k < 1443; ++k) {
        const float* x = &data.points->positions[3 * k];
        const Vec3<double> p = v.camera.R * Vec3<double>{x[0], x[1], x[2]} + v.camera.t;
        const double u = v.camera.fx * p.x / p.z + v.camera.cx;
        const double w = v.camera.fy * p.y / p.z + v.camera.cy;
        inside += p.z > 0 && u >= 0 && u < v.camera.width && w >= 0 && w < v.camera.height;
      }
      EXPECT_GT(inside, 1443u * 8 / 10);
    }
  }
  if (f == 1) {
    EXPECT_GT(heights.size(), 1u);  // at 1/8 they all round to 82
  }
  // COLMAP units: the cameras sit a few units from the object (value from the model itself).
  EXPECT_GT(scene_extent(data), 1.0);
  EXPECT_LT(scene_extent(data), 20.0);
}

TEST(Colmap, TextAndBinaryFormsAgree) {
  SPLAT_REQUIRE_SHARED("data/figurine");
  const auto dir = test::temp_dir("colmap_text");
  write_text_model(read_colmap_model((figurine() / "sparse/0").string()), dir / "sparse/0");
  fs::create_directory_symlink(figurine() / "images", dir / "images");

  const ColmapModel bin = read_colmap_model((figurine() / "sparse/0").string());
  const ColmapModel txt = read_colmap_model((dir / "sparse/0").string());
  EXPECT_EQ(fs::path(txt.images_file).filename(), "images.txt");
  ASSERT_EQ(bin.cameras.size(), txt.cameras.size());
  for (std::size_t i = 0; i < bin.cameras.size(); ++i) {
    EXPECT_EQ(bin.cameras[i].id, txt.cameras[i].id);
    EXPECT_EQ(bin.cameras[i].model_id, txt.cameras[i].model_id);
    EXPECT_EQ(bin.cameras[i].width, txt.cameras[i].width);
    EXPECT_EQ(bin.cameras[i].height, txt.cameras[i].height);
    EXPECT_EQ(bin.cameras[i].params, txt.cameras[i].params);
  }
  ASSERT_EQ(bin.images.size(), txt.images.size());
  for (std::size_t i = 0; i < bin.images.size(); ++i) {
    EXPECT_EQ(bin.images[i].id, txt.images[i].id);
    EXPECT_EQ(bin.images[i].qvec, txt.images[i].qvec);
    EXPECT_EQ(bin.images[i].tvec, txt.images[i].tvec);
    EXPECT_EQ(bin.images[i].camera_id, txt.images[i].camera_id);
    EXPECT_EQ(bin.images[i].name, txt.images[i].name);
  }
  ASSERT_EQ(bin.points.size(), txt.points.size());
  for (std::size_t i = 0; i < bin.points.size(); ++i) {
    EXPECT_EQ(bin.points[i].id, txt.points[i].id);
    EXPECT_EQ(bin.points[i].xyz, txt.points[i].xyz);
    EXPECT_EQ(bin.points[i].rgb, txt.points[i].rgb);
    EXPECT_EQ(bin.points[i].error, txt.points[i].error);
  }

  // The datasets built from both forms are identical.
  const Dataset a = load_colmap(figurine().string(), downscaled(16));
  const Dataset b = load_colmap(dir.string(), downscaled(16));
  ASSERT_EQ(a.train.size(), b.train.size());
  for (std::size_t i = 0; i < a.train.size(); ++i) {
    const Camera &ca = a.train[i].camera, &cb = b.train[i].camera;
    EXPECT_EQ(a.train[i].name, b.train[i].name);
    EXPECT_TRUE(ca.fx == cb.fx && ca.fy == cb.fy && ca.cx == cb.cx && ca.cy == cb.cy);
    EXPECT_TRUE(ca.R.m == cb.R.m);
    EXPECT_TRUE(ca.t.x == cb.t.x && ca.t.y == cb.t.y && ca.t.z == cb.t.z);
    EXPECT_EQ(a.train[i].image.data, b.train[i].image.data);
  }
  EXPECT_EQ(a.points->positions, b.points->positions);
  EXPECT_EQ(a.points->colors, b.points->colors);
}

// --downscale n reads the dataset's own 1/n copies (images_n/, as 3DGS's -r n and gsplat's
// --data_factor n do), with the intrinsics scaled to each copy's size, which may round either way;
// a copies folder that lacks an image is passed over; a copy of another size is an error.
TEST(Colmap, DownscaleReadsTheImagesNCopies) {
  SPLAT_REQUIRE_SHARED("data/figurine");
  const auto dir = test::temp_dir("colmap_images_n");
  fs::create_directory_symlink(figurine() / "sparse", dir / "sparse");
  fs::create_directory_symlink(figurine() / "images", dir / "images");
  fs::create_directories(dir / "images_2");
  std::map<std::string, Image> copies;  // by view name: rounded up, and inverted to tell them apart
  for (const auto& e : fs::directory_iterator(figurine() / "images")) {
    const Image full = read_image(e.path().string());
    Image copy = resize_area(full, (full.width + 1) / 2, (full.height + 1) / 2);
    for (float& v : copy.data) v = 1.0f - v;
    write_png((dir / "images_2" / e.path().filename()).string(), copy);
    copies[e.path().stem().string()] = copy;
  }
  const ColmapModel m = read_colmap_model((figurine() / "sparse/0").string());
  const Dataset data = load_colmap(dir.string(), downscaled(2));
  ASSERT_EQ(data.train.size(), 20u);
  for (const auto* split : {&data.train, &data.test}) {
    for (const View& v : *split) {
      SCOPED_TRACE(v.name);
      const Image& copy = copies.at(v.name);
      ASSERT_EQ(v.image.width, copy.width);
      ASSERT_EQ(v.image.height, copy.height);
      EXPECT_EQ(v.camera.width, copy.width);
      EXPECT_EQ(fs::path(v.path).parent_path().filename(), "images_2");
      EXPECT_EQ(v.image.data[0], std::uint8_t(std::lround(copy.data[0] * 255.0f)));
      const ColmapImage* im = nullptr;
      for (const ColmapImage& i : m.images)
        if (fs::path(i.name).stem() == v.name) im = &i;
      ASSERT_NE(im, nullptr);
      const ColmapCamera& c = m.cameras[im->camera_id - 1];
      EXPECT_NEAR(v.camera.fx, c.params[0] * copy.width / double(c.width), 1e-9);
      EXPECT_NEAR(v.camera.cy, c.params[3] * copy.height / double(c.height), 1e-9);
    }
  }
  // No copy of one image: all of them come from images/, downscaled (each side rounded down).
  const fs::path first = *fs::directory_iterator(dir / "images_2");
  const Image kept = read_image(first.string());
  fs::remove(first);
  const Dataset full = load_colmap(dir.string(), downscaled(2));
  for (const View& v : full.train) EXPECT_EQ(fs::path(v.path).parent_path().filename(), "images");
  // A copy of another size is named.
  write_png(first.string(), resize_area(kept, kept.width / 2, kept.height / 2));
  const std::string e = error_of([&] { load_colmap(dir.string(), downscaled(2)); });
  EXPECT_NE(e.find(first.filename().string()), std::string::npos) << e;
  EXPECT_NE(e.find("1/2 copy is about"), std::string::npos) << e;
}

TEST(Colmap, BinaryIsPreferredWhenBothFormsExist) {
  SPLAT_REQUIRE_SHARED("data/figurine");
  const auto dir = test::temp_dir("colmap_both");
  fs::create_directories(dir);
  for (const char* f : {"cameras.bin", "images.bin", "points3D.bin"}) {
    fs::copy_file(figurine() / "sparse/0" / f, dir / f);
  }
  for (const char* f : {"cameras.txt", "images.txt", "points3D.txt"})
    write_text(dir / f, "garbage\n");
  const ColmapModel m = read_colmap_model(dir.string());
  EXPECT_EQ(m.images.size(), 23u);
  EXPECT_EQ(fs::path(m.points_file).filename(), "points3D.bin");
}

// The fox photos with COLMAP's OPENCV camera (k1 k2 p1 p2): resampled at load, cropped.
TEST(ColmapSlow, FoxWithLensDistortionLoadsUndistortedAndCropped) {
  SPLAT_REQUIRE_SHARED("data/fox_colmap/sparse/0");
  // fox_colmap/images links to fox/images; the link may arrive as a file holding its target.
  const fs::path fox = test::temp_dir("fox_colmap");
  fs::create_directories(fox);
  fs::create_directory_symlink(test::shared_dir() / "data/fox_colmap/sparse", fox / "sparse");
  fs::create_directory_symlink(test::shared_dir() / "data/fox/images", fox / "images");
  const ColmapModel m = read_colmap_model((fox / "sparse/0").string());
  ASSERT_EQ(std::string(colmap_camera_model(m.cameras[0].model_id)->name), "OPENCV");
  testing::internal::CaptureStderr();
  const Dataset d = load_colmap(fox.string(), downscaled(8));
  EXPECT_MENTIONS(testing::internal::GetCapturedStderr(),
                  "undistorting the images of 1 of 1 cameras");
  EXPECT_EQ(d.train.size() + d.test.size(), m.images.size());
  const Camera& cam = d.train[0].camera;
  EXPECT_EQ(d.train[0].image.width, cam.width);
  EXPECT_EQ(d.train[0].image.height, cam.height);
  EXPECT_LT(cam.width, int(m.cameras[0].width / 8));    // the crop removed the border the lens
  EXPECT_LE(cam.height, int(m.cameras[0].height / 8));  // did not see
  EXPECT_NEAR(cam.fx, m.cameras[0].params[0] / 8, 0.1 * m.cameras[0].params[0] / 8);
}

TEST(Colmap, TruncatedBinaryNamesTheRecord) {
  SPLAT_REQUIRE_SHARED("data/figurine");
  const auto dir = test::temp_dir("colmap_truncated");
  fs::create_directories(dir);
  for (const char* f : {"cameras.bin", "images.bin", "points3D.bin"}) {
    fs::copy_file(figurine() / "sparse/0" / f, dir / f);
  }
  fs::resize_file(dir / "images.bin", 20000);  // inside the second image (~17 kB each)
  const std::string msg = error_of([&] { read_colmap_model(dir.string()); });
  EXPECT_MENTIONS(msg, (dir / "images.bin").string() + ": image record 2 of 23 (image 2)");
  EXPECT_MENTIONS(msg, "truncated");

  fs::resize_file(dir / "points3D.bin", 4);  // inside the count
  fs::copy_file(figurine() / "sparse/0/images.bin", dir / "images.bin",
                fs::copy_options::overwrite_existing);
  EXPECT_MENTIONS(error_of([&] { read_colmap_model(dir.string()); }), "points3D.bin: header");
}

// ---- small hand-written models -----------------------------------------------------------------

// 10 images v00..v09 of 16x12 (listed out of order), one shared PINHOLE camera, 2 points.
fs::path small_scene(const std::string& name,
                     const std::string& cameras = "",
                     const std::string& images = "") {
  const auto dir = test::temp_dir(name);
  std::string ims = "# IMAGE_ID QW QX QY QZ TX TY TZ CAMERA_ID NAME\n";
  for (int k : {3, 1, 0, 2, 4, 5, 6, 7, 9, 8}) {
    const std::string n = "v0" + std::to_string(k) + ".png";
    Image img(16, 12, 3, float(k) / 10.0f);
    fs::create_directories(dir / "images");
    write_png((dir / "images" / n).string(), img);
    // A quarter turn about z: R = [[0, -1, 0], [1, 0, 0], [0, 0, 1]].
    ims += std::to_string(k + 1) + " 0.70710678118654757 0 0 0.70710678118654757 1 2 " +
           std::to_string(k + 3) + " 1 " + n + "\n1.5 2.5 -1 3 4 7\n";
  }
  write_text(dir / "sparse/0/cameras.txt",
             cameras.empty() ? "# comment\n1 PINHOLE 16 12 20 22 8 6\n" : cameras);
  write_text(dir / "sparse/0/images.txt", images.empty() ? ims : images);
  write_text(dir / "sparse/0/points3D.txt",
             "7 0.5 1.5 2.5 255 0 51 0.25 1 0 2 0\n9 -1 -2 -3 0 255 0 1.5\n");
  return dir;
}

TEST(Colmap, SharedCameraTextModel) {
  const auto dir = small_scene("colmap_small");
  LoadOptions opts;
  opts.downscale = 2;
  const Dataset d = load_colmap(dir.string(), opts);
  ASSERT_EQ(d.train.size(), 8u);
  ASSERT_EQ(d.test.size(), 2u);
  EXPECT_EQ(d.test[0].name, "v00");
  EXPECT_EQ(d.test[1].name, "v08");
  EXPECT_EQ(d.train[0].name, "v01");
  EXPECT_EQ(d.train[7].name, "v09");
  const Camera& c = d.train[2].camera;  // v03
  EXPECT_EQ(c.width, 8);
  EXPECT_EQ(c.height, 6);
  EXPECT_DOUBLE_EQ(c.fx, 10.0);
  EXPECT_DOUBLE_EQ(c.fy, 11.0);
  EXPECT_DOUBLE_EQ(c.cx, 4.0);
  EXPECT_DOUBLE_EQ(c.cy, 3.0);
  EXPECT_NEAR(c.R[0][1], -1.0, 1e-12);
  EXPECT_NEAR(c.R[1][0], 1.0, 1e-12);
  EXPECT_NEAR(c.R[2][2], 1.0, 1e-12);
  EXPECT_NEAR(c.R[0][0], 0.0, 1e-12);
  EXPECT_EQ(c.t.z, 6.0);
  EXPECT_NEAR(target_image(d.train[2].image).at(1, 1, 0), 0.3f, 1.0f / 255);
  ASSERT_TRUE(d.points.has_value());
  EXPECT_EQ(d.points->positions, (std::vector<float>{0.5f, 1.5f, 2.5f, -1, -2, -3}));
  EXPECT_EQ(d.points->colors, (std::vector<float>{1, 0, 0.2f, 0, 1, 0}));

  opts.holdout_every = 3;
  opts.max_train = 2;
  const Dataset e = load_colmap(dir.string(), opts);
  ASSERT_EQ(e.test.size(), 4u);  // v00 v03 v06 v09
  EXPECT_EQ(e.test[3].name, "v09");
  ASSERT_EQ(e.train.size(), 2u);
  EXPECT_EQ(e.train[1].name, "v02");
}

TEST(Colmap, EveryCameraModelParses) {
  // Each model with its parameter count, text and binary. Distortion zero: the models of
  // io/undistort.h load (fisheyes resampled to pinholes); FOV and the thin-prism models do not.
  const auto dir = test::temp_dir("colmap_models");
  for (int id = 0; id <= 11; ++id) {
    const ColmapCameraModel* m = colmap_camera_model(id);
    ASSERT_NE(m, nullptr) << id;
    SCOPED_TRACE(std::string(m->name));
    EXPECT_EQ(colmap_camera_model(m->name), m);
    // Appended piecewise: GCC 12 warns (falsely, -Wrestrict) on "literal" + std::string.
    std::string cams = "1 ";
    cams.append(m->name).append(" 16 12");
    std::string bin(8, '\0');
    const std::uint64_t one = 1, w = 16, h = 12;
    std::memcpy(bin.data(), &one, 8);
    const std::uint32_t cam_id = 1;
    const std::int32_t model_id = id;
    bin.append(reinterpret_cast<const char*>(&cam_id), 4);
    bin.append(reinterpret_cast<const char*>(&model_id), 4);
    bin.append(reinterpret_cast<const char*>(&w), 8);
    bin.append(reinterpret_cast<const char*>(&h), 8);
    for (int i = 0; i < m->num_params; ++i) {
      // Focal lengths 10, 11; a principal point inside the image (a lens needs one).
      const double p = i < m->num_focal ? 10.0 + i : i < m->num_focal + 2 ? 6.0 + i : 0.0;
      cams.append(" ").append(std::to_string(p));
      bin.append(reinterpret_cast<const char*>(&p), 8);
    }
    const auto scene = small_scene("colmap_model_" + std::to_string(id), cams + "\n");
    const ColmapModel t = read_colmap_model((scene / "sparse/0").string());
    ASSERT_EQ(t.cameras[0].params.size(), std::size_t(m->num_params));
    write_text(scene / "sparse/0/cameras.bin", bin);
    const ColmapModel b = read_colmap_model((scene / "sparse/0").string());
    EXPECT_EQ(b.cameras[0].params, t.cameras[0].params);
    const std::string name(m->name);
    if (name == "FOV" || name.find("THIN_PRISM") != std::string::npos) {
      EXPECT_MENTIONS(error_of([&] { load_colmap(scene.string(), LoadOptions{}); }),
                      "model " + name + " is not supported");
    } else {
      EXPECT_NO_THROW(load_colmap(scene.string(), LoadOptions{}));
    }
  }
  EXPECT_EQ(colmap_camera_model(12), nullptr);
  EXPECT_EQ(colmap_camera_model("PINHOLE_2"), nullptr);
}

TEST(Colmap, UnknownModelIdIsNamed) {
  const auto scene = small_scene("colmap_newer_model");
  std::string bin(8, '\0');
  const std::uint64_t one = 1;
  std::memcpy(bin.data(), &one, 8);
  const std::int32_t ids[2] = {1, 42};
  bin.append(reinterpret_cast<const char*>(ids), 8);
  bin.append(16, '\0');
  write_text(scene / "sparse/0/cameras.bin", bin);
  const std::string msg = error_of([&] { read_colmap_model((scene / "sparse/0").string()); });
  EXPECT_MENTIONS(msg, "cameras.bin: camera record 1 of 1 (camera 1): unknown camera model id 42");
}

TEST(Colmap, UnsupportedModelIsRejectedWithTheUndistortCommand) {
  const auto scene = small_scene("colmap_fov", "1 FOV 16 12 20 20 8 6 0.5\n");
  const std::string msg = error_of([&] { load_colmap(scene.string(), LoadOptions{}); });
  EXPECT_MENTIONS(msg, "cameras.txt: camera 1: model FOV is not supported");
  EXPECT_MENTIONS(msg, "colmap image_undistorter --image_path");
  EXPECT_MENTIONS(msg, "--input_path " + (scene / "sparse/0").string());
}

TEST(Colmap, MalformedTextRecordsNameFileAndLine) {
  auto err = [](const fs::path& scene) {
    return error_of([&] { load_colmap(scene.string(), LoadOptions{}); });
  };
  std::string msg = err(small_scene("colmap_bad_cam", "# c\n\n1 PINHOLE 16 12 20 22 8\n"));
  EXPECT_MENTIONS(msg, "cameras.txt: line 3 (camera 1): PINHOLE takes 4 parameters, got 3");
  msg = err(small_scene("colmap_bad_model", "1 PINHOLES 16 12 20 22 8 6\n"));
  EXPECT_MENTIONS(msg, "cameras.txt: line 1 (camera 1): unknown camera model 'PINHOLES'");
  msg = err(small_scene("colmap_bad_num", "1 PINHOLE 16 12 20 2x2 8 6\n"));
  EXPECT_MENTIONS(msg, "line 1 (camera 1): PARAMS: '2x2' is not a valid number");

  // A missing field (TZ) in the third image line.
  msg = err(small_scene("colmap_bad_image", "",
                        "1 1 0 0 0 0 0 1 1 v00.png\n\n2 1 0 0 0 0 0 1 1 v01.png\n\n"
                        "3 1 0 0 0 0 0 1 v02.png\n\n"));
  EXPECT_MENTIONS(msg, "images.txt: line 5: expected IMAGE_ID QW QX QY QZ TX TY TZ CAMERA_ID NAME");
  EXPECT_MENTIONS(msg, "got 9");
  // A points line that is not triples.
  msg = err(small_scene("colmap_bad_points2d", "", "1 1 0 0 0 0 0 1 1 v00.png\n1 2\n"));
  EXPECT_MENTIONS(msg, "images.txt: line 2 (2D points of image 1)");
  // An image whose camera is not in cameras.txt.
  msg = err(small_scene("colmap_bad_camref", "",
                        "1 1 0 0 0 0 0 1 1 v00.png\n\n5 1 0 0 0 0 0 1 99 v01.png\n\n"));
  EXPECT_MENTIONS(msg, "images.txt: image 5 (v01.png): camera 99 is not in cameras.txt");
  // A damaged quaternion and a duplicate id.
  msg = err(small_scene("colmap_bad_quat", "", "1 2 0 0 0 0 0 1 1 v00.png\n\n"));
  EXPECT_MENTIONS(msg, "images.txt: line 1 (image 1): qvec is not a unit quaternion");
  msg = err(small_scene("colmap_dup", "1 PINHOLE 16 12 20 22 8 6\n1 PINHOLE 16 12 20 22 8 6\n"));
  EXPECT_MENTIONS(msg, "cameras.txt: camera 1: the id appears more than once");

  const auto scene = small_scene("colmap_bad_point");
  write_text(scene / "sparse/0/points3D.txt", "7 0.5 1.5 2.5 255 0 51 0.25 1\n");
  EXPECT_MENTIONS(err(scene), "points3D.txt: line 1: expected POINT3D_ID X Y Z R G B ERROR");
  write_text(scene / "sparse/0/points3D.txt", "7 0.5 1.5 2.5 256 0 51 0.25\n");
  EXPECT_MENTIONS(err(scene), "points3D.txt: line 1 (point 7): RGB: 256 is above 255");
}

TEST(Colmap, MissingImagesAreExplained) {
  const auto scene = small_scene("colmap_missing");
  fs::rename(scene / "images/v03.png", scene / "images/V03.PNG");
  fs::rename(scene / "images/v05.png", scene / "images/v05.jpg");
  fs::remove(scene / "images/v07.png");
  const std::string msg = error_of([&] { load_colmap(scene.string(), LoadOptions{}); });
  EXPECT_MENTIONS(msg,
                  "images.txt: image 4 (v03.png): images/v03.png not found; "
                  "images/V03.PNG exists (case differs) (3 of 10 images are missing)");
  fs::rename(scene / "images/V03.PNG", scene / "images/v03.png");
  EXPECT_MENTIONS(error_of([&] { load_colmap(scene.string(), LoadOptions{}); }),
                  "images/v05.png not found; images/v05.jpg exists (extension differs)");
}

TEST(Colmap, ImageSizeMustMatchItsCamera) {
  const auto scene = small_scene("colmap_size", "1 PINHOLE 16 14 20 22 8 7\n");
  const std::string msg = error_of([&] { load_colmap(scene.string(), LoadOptions{}); });
  // The first training image (sorted by name; v00 is held out) is the first reported.
  EXPECT_MENTIONS(msg, "images.txt: image 2 (v01.png): ");
  EXPECT_MENTIONS(msg, "v01.png is 16x12 but camera 1 in ");
  EXPECT_MENTIONS(msg, "is 16x14");
}

TEST(Colmap, MissingModelListsWhatWasLookedFor) {
  const auto dir = test::temp_dir("colmap_none");
  EXPECT_MENTIONS(error_of([&] { load_colmap(dir.string(), LoadOptions{}); }),
                  "sparse/0/cameras.{bin,txt}");
  const auto r = test::run_splat("train " + dir.string() + " --out " + (dir / "o").string());
  EXPECT_NE(r.exit_code, 0);
  for (const char* what : {"transforms_train.json", "transforms.json", "sparse/0"}) {
    EXPECT_MENTIONS(r.output, what);
  }
}

// ---- training on a real capture ------------------------------------------------------------

TEST(ColmapSlow, ShortTrainingOnFigurineImprovesPsnr) {
  SPLAT_REQUIRE_SHARED("data/figurine");
  const Dataset data = load_colmap(figurine().string(), downscaled(8));
  const Config cfg = test::short_cpu_training(150);  // model.init = auto: the sparse points
  auto backend = make_backend(cfg.backend);
  Trainer t(cfg, data, *backend);
  t.initialize();
  EXPECT_EQ(backend->num_splats(), 1443u);
  const RasterSettings rs = final_raster_settings(cfg);
  const double before = evaluate(*backend, data.test, rs, "").mean_psnr;
  t.train(nullptr);
  const double after = evaluate(*backend, data.test, rs, "").mean_psnr;
  // Measured: 7.3 -> 14.4 dB (2 cores, about 5 s). Broken poses or intrinsics would leave the
  // points where the images do not see them, and PSNR would barely move.
  EXPECT_GT(after, before + 4.0) << "PSNR " << before << " -> " << after;
  EXPECT_GT(after, 12.0);
}

}  // namespace
}  // namespace splat
