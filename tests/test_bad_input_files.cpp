// Bad model, checkpoint and config files, one case per defect: each read fails with an error that
// names the file and the field, section or line (never a crash, a hang or an allocation of the
// size a corrupt count asks for).
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <sstream>

#include "bad_input_util.h"
#include "io/checkpoint.h"
#include "io/file_util.h"
#include "io/image_io.h"
#include "io/ply.h"
#include "test_util.h"
#include "train/config.h"

namespace splat {
namespace {

namespace fs = std::filesystem;

struct FileCase {
  std::string name;
  std::function<std::string(const fs::path& dir)> make;  // writes the bad file, returns its path
  std::vector<std::string> expect;                       // "{path}" stands for the file's path
};

// gtest prints a failing case by its name rather than its bytes.
void PrintTo(const FileCase& c, std::ostream* os) {
  *os << c.name;
}

std::string name_of(const ::testing::TestParamInfo<FileCase>& info) {
  return info.param.name;
}

void expect_error(const std::string& msg,
                  const std::string& path,
                  const std::vector<std::string>& parts) {
  for (std::string p : parts) {
    if (p == "{path}") p = path;
    EXPECT_MENTIONS(msg, p);
  }
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

// Paths every reader must refuse without reading: a device that never ends, a directory, a FIFO
// (opening it would block), a symlink loop and nothing at all.
std::string dev_zero(const fs::path&) {
  return "/dev/zero";
}
std::string a_directory(const fs::path& dir) {
  fs::create_directories(dir / "d.x");
  return (dir / "d.x").string();
}
std::string a_fifo(const fs::path& dir) {
  const fs::path p = dir / "fifo.x";
  mkfifo(p.c_str(), 0600);
  return p.string();
}
std::string a_symlink_loop(const fs::path& dir) {
  fs::create_symlink(dir / "loop_b.x", dir / "loop_a.x");
  fs::create_symlink(dir / "loop_a.x", dir / "loop_b.x");
  return (dir / "loop_a.x").string();
}
std::string nothing(const fs::path& dir) {
  return (dir / "absent.x").string();
}

// ---- PLY -------------------------------------------------------------------------------------

const char* kPlyProps =
    "property float x\nproperty float y\nproperty float z\nproperty float f_dc_0\n"
    "property float f_dc_1\nproperty float f_dc_2\nproperty float opacity\nproperty float scale_0\n"
    "property float scale_1\nproperty float scale_2\nproperty float rot_0\nproperty float rot_1\n"
    "property float rot_2\nproperty float rot_3\n";

std::function<std::string(const fs::path&)> ply_text(const std::string& text) {
  return [text](const fs::path& dir) {
    test::write_text(dir / "m.ply", text);
    return (dir / "m.ply").string();
  };
}

std::string ascii_ply(const std::string& rows, int count = 1) {
  return "ply\nformat ascii 1.0\nelement vertex " + std::to_string(count) + "\n" + kPlyProps +
         "end_header\n" + rows;
}

std::string binary_ply(const std::vector<float>& values, std::size_t count) {
  std::string s = "ply\nformat binary_little_endian 1.0\nelement vertex " + std::to_string(count) +
                  "\n" + kPlyProps + "end_header\n";
  s.append(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float));
  return s;
}

std::vector<float> one_row(float first = 0) {
  return {first, 0, 0, 0, 0, 0, 0, -2, -2, -2, 1, 0, 0, 0};
}

const std::vector<FileCase> kPlyCases = {
    {"NotPly", ply_text("hello\n"), {"{path}", "not a PLY file"}},
    {"EmptyFile", ply_text(""), {"{path}", "not a PLY file"}},
    {"BigEndian",
     ply_text("ply\nformat binary_big_endian 1.0\nelement vertex 1\nend_header\n"),
     {"{path}", "format"}},
    {"NoFormatLine",
     ply_text("ply\nelement vertex 1\nproperty float x\nend_header\n"),
     {"{path}", "no format line"}},
    {"NoVertexElement",
     ply_text("ply\nformat ascii 1.0\nend_header\n"),
     {"{path}", "no vertex element"}},
    {"ElementBeforeVertex",
     ply_text("ply\nformat ascii 1.0\nelement face 1\nend_header\n"),
     {"{path}", "element face"}},
    {"MissingRotation",
     ply_text("ply\nformat ascii 1.0\nelement vertex 1\nproperty float x\nproperty float "
              "y\nproperty float z\nend_header\n0 0 0\n"),
     {"{path}", "f_dc_0"}},
    {"NanInAscii",
     ply_text(ascii_ply("0 0 0 0 0 0 0 nan 0 0 1 0 0 0\n")),
     {"{path}", "vertex 0", "scale_0"}},
    {"InfInAscii",
     ply_text(ascii_ply("0 0 0 0 0 0 inf 0 0 0 1 0 0 0\n")),
     {"{path}", "vertex 0", "opacity"}},
    {"NotANumberInAscii",
     ply_text(ascii_ply("0 0 zero 0 0 0 0 0 0 0 1 0 0 0\n")),
     {"{path}", "vertex 0", "z"}},
    {"TooFewValuesInAscii", ply_text(ascii_ply("0 0 0 0 0 0 0 0 0 0 1 0 0\n")), {"{path}"}},
    {"InfInBinary",
     [](const fs::path& dir) {
       test::write_text(dir / "m.ply",
                        binary_ply(one_row(std::numeric_limits<float>::infinity()), 1));
       return (dir / "m.ply").string();
     },
     {"{path}", "vertex 0", "x"}},
    {"TruncatedBinary",
     [](const fs::path& dir) {
       std::vector<float> rows;
       for (int i = 0; i < 3; ++i) {
         const std::vector<float> row = one_row();
         rows.insert(rows.end(), row.begin(), row.end());
       }
       test::write_text(dir / "m.ply", binary_ply(rows, 10));
       return (dir / "m.ply").string();
     },
     {"{path}", "truncated"}},
    {"HugeVertexCount",
     [](const fs::path& dir) {
       test::write_text(dir / "m.ply", binary_ply(one_row(), 4'000'000'000ull));
       return (dir / "m.ply").string();
     },
     {"{path}", "truncated"}},
    {"HeaderLineTooLong",
     ply_text("ply\nformat ascii 1.0\ncomment " + std::string(100000, 'x') + "\n"),
     {"{path}", "too long"}},
    {"OddRestCount",
     ply_text("ply\nformat ascii 1.0\nelement vertex 1\n" + std::string(kPlyProps) +
              "property float f_rest_0\nend_header\n0 0 0 0 0 0 0 0 0 0 1 0 0 0 0\n"),
     {"{path}", "f_rest"}},
    {"DevZero", dev_zero, {"/dev/zero", "not a regular file"}},
    {"Directory", a_directory, {"{path}", "a directory"}},
    {"Fifo", a_fifo, {"{path}", "not a regular file"}},
    {"SymlinkLoop", a_symlink_loop, {"{path}", "symbolic links"}},
    {"Missing", nothing, {"{path}", "no such"}},
};

class BadInputPly : public ::testing::TestWithParam<FileCase> {};

TEST_P(BadInputPly, NamesFileAndField) {
  const auto dir = test::temp_dir("bad_ply_" + GetParam().name);
  const std::string path = GetParam().make(dir);
  expect_error(test::error_of([&] { read_ply(path); }), path, GetParam().expect);
}

INSTANTIATE_TEST_SUITE_P(Cases, BadInputPly, ::testing::ValuesIn(kPlyCases), name_of);

// ---- checkpoints -----------------------------------------------------------------------------

Checkpoint small_checkpoint() {
  Checkpoint c;
  c.iteration = 10;
  c.params.sh_degree = 0;
  c.params.resize(3);
  c.params.quats = {1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0};
  c.adam_m = c.adam_v = c.params;
  c.rng_state = {1, 2, 3, 4};
  c.view_order = {2, 0, 1};
  c.view_pos = 1;
  c.config_toml = "[train]\niterations = 20\n";
  c.run_id = "0123456789abcdef";
  return c;
}

std::string write_small_checkpoint(const fs::path& dir) {
  const std::string path = (dir / "c.ckpt").string();
  write_checkpoint(path, small_checkpoint());
  return path;
}

// Rewrites the bytes of a valid checkpoint: f(bytes).
std::function<std::string(const fs::path&)> patched(std::function<void(std::string&)> f) {
  return [f](const fs::path& dir) {
    const std::string path = write_small_checkpoint(dir);
    std::string bytes = slurp(path);
    f(bytes);
    test::write_text(path, bytes);
    return path;
  };
}

// The first float of a section's data: after its name, u32 type, u64 count and u64 size.
std::size_t section_data(const std::string& bytes, const std::string& name) {
  return bytes.find(name) + name.size() + 4 + 8 + 8;
}

void put_float(std::string& bytes, std::size_t at, float v) {
  std::memcpy(&bytes[at], &v, sizeof v);
}

// A valid checkpoint changed in memory must be refused by the writer, naming the section.
std::function<std::string(const fs::path&)> written(std::function<void(Checkpoint&)> edit) {
  return [edit](const fs::path& dir) {
    Checkpoint c = small_checkpoint();
    edit(c);
    const std::string path = (dir / "w.ckpt").string();
    write_checkpoint(path, c);
    return path;
  };
}

const std::vector<FileCase> kCheckpointCases = {
    {"BadMagic", patched([](std::string& b) { b[0] = 'X'; }), {"{path}", "magic"}},
    {"FutureVersion", patched([](std::string& b) { b[8] = 99; }), {"{path}", "version", "99"}},
    {"Truncated", patched([](std::string& b) { b.resize(b.size() / 2); }), {"{path}", "truncated"}},
    {"TruncatedInMagic",
     patched([](std::string& b) { b.resize(4); }),
     {"{path}", "magic", "truncated"}},
    {"TrailingBytes",
     patched([](std::string& b) { b += "junk"; }),
     {"{path}", "4 unexpected bytes"}},
    {"SectionRenamed",
     patched([](std::string& b) { b[b.find("iteration")] = 'I'; }),
     {"{path}", "section iteration", "found section 'Iteration'"}},
    {"SizeMismatch",
     patched([](std::string& b) { b[b.find("view_pos") + 8 + 4] = 7; }),
     {"{path}", "section view_pos"}},
    {"NanParameter",
     patched([](std::string& b) {
       put_float(b, section_data(b, "params.means"), std::numeric_limits<float>::quiet_NaN());
     }),
     {"{path}", "section params.means", "splat 0", "nan"}},
    {"InfParameter",
     patched([](std::string& b) {
       put_float(b, section_data(b, "params.raw_opacity") + 8,
                 std::numeric_limits<float>::infinity());
     }),
     {"{path}", "section params.raw_opacity", "splat 2", "inf"}},
    {"WriterRefusesInf",
     written([](Checkpoint& c) { c.params.sh[4] = -std::numeric_limits<float>::infinity(); }),
     {"w.ckpt", "section params.sh", "splat 1"}},
    {"WriterRefusesShortGroup",
     written([](Checkpoint& c) { c.params.quats.pop_back(); }),
     {"w.ckpt", "params.quats"}},
    {"WriterRefusesViewPos",
     written([](Checkpoint& c) { c.view_pos = 9; }),
     {"w.ckpt", "view_pos"}},
    {"WriterRefusesNegativeIteration",
     written([](Checkpoint& c) { c.iteration = -1; }),
     {"w.ckpt", "iteration"}},
    {"NotACheckpoint", ply_text("ply\nformat ascii 1.0\n"), {"m.ply", "not a splat checkpoint"}},
    {"DevZero", dev_zero, {"/dev/zero", "not a regular file"}},
    {"Directory", a_directory, {"{path}", "a directory"}},
    {"Fifo", a_fifo, {"{path}", "not a regular file"}},
    {"Missing", nothing, {"{path}", "no such"}},
};

class BadInputCheckpoint : public ::testing::TestWithParam<FileCase> {};

TEST_P(BadInputCheckpoint, NamesFileAndSection) {
  const auto dir = test::temp_dir("bad_ckpt_" + GetParam().name);
  std::string path;  // stays empty when the writer refuses the checkpoint
  const std::string msg = test::error_of([&] {
    path = GetParam().make(dir);
    read_checkpoint(path);
  });
  expect_error(msg, path, GetParam().expect);
}

INSTANTIATE_TEST_SUITE_P(Cases, BadInputCheckpoint, ::testing::ValuesIn(kCheckpointCases), name_of);

TEST(BadInputCheckpointFormat, RunIdSurvivesTheRoundTrip) {
  const auto dir = test::temp_dir("bad_ckpt_run_id");
  EXPECT_EQ(read_checkpoint(write_small_checkpoint(dir)).run_id, "0123456789abcdef");
}

// ---- configs ---------------------------------------------------------------------------------

std::function<std::string(const fs::path&)> toml(const std::string& text) {
  return [text](const fs::path& dir) {
    test::write_text(dir / "c.toml", text);
    return (dir / "c.toml").string();
  };
}

const std::vector<FileCase> kConfigCases = {
    {"UnknownSection", toml("[trian]\niterations = 5\n"), {"{path}", "trian"}},
    {"UnknownKey", toml("[train]\niteratons = 5\n"), {"{path}", "iteratons", "iterations"}},
    {"WrongType", toml("[train]\niterations = \"many\"\n"), {"{path}", "train.iterations"}},
    {"OutOfRange", toml("[data]\ndownscale = 0\n"), {"{path}", "data.downscale"}},
    {"InitPointsHuge",
     toml("[model]\ninit = \"random\"\ninit_points = 4000000000\n"),
     {"{path}", "model.init_points", "100000000"}},
    {"CapMaxHuge", toml("[densify]\ncap_max = 4000000000\n"), {"{path}", "densify.cap_max"}},
    {"SyntaxError", toml("[train\niterations = 5\n"), {"{path}", "TOML syntax error"}},
    {"OverflowingNumber", toml("[train]\nlr_means = 1e999\n"), {"{path}", ":2:", "1e999"}},
    {"NanValue", toml("[train]\nssim_lambda = nan\n"), {"{path}", "train.ssim_lambda"}},
    {"NegativeIterations", toml("[train]\niterations = -5\n"), {"{path}", "train.iterations"}},
    {"SectionAsValue", toml("data = 3\n"), {"{path}", "data"}},
    {"BackgroundTooShort", toml("[data]\nbackground = [1, 1]\n"), {"{path}", "data.background"}},
    {"EnumUnknown", toml("[backend]\ntype = \"gpu\"\n"), {"{path}", "backend.type", "cuda"}},
    {"Conflict",
     toml("[backend]\ntype = \"cpu\"\npipelining = \"depth2\"\n"),
     {"backend.type", "backend.pipelining"}},
    {"DuplicateKey", toml("[train]\nseed = 1\nseed = 2\n"), {"{path}", "seed"}},
    {"TooLarge", toml(std::string(2 << 20, '#')), {"{path}", "bytes is more than a config file"}},
    {"BinaryGarbage", toml(std::string("\x00\xff\xfe\x01", 4)), {"{path}"}},
    {"DevZero", dev_zero, {"/dev/zero", "not a regular file"}},
    {"Directory", a_directory, {"{path}", "a directory"}},
    {"Fifo", a_fifo, {"{path}", "not a regular file"}},
    {"SymlinkLoop", a_symlink_loop, {"{path}", "symbolic links"}},
    {"Missing", nothing, {"{path}", "no such config file"}},
};

class BadInputConfig : public ::testing::TestWithParam<FileCase> {};

TEST_P(BadInputConfig, NamesFileAndKey) {
  const auto dir = test::temp_dir("bad_config_" + GetParam().name);
  const std::string path = GetParam().make(dir);
  const std::string msg = test::error_of([&] {
    Config cfg;
    apply_config_file(cfg, path);
    cfg.validate();
  });
  expect_error(msg, path, GetParam().expect);
}

INSTANTIATE_TEST_SUITE_P(Cases, BadInputConfig, ::testing::ValuesIn(kConfigCases), name_of);

struct SetCase {
  std::string name, assignment;
  std::vector<std::string> expect;
};

void PrintTo(const SetCase& c, std::ostream* os) {
  *os << c.name;
}

const std::vector<SetCase> kSetCases = {
    {"NoEquals", "train.iterations", {"section.key=value"}},
    {"NoSection", "iterations=5", {"section.key=value"}},
    {"UnknownSection", "trian.iterations=5", {"trian"}},
    {"UnknownKey", "train.iters=5", {"train.iters"}},
    {"WrongType", "train.iterations=fast", {"train.iterations"}},
    {"InitPointsHuge", "model.init_points=4e9", {"model.init_points"}},
    {"InitPointsHugeInteger", "model.init_points=4000000000", {"model.init_points", "100000000"}},
    {"OverflowingNumber", "train.lr_means=1e999", {"train.lr_means"}},
    {"MultiLine", "train.seed=1\n2", {"one line"}},
};

class BadInputSet : public ::testing::TestWithParam<SetCase> {};

TEST_P(BadInputSet, NamesTheAssignment) {
  const std::string msg = test::error_of([&] {
    Config cfg;
    apply_override(cfg, GetParam().assignment);
    cfg.validate();
  });
  for (const std::string& p : GetParam().expect) EXPECT_MENTIONS(msg, p);
  EXPECT_MENTIONS(msg, "--set");
}

INSTANTIATE_TEST_SUITE_P(Cases,
                         BadInputSet,
                         ::testing::ValuesIn(kSetCases),
                         [](const ::testing::TestParamInfo<SetCase>& info) {
                           return info.param.name;
                         });

// ---- images ---------------------------------------------------------------------------------

std::function<std::string(const fs::path&)> image_bytes(const std::string& bytes) {
  return [bytes](const fs::path& dir) {
    test::write_text(dir / "i.img", bytes);
    return (dir / "i.img").string();
  };
}

// A PNG signature and an IHDR chunk declaring w x h (the CRC is not checked before the size).
std::string png_header(std::uint32_t w, std::uint32_t h) {
  std::string s = "\x89PNG\r\n\x1a\n";
  const auto be32 = [&](std::uint32_t v) {
    for (int k = 3; k >= 0; --k) s += char((v >> (8 * k)) & 0xff);
  };
  be32(13);
  s += "IHDR";
  be32(w);
  be32(h);
  s += std::string("\x08\x02\x00\x00\x00", 5);
  be32(0);
  return s;
}

const std::vector<FileCase> kImageCases = {
    {"Garbage", image_bytes("hello, world"), {"{path}", "not a PNG, JPEG or WebP"}},
    {"Empty", image_bytes(""), {"{path}"}},
    {"PngSignatureOnly", image_bytes("\x89PNG\r\n\x1a\n"), {"{path}"}},
    {"PngHugeDimensions", image_bytes(png_header(1u << 20, 1u << 20)), {"{path}"}},
    {"PngZeroWidth", image_bytes(png_header(0, 16)), {"{path}"}},
    {"JpegHeaderOnly", image_bytes("\xff\xd8\xff\xe0\x00\x10JFIF"), {"{path}"}},
    {"WebpHeaderOnly", image_bytes("RIFF\x10\x00\x00\x00WEBPVP8 "), {"{path}"}},
    {"DevZero", dev_zero, {"/dev/zero", "not a regular file"}},
    {"Directory", a_directory, {"{path}", "a directory"}},
    {"Fifo", a_fifo, {"{path}", "not a regular file"}},
    {"SymlinkLoop", a_symlink_loop, {"{path}", "symbolic links"}},
    {"Missing", nothing, {"{path}", "cannot open"}},
};

class BadInputImage : public ::testing::TestWithParam<FileCase> {};

TEST_P(BadInputImage, NamesTheFile) {
  const auto dir = test::temp_dir("bad_image_" + GetParam().name);
  const std::string path = GetParam().make(dir);
  expect_error(test::error_of([&] { read_image(path); }), path, GetParam().expect);
}

INSTANTIATE_TEST_SUITE_P(Cases, BadInputImage, ::testing::ValuesIn(kImageCases), name_of);

// ---- outputs ----------------------------------------------------------------------------------

// A write that fails part way (a full disk: the stream goes bad) is an error naming the file, and
// the previous file stays as it was, with no temporary left beside it.
TEST(BadInputOutput, FailedWriteKeepsThePreviousFile) {
  const auto dir = test::temp_dir("bad_output_full");
  const std::string path = (dir / "metrics.json").string();
  test::write_text(path, "previous");
  const std::string msg = test::error_of([&] {
    write_atomically(path, [](std::ofstream& out) {
      out << "{\"psnr\": ";
      out.setstate(std::ios::badbit);
    });
  });
  test::expect_contains(msg, {path, "disk full"});
  EXPECT_EQ(slurp(path), "previous");
  EXPECT_FALSE(fs::exists(path + ".tmp"));
}

TEST(BadInputOutput, UnwritableDirectoryIsNamed) {
  const std::string msg = test::error_of([] {
    write_atomically("/proc/splat_no_such/metrics.json", [](std::ofstream& out) { out << "{}"; });
  });
  test::expect_contains(msg, {"/proc/splat_no_such/metrics.json", "cannot create"});
}

}  // namespace
}  // namespace splat
