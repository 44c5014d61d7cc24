#include "bad_input_util.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

#include "core/image.h"
#include "io/image_io.h"
#include "test_util.h"

namespace splat::test {

namespace fs = std::filesystem;
using nlohmann::json;

void write_text(const fs::path& p, const std::string& s) {
  if (p.has_parent_path()) fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << s;
}

void write_rgb_png(const fs::path& p, int w, int h) {
  Image img(w, h, 3);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int c = 0; c < 3; ++c)
        img.data[(std::size_t(y) * w + x) * 3 + c] = float((x + y + c) % 7) / 7.0f;
  fs::create_directories(p.parent_path());
  write_png(p.string(), img);
}

json c2w_at(double z) {
  return json::array({{1, 0, 0, 0}, {0, 1, 0, 0}, {0, 0, 1, z}, {0, 0, 0, 1}});
}

void write_transforms_scene(const fs::path& dir, const std::function<void(json&)>& edit) {
  json j = {{"fl_x", 20.0}, {"fl_y", 20.0}, {"cx", 8.0}, {"cy", 6.0}, {"w", 16}, {"h", 12}};
  j["frames"] = json::array();
  for (int i = 0; i < 4; ++i) {
    write_rgb_png(dir / "images" / ("f" + std::to_string(i) + ".png"), 16, 12);
    j["frames"].push_back({{"file_path", "images/f" + std::to_string(i) + ".png"},
                           {"transform_matrix", c2w_at(3 + i)}});
  }
  if (edit) edit(j);
  write_text(dir / "transforms.json", j.dump(1));
}

void write_blender_scene(const fs::path& dir, const std::function<void(json&)>& edit) {
  for (const char* split : {"train", "test"}) {
    json j = {{"camera_angle_x", 0.7}, {"frames", json::array()}};
    const int n = std::string(split) == "train" ? 3 : 1;
    for (int i = 0; i < n; ++i) {
      const std::string name = std::string(split) + "/r_" + std::to_string(i);
      write_rgb_png(dir / (name + ".png"), 16, 16);
      j["frames"].push_back({{"file_path", "./" + name}, {"transform_matrix", c2w_at(3 + i)}});
    }
    if (edit && std::string(split) == "train") edit(j);
    write_text(dir / ("transforms_" + std::string(split) + ".json"), j.dump(1));
  }
}

ColmapModel small_colmap_model() {
  ColmapModel m;
  ColmapCamera c;
  c.id = 1;
  c.model_id = 1;  // PINHOLE
  c.width = 16;
  c.height = 12;
  c.params = {20, 20, 8, 6};
  m.cameras.push_back(c);
  for (std::uint32_t i = 0; i < 4; ++i) {
    ColmapImage im;
    im.id = i + 1;
    im.qvec = {1, 0, 0, 0};
    im.tvec = {0, 0, 3.0 + i};
    im.camera_id = 1;
    im.name = "im" + std::to_string(i) + ".png";
    m.images.push_back(im);
  }
  for (std::uint64_t i = 0; i < 5; ++i) {
    ColmapPoint p;
    p.id = i + 1;
    p.xyz = {0.1 * double(i), -0.1 * double(i), 0.05 * double(i)};
    p.rgb = {100, 150, 200};
    p.error = 0.5;
    m.points.push_back(p);
  }
  return m;
}

namespace {

template <class T>
void put(std::string& out, T v) {
  char b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));
  out.append(b, sizeof(T));
}

void write_binary(const fs::path& dir, const ColmapModel& m) {
  std::string cams, ims, pts;
  put<std::uint64_t>(cams, m.cameras.size());
  for (const ColmapCamera& c : m.cameras) {
    put<std::uint32_t>(cams, c.id);
    put<std::int32_t>(cams, c.model_id);
    put<std::uint64_t>(cams, c.width);
    put<std::uint64_t>(cams, c.height);
    for (double p : c.params) put<double>(cams, p);
  }
  put<std::uint64_t>(ims, m.images.size());
  for (const ColmapImage& im : m.images) {
    put<std::uint32_t>(ims, im.id);
    for (double q : im.qvec) put<double>(ims, q);
    for (double t : im.tvec) put<double>(ims, t);
    put<std::uint32_t>(ims, im.camera_id);
    ims += im.name;
    ims += '\0';
    put<std::uint64_t>(ims, 0);  // no 2D points
  }
  put<std::uint64_t>(pts, m.points.size());
  for (const ColmapPoint& p : m.points) {
    put<std::uint64_t>(pts, p.id);
    for (double x : p.xyz) put<double>(pts, x);
    for (std::uint8_t c : p.rgb) put<std::uint8_t>(pts, c);
    put<double>(pts, p.error);
    put<std::uint64_t>(pts, 0);  // no track
  }
  write_text(dir / "cameras.bin", cams);
  write_text(dir / "images.bin", ims);
  write_text(dir / "points3D.bin", pts);
}

void write_txt(const fs::path& dir, const ColmapModel& m) {
  std::ostringstream cams, ims, pts;
  for (std::ostringstream* s : {&cams, &ims, &pts}) s->precision(17);
  cams << "# CAMERA_ID MODEL WIDTH HEIGHT PARAMS[]\n";
  for (const ColmapCamera& c : m.cameras) {
    cams << c.id << " " << colmap_camera_model(c.model_id)->name << " " << c.width << " "
         << c.height;
    for (double p : c.params) cams << " " << p;
    cams << "\n";
  }
  for (const ColmapImage& im : m.images) {
    ims << im.id;
    for (double q : im.qvec) ims << " " << q;
    for (double t : im.tvec) ims << " " << t;
    ims << " " << im.camera_id << " " << im.name << "\n\n";
  }
  for (const ColmapPoint& p : m.points)
    pts << p.id << " " << p.xyz[0] << " " << p.xyz[1] << " " << p.xyz[2] << " " << int(p.rgb[0])
        << " " << int(p.rgb[1]) << " " << int(p.rgb[2]) << " " << p.error << "\n";
  write_text(dir / "cameras.txt", cams.str());
  write_text(dir / "images.txt", ims.str());
  write_text(dir / "points3D.txt", pts.str());
}

}  // namespace

void write_colmap_scene(const fs::path& dir, const ColmapModel& m, ColmapForm form) {
  const fs::path sparse = dir / "sparse" / "0";
  fs::create_directories(sparse);
  if (form == ColmapForm::Binary)
    write_binary(sparse, m);
  else
    write_txt(sparse, m);
  std::map<std::uint32_t, const ColmapCamera*> cams;
  for (const ColmapCamera& c : m.cameras) cams[c.id] = &c;
  for (const ColmapImage& im : m.images) {
    const auto it = cams.find(im.camera_id);
    const int w = it != cams.end() && it->second->width > 0 && it->second->width < 4096
                      ? int(it->second->width)
                      : 16;
    const int h = it != cams.end() && it->second->height > 0 && it->second->height < 4096
                      ? int(it->second->height)
                      : 12;
    if (!im.name.empty() && !fs::exists(dir / "images" / im.name))
      write_rgb_png(dir / "images" / im.name, w, h);
  }
}

void expect_error(const std::string& msg, const std::vector<std::string>& parts) {
  for (const std::string& p : parts) EXPECT_MENTIONS(msg, p);
}

}  // namespace splat::test
