// GPU rasterization (forward and backward) against cpu::rasterize_fwd / cpu::rasterize_bwd on
// random scenes projected and binned by the CPU stages, so only the rasterizer differs.
//
// Forward: the GPU evaluates the Gaussian exponent with the CPU's float operations in the CPU's
// order, so against the float reference every pixel agrees to float rounding of the blend sums,
// except where an exp that differs by an ulp flips a threshold (alpha_min, the T stop): such
// pixels are counted, and must stay a tiny fraction. `last` must match the CPU's exactly there too.
// Backward: float atomics reorder the per-splat sums, and T is recovered by division from
// T_final = 1 - alpha_out (up to 6e-8 / T_final relative), so gradients are compared with
// relative L2, cosine and a max error scaled to the largest gradient.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <iostream>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "cpu/intersect_cpu.h"
#include "cpu/project_cpu.h"
#include "cpu/rasterize_cpu.h"
#include "cuda/buffer.h"
#include "cuda/intersect_cuda.h"
#include "cuda/rasterize_cuda.h"
#include "engine/settings.h"
#include "engine/tiles.h"
#include "parity_util.h"

namespace splat {
namespace {

struct Case {
  const char* name;
  int n, width, height;
  std::uint32_t seed;
  bool opaque;  // opacities 0.95 .. 0.999: most pixels hit the T <= 1e-4 stop
  std::array<float, 3> background;
  bool faint = false;            // opacities 0.0025 .. 0.018: pixels blend hundreds of splats
  int side = tiles::kLargeTile;  // of the tiles (both_sides)
};

const Case kCases[] = {
    {"n300_64x48", 300, 64, 48, 11, false, {1.0f, 1.0f, 1.0f}},
    {"n1000_97x61", 1000, 97, 61, 12, false, {0.1f, 0.6f, 0.3f}},
    {"n2000_160x120", 2000, 160, 120, 13, false, {0.0f, 0.0f, 0.0f}},
    {"n3000_250x170", 3000, 250, 170, 14, false, {0.5f, 0.25f, 0.75f}},
    {"opaque_n3000_97x61", 3000, 97, 61, 15, true, {1.0f, 1.0f, 1.0f}},
    {"opaque_n4000_160x120", 4000, 160, 120, 16, true, {0.2f, 0.4f, 0.9f}},
    // Lists of thousands of entries that pixels blend deep into: the backward's segments
    // (cuda::segment_length) and the forward's boundary records.
    {"faint_n6000_64x48", 6000, 64, 48, 17, false, {0.3f, 0.3f, 0.3f}, true},
};

// Every case at both tile sides (engine/tiles.h): the kernels are built for each.
std::vector<Case> both_sides() {
  std::vector<Case> out;
  for (const int side : {tiles::kLargeTile, tiles::kSmallTile})
    for (Case c : kCases) {
      c.side = side;
      out.push_back(c);
    }
  return out;
}

// CPU-side inputs of the rasterizer: projected splats (float, as the GPU gets them) and the
// sorted intersections.
struct Inputs {
  int width = 0, height = 0;
  RasterSettings rs;
  cpu::Projected<float> proj;
  cpu::Intersections isect;
};

Inputs make_inputs(const Case& c) {
  test::Scene s = test::random_scene(c.n, c.width, c.height, c.seed);
  if (c.opaque || c.faint) {
    std::mt19937 rng(c.seed);
    // sigmoid: 0.953 .. 0.999, or 0.0025 .. 0.018
    std::uniform_real_distribution<float> raw(c.opaque ? 3.0f : -6.0f, c.opaque ? 7.0f : -4.0f);
    for (float& r : s.gaussians.raw_opacity) r = raw(rng);
  }
  Inputs in;
  in.width = c.width;
  in.height = c.height;
  in.rs.background = c.background;
  in.proj = cpu::project_fwd<float>(s.gaussians, s.camera, in.rs);
  in.isect = cpu::intersect_tiles<float>(in.proj.means2d, in.proj.radii, in.proj.depths,
                                         in.proj.conics, in.proj.opacities,
                                         cpu::TileGrid::with_side(c.width, c.height, c.side));
  return in;
}

cpu::Projected<double> to_double(const cpu::Projected<float>& p) {
  cpu::Projected<double> d;
  d.means2d.assign(p.means2d.begin(), p.means2d.end());
  d.depths.assign(p.depths.begin(), p.depths.end());
  d.conics.assign(p.conics.begin(), p.conics.end());
  d.radii = p.radii;
  d.colors.assign(p.colors.begin(), p.colors.end());
  d.opacities.assign(p.opacities.begin(), p.opacities.end());
  return d;
}

// The inputs on the device.
struct DeviceInputs {
  cuda::DeviceBuffer<cuda::SplatRecord> records;
  cuda::DeviceBuffer<std::uint32_t> ids, ranges, order;
  cuda::RasterParams params;

  explicit DeviceInputs(const Inputs& in)
      : ids(test::to_device(in.isect.gaussian_from_isect)),
        ranges(test::to_device(in.isect.tile_ranges)) {
    const cpu::TileGrid grid = in.isect.grid;
    // The training step's block order (longest list first), as the renderer computes it.
    const std::size_t tiles = std::size_t(std::max(grid.count(), 1));
    order = test::poisoned<std::uint32_t>(tiles);
    cuda::DeviceBuffer<std::uint32_t> scratch(tiles * 3);
    cuda::DeviceBuffer<std::byte> temp(
        std::max<std::size_t>(cuda::tile_order_temp_bytes(grid.count()), 1));
    cuda::tile_order(grid.count(), ranges.data(), scratch.data(), {temp.data(), temp.size()},
                     order.data(), nullptr);
    SPLAT_CUDA_CHECK(cudaDeviceSynchronize());
    // The records intersect_count writes, built on the host.
    std::vector<cuda::SplatRecord> rec;
    for (std::size_t i = 0; i < in.proj.opacities.size(); ++i)
      rec.push_back(
          cuda::splat_record(&in.proj.conics[i * 3], in.proj.opacities[i], &in.proj.means2d[i * 2],
                             tiles::max_quad(in.proj.opacities[i]), &in.proj.colors[i * 3]));
    records = test::to_device(rec);
    params.width = in.width;
    params.height = in.height;
    params.grid = grid;
    for (int ch = 0; ch < 3; ++ch) params.background[ch] = in.rs.background[ch];
  }
  cuda::TileLists lists() const {
    return {ids.data(), ranges.data(), order.data(), records.data()};
  }
};

struct GpuForward {
  cuda::DeviceBuffer<float> image, alpha;
  cuda::DeviceBuffer<std::uint32_t> last;
  cuda::DeviceBuffer<float4> boundaries;
  cuda::RasterOut out() { return {image.data(), alpha.data(), last.data(), boundaries.data()}; }
  // What the backward reads: the forward's inputs d and these outputs.
  cuda::RasterState state(const DeviceInputs& d) { return {d.params, d.lists(), out()}; }
};

GpuForward gpu_forward(DeviceInputs& d, const Inputs& in) {
  const std::size_t pixels = std::size_t(in.width) * in.height;
  GpuForward f{test::poisoned<float>(pixels * 3), test::poisoned<float>(pixels),
               test::poisoned<std::uint32_t>(pixels),
               test::poisoned<float4>(cuda::boundary_count(in.width, in.height))};
  cuda::rasterize_fwd(d.params, d.lists(), f.out(), nullptr);
  SPLAT_CUDA_CHECK(cudaDeviceSynchronize());
  return f;
}

// cpu::blend_pixel's skip tests for one splat and pixel, in float: true if the pixel would blend
// it unless the T stop came first.
bool blendable(const cpu::Projected<float>& p, std::uint32_t g, float px, float py) {
  const float* cn = &p.conics[g * 3];
  const float dx = p.means2d[g * 2] - px, dy = p.means2d[g * 2 + 1] - py;
  const float power = -(0.5f * (cn[0] * dx * dx + cn[2] * dy * dy) + cn[1] * dx * dy);
  if (power > 0.0f || power < float(cpu::kMinPower)) return false;
  return std::min(config::alpha_max, p.opacities[g] * std::exp(power)) >= config::alpha_min;
}

// Per pixel, from the CPU float reference: one past the last blended intersection, and whether
// blending stopped at the T threshold (a blendable splat remains after `last`).
struct CpuLast {
  std::vector<std::uint32_t> last;
  std::size_t stopped = 0;
};

CpuLast cpu_last(const Inputs& in) {
  const cpu::TileGrid grid = in.isect.grid;
  CpuLast out;
  out.last.assign(std::size_t(in.width) * in.height, 0);
  for (int y = 0; y < in.height; ++y)
    for (int x = 0; x < in.width; ++x) {
      const std::uint32_t tile = std::uint32_t((y / grid.side) * grid.width + x / grid.side);
      const float px = float(x) + 0.5f, py = float(y) + 0.5f;
      std::uint32_t last = in.isect.tile_ranges[tile * 2];
      cpu::blend_pixel(in.proj, in.isect, tile, px, py, in.rs,
                       [&](const cpu::Contribution<float>&, std::uint32_t k) { last = k + 1; });
      out.last[std::size_t(y) * in.width + x] = last;
      for (std::uint32_t k = last; k < in.isect.tile_ranges[tile * 2 + 1]; ++k)
        if (blendable(in.proj, in.isect.gaussian_from_isect[k], px, py)) {
          ++out.stopped;
          break;
        }
    }
  return out;
}

double max_abs(const std::vector<double>& v) {
  double m = 0;
  for (double x : v) m = std::max(m, std::abs(x));
  return m;
}

std::vector<double> to_double(const std::vector<float>& v) {
  return {v.begin(), v.end()};
}

class RasterizeParity : public ::testing::TestWithParam<Case> {};

TEST_P(RasterizeParity, ForwardMatchesCpu) {
  const Case& c = GetParam();
  const Inputs in = make_inputs(c);
  ASSERT_FALSE(in.isect.keys.empty()) << c.name << ": the scene covers no tile";
  DeviceInputs d(in);
  GpuForward f = gpu_forward(d, in);
  const std::vector<float> image = f.image.download(), alpha = f.alpha.download();
  const std::vector<std::uint32_t> last = f.last.download();

  const cpu::RasterOut<float> ref32 =
      cpu::rasterize_fwd(in.proj, in.isect, in.width, in.height, in.rs);
  const CpuLast ref_last = cpu_last(in);
  const cpu::TileGrid grid = in.isect.grid;

  // Pixel by pixel against the float reference. A pixel either agrees to float rounding of its
  // blend sums (4e-6: ~100 blended terms of <= 1 at float epsilon, plus a 1-2 ulp exp) with the
  // same `last`, or it is a threshold flip. (Seen on an H200: at most 2.4e-7.)
  const std::size_t pixels = std::size_t(in.width) * in.height;
  std::size_t flips = 0, out_of_range = 0, non_finite = 0;
  double worst_agreeing = 0;
  for (int y = 0; y < in.height; ++y)
    for (int x = 0; x < in.width; ++x) {
      const std::size_t pix = std::size_t(y) * in.width + x;
      const std::uint32_t tile = std::uint32_t((y / grid.side) * grid.width + x / grid.side);
      if (last[pix] < in.isect.tile_ranges[tile * 2] ||
          last[pix] > in.isect.tile_ranges[tile * 2 + 1])
        ++out_of_range;
      double diff = std::abs(double(alpha[pix]) - ref32.alpha[pix]);
      for (int ch = 0; ch < 3; ++ch)
        diff = std::max(diff, std::abs(double(image[pix * 3 + ch]) - ref32.image[pix * 3 + ch]));
      if (!std::isfinite(diff)) {
        ++non_finite;
      } else if (diff > 4e-6 || last[pix] != ref_last.last[pix]) {
        ++flips;
      } else {
        worst_agreeing = std::max(worst_agreeing, diff);
      }
    }
  std::cout << "[ info     ] " << c.name << ": " << in.isect.keys.size() << " intersections, "
            << ref_last.stopped << " of " << pixels << " pixels stop at T <= 1e-4, " << flips
            << " threshold flips, worst agreeing pixel " << worst_agreeing << "\n";
  EXPECT_EQ(non_finite, 0u) << c.name << ": unwritten or non-finite pixels";
  EXPECT_EQ(out_of_range, 0u) << c.name << ": `last` outside its tile's range";
  // A flip needs an exp that differs by an ulp right at a threshold: ~1e-6 per pixel. A real bug
  // (pixel center, skip rule, stop rule, batch boundary) disagrees on many pixels.
  EXPECT_LE(flips, 2 + pixels / 2000)
      << c.name << ": pixels disagreeing with cpu::rasterize_fwd<float>";
  if (c.opaque) {
    EXPECT_GE(ref_last.stopped, pixels / 4)
        << c.name << ": the dense scene must exercise the T stop";
  }

  // Against the double reference on the same float inputs: float rounding (~1e-6) and the rare
  // flip, which moves one pixel by at most the stopped splat's a*T*(c - bg) <= ~0.02.
  const cpu::Projected<double> proj64 = to_double(in.proj);
  const cpu::RasterOut<double> ref64 =
      cpu::rasterize_fwd(proj64, in.isect, in.width, in.height, in.rs);
  const test::Tolerance tol{
      1e-4, 1.0 - 1e-8, 0.03,
      "float blending vs double, plus a rare threshold flip (<= 0.03 on one pixel)"};
  for (const auto& [what, got, want] :
       {std::tuple{"image", &image, &ref64.image}, std::tuple{"alpha", &alpha, &ref64.alpha}}) {
    const test::Agreement a = test::agreement(*got, *want);
    std::cout << "[ info     ] " << c.name << " " << what << " vs double: rel L2 " << a.rel_l2
              << ", max abs " << a.max_abs << "\n";
  }
  test::expect_agree(std::string(c.name) + " image", image, ref64.image, tol);
  test::expect_agree(std::string(c.name) + " alpha", alpha, ref64.alpha, tol);
}

// d loss / d projected for loss = sum(image * v_image) + sum(alpha * v_alpha), GPU (float, atomics)
// against cpu::rasterize_bwd<double> on the double-cast inputs.
void expect_backward_agrees(const Case& c, bool with_v_alpha) {
  const Inputs in = make_inputs(c);
  DeviceInputs d(in);
  GpuForward f = gpu_forward(d, in);
  const std::size_t pixels = std::size_t(in.width) * in.height, n = in.proj.size();
  const std::vector<float> v_image = test::random_vector(pixels * 3, c.seed + 100);
  const std::vector<float> v_alpha =
      with_v_alpha ? test::random_vector(pixels, c.seed + 200) : std::vector<float>{};
  cuda::DeviceBuffer<float> d_v_image = test::to_device(v_image),
                            d_v_alpha = test::to_device(v_alpha);
  // Accumulated into, so zeroed (rasterize_bwd's contract), not poisoned.
  cuda::DeviceBuffer<float> v_means2d(n * 2), v_conics(n * 3), v_colors(n * 3), v_opacities(n);
  for (auto* b : {&v_means2d, &v_conics, &v_colors, &v_opacities}) b->zero();
  const cuda::ProjectedGradPtrs v{v_means2d.data(), v_conics.data(), v_colors.data(),
                                  v_opacities.data()};
  cuda::rasterize_bwd(f.state(d), {d_v_image.data(), with_v_alpha ? d_v_alpha.data() : nullptr}, v,
                      nullptr);
  SPLAT_CUDA_CHECK(cudaDeviceSynchronize());

  // Pixels that blend past their tile's first segment boundary: the backward's later segments
  // start from the forward's record there.
  const cpu::TileGrid grid = in.isect.grid;
  const std::vector<std::uint32_t> last = f.last.download();
  std::size_t segmented = 0;
  for (int y = 0; y < in.height; ++y)
    for (int x = 0; x < in.width; ++x) {
      const std::uint32_t tile = std::uint32_t((y / grid.side) * grid.width + x / grid.side);
      const std::uint32_t start = in.isect.tile_ranges[tile * 2],
                          end = in.isect.tile_ranges[tile * 2 + 1];
      segmented += last[std::size_t(y) * in.width + x] > start + cuda::segment_length(end - start);
    }
  std::cout << "[ info     ] " << c.name << ": " << segmented
            << " pixels blend past a segment boundary\n";
  if (c.faint) {
    EXPECT_GT(segmented, pixels / 4) << c.name << ": the faint scene must exercise the segments";
  }

  const cpu::ProjectedGrad<double> ref =
      cpu::rasterize_bwd(to_double(in.proj), in.isect, in.width, in.height, in.rs,
                         to_double(v_image), to_double(v_alpha));
  // Dense scenes stop at T_final down to 1e-4, where recovering T from alpha_out = 1 - T in float
  // costs up to 6e-4 relative on that pixel's terms; elsewhere T_final is larger. Seen on an H200:
  // rel L2 <= 1.1e-4 (opaque), <= 8e-5 (others, which stop on up to a quarter of the pixels).
  const double rel_l2 = c.opaque ? 1e-3 : 3e-4;
  const char* why =
      c.opaque
          ? "float + reordered atomics; T recovered from 1 - alpha_out (<= 6e-4 rel at T ~ 1e-4)"
          : "float + reordered atomics; T recovered from 1 - alpha_out by division";
  auto check = [&](const char* what, const std::vector<float>& got,
                   const std::vector<double>& want) {
    ASSERT_GT(max_abs(want), 0.0) << c.name << " " << what << ": reference gradient is all zero";
    const test::Agreement a = test::agreement(got, want);
    std::cout << "[ info     ] " << c.name << " " << what << ": rel L2 " << a.rel_l2
              << ", 1 - cosine " << 1.0 - a.cosine << ", max abs " << a.max_abs << " of "
              << max_abs(want) << "\n";
    // Max error: a rare threshold flip changes one pixel's term of one splat.
    test::expect_agree(std::string(c.name) + " " + what + (with_v_alpha ? "" : " (no v_alpha)"),
                       got, want, {rel_l2, 1.0 - 1e-6, 1e-2 * max_abs(want), why});
  };
  check("v_means2d", v_means2d.download(), ref.means2d);
  check("v_conics", v_conics.download(), ref.conics);
  check("v_colors", v_colors.download(), ref.colors);
  check("v_opacities", v_opacities.download(), ref.opacities);
}

TEST_P(RasterizeParity, BackwardMatchesCpu) {
  expect_backward_agrees(GetParam(), true);
}

// Sum of |got - want| over all but the largest 1% of the entries: a threshold flip (see below)
// moves the gradients of a pixel's few splats by far more than rounding, and either variant can
// hit one that the other misses.
double trimmed_error(const std::vector<float>& got, const std::vector<double>& want) {
  std::vector<double> e(got.size());
  for (std::size_t i = 0; i < got.size(); ++i) e[i] = std::abs(double(got[i]) - want[i]);
  std::sort(e.begin(), e.end());
  double sum = 0;
  for (std::size_t i = 0; i < e.size() - e.size() / 100; ++i) sum += e[i];
  return sum;
}

// backend.fast_math = false (expf and IEEE reciprocals): the forward and the backward are at least
// as close to the double reference as with the hardware approximations, and not the same bits
// (the switch reaches the kernels). Compared on the deterministic backward, so that no atomic order
// adds noise. A threshold flip (a pixel that skips or stops at another splat than the reference)
// can appear in one variant and not the other: flipped pixels are counted, the image error is
// summed over the pixels that neither variant flips, and the gradients' error without its largest
// 1% (trimmed_error).
TEST_P(RasterizeParity, AccurateMathIsAtLeastAsClose) {
  const Case& c = GetParam();
  const Inputs in = make_inputs(c);
  const std::size_t pixels = std::size_t(in.width) * in.height, n = in.proj.size();
  const cpu::Projected<double> proj64 = to_double(in.proj);
  const cpu::RasterOut<double> ref =
      cpu::rasterize_fwd(proj64, in.isect, in.width, in.height, in.rs);
  const std::vector<float> v_image = test::random_vector(pixels * 3, c.seed + 300);
  const cpu::ProjectedGrad<double> ref_grad = cpu::rasterize_bwd(
      proj64, in.isect, in.width, in.height, in.rs, to_double(v_image), std::vector<double>{});

  struct Run {
    std::vector<float> image;
    std::vector<double> pixel_error;  // max over the channels and alpha, against ref
    std::vector<float> grads[4];      // means2d, conics, colors, opacities
  };
  const auto run = [&](bool fast) {
    DeviceInputs d(in);
    d.params.fast_math = fast;
    GpuForward f = gpu_forward(d, in);
    cuda::DeviceBuffer<float> d_v_image = test::to_device(v_image);
    cuda::DeviceBuffer<float> g = test::poisoned<float>(n * 9);
    cuda::DeviceBuffer<unsigned long long> fixed(n * 9);
    const cuda::ProjectedGradPtrs v{g.data(), g.data() + n * 2, g.data() + n * 5, g.data() + n * 8};
    cuda::rasterize_bwd_deterministic(f.state(d), {d_v_image.data(), nullptr}, int(n), fixed.data(),
                                      v, nullptr);
    SPLAT_CUDA_CHECK(cudaDeviceSynchronize());
    Run r;
    r.image = f.image.download();
    const std::vector<float> alpha = f.alpha.download(), all = g.download();
    r.pixel_error.resize(pixels);
    for (std::size_t pix = 0; pix < pixels; ++pix) {
      double e = std::abs(double(alpha[pix]) - ref.alpha[pix]);
      for (int ch = 0; ch < 3; ++ch)
        e = std::max(e, std::abs(double(r.image[pix * 3 + ch]) - ref.image[pix * 3 + ch]));
      r.pixel_error[pix] = std::isfinite(e) ? e : INFINITY;
    }
    const std::size_t offsets[5] = {0, n * 2, n * 5, n * 8, n * 9};
    for (int k = 0; k < 4; ++k)
      r.grads[k].assign(all.begin() + offsets[k], all.begin() + offsets[k + 1]);
    return r;
  };
  const Run fast = run(true), accurate = run(false);
  EXPECT_NE(fast.image, accurate.image) << c.name << ": fast_math changed nothing";

  // Float blending of ~100 terms agrees to ~1e-6; beyond 4e-6 a pixel took another threshold
  // decision (as in ForwardMatchesCpu).
  constexpr double kFlip = 4e-6;
  std::size_t flips_fast = 0, flips_accurate = 0;
  double sum_fast = 0, sum_accurate = 0;
  for (std::size_t pix = 0; pix < pixels; ++pix) {
    const double ef = fast.pixel_error[pix], ea = accurate.pixel_error[pix];
    flips_fast += !(ef <= kFlip);
    flips_accurate += !(ea <= kFlip);
    if (ef <= kFlip && ea <= kFlip) sum_fast += ef, sum_accurate += ea;
  }
  std::cout << "[ info     ] " << c.name << " forward vs double, fast / accurate: error sum "
            << sum_fast << " / " << sum_accurate << ", flipped pixels " << flips_fast << " / "
            << flips_accurate << "\n";
  // The approximations add a few ulp to every alpha (ex2.approx of a rounded power * log2(e)),
  // about as much as the blending's own rounding, so the accurate sum is clearly smaller; 5%
  // slack for rounding that is not additive. A flip needs a value within an ulp or two of a
  // threshold, and either variant can hit one the other misses.
  EXPECT_LE(sum_accurate, 1.05 * sum_fast) << c.name;
  EXPECT_LE(flips_accurate, flips_fast + 2 + pixels / 5000) << c.name;

  const char* names[] = {"v_means2d", "v_conics", "v_colors", "v_opacities"};
  const std::vector<double>* want[] = {&ref_grad.means2d, &ref_grad.conics, &ref_grad.colors,
                                       &ref_grad.opacities};
  for (int k = 0; k < 4; ++k) {
    const test::Agreement af = test::agreement(fast.grads[k], *want[k]),
                          aa = test::agreement(accurate.grads[k], *want[k]);
    ASSERT_EQ(af.non_finite + aa.non_finite, 0u) << c.name << " " << names[k];
    const double tf = trimmed_error(fast.grads[k], *want[k]),
                 ta = trimmed_error(accurate.grads[k], *want[k]);
    std::cout << "[ info     ] " << c.name << " " << names[k]
              << " vs double, fast / accurate: rel L2 " << af.rel_l2 << " / " << aa.rel_l2
              << ", trimmed error sum " << tf << " / " << ta << "\n";
    // Every T recovered by a correctly rounded reciprocal instead of a 1-ulp one, every alpha
    // from a closer exp; 10% slack for rounding that does not add up.
    EXPECT_LE(ta, 1.1 * tf) << c.name << " " << names[k];
  }
}

INSTANTIATE_TEST_SUITE_P(Scenes,
                         RasterizeParity,
                         ::testing::ValuesIn(both_sides()),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           return std::string(info.param.name) + "_tile" +
                                  std::to_string(info.param.side);
                         });

TEST(RasterizeParityExtra, BackwardWithoutVAlpha) {
  expect_backward_agrees(kCases[4], false);
}

// rasterize_bwd adds into its outputs: two calls give twice one call.
TEST(RasterizeParityExtra, BackwardAccumulates) {
  const Inputs in = make_inputs(kCases[1]);
  DeviceInputs d(in);
  GpuForward f = gpu_forward(d, in);
  const std::size_t pixels = std::size_t(in.width) * in.height, n = in.proj.size();
  cuda::DeviceBuffer<float> v_image = test::to_device(test::random_vector(pixels * 3, 7));
  cuda::DeviceBuffer<float> v_alpha = test::to_device(test::random_vector(pixels, 8));
  std::vector<float> once, twice;
  for (int calls : {1, 2}) {
    cuda::DeviceBuffer<float> g(n * 9);
    g.zero();
    const cuda::ProjectedGradPtrs v{g.data(), g.data() + n * 2, g.data() + n * 5, g.data() + n * 8};
    for (int i = 0; i < calls; ++i)
      cuda::rasterize_bwd(f.state(d), {v_image.data(), v_alpha.data()}, v, nullptr);
    SPLAT_CUDA_CHECK(cudaDeviceSynchronize());
    (calls == 1 ? once : twice) = g.download();
  }
  std::vector<double> doubled(once.size());
  for (std::size_t i = 0; i < once.size(); ++i) doubled[i] = 2.0 * once[i];
  test::expect_agree("accumulated gradients", twice, doubled,
                     {1e-5, 1.0 - 1e-10, 1e-4 * max_abs(doubled), "only atomic order differs"});
}

// An image whose tiles hold no splat: background everywhere, alpha 0, last = range start.
TEST(RasterizeParityExtra, EmptyListsGiveBackground) {
  Inputs in;
  in.width = 40;
  in.height = 23;
  in.rs.background = {0.25f, 0.5f, 0.75f};
  const cpu::TileGrid grid = cpu::TileGrid::for_image(in.width, in.height);
  in.isect.grid = grid;
  in.isect.tile_ranges.assign(std::size_t(grid.count()) * 2, 0);
  in.proj.means2d = {0.0f, 0.0f};
  in.proj.depths = {1.0f};
  in.proj.conics = {1.0f, 0.0f, 1.0f};
  in.proj.radii = {0, 0};
  in.proj.colors = {0.0f, 0.0f, 0.0f};
  in.proj.opacities = {0.5f};
  DeviceInputs d(in);
  GpuForward f = gpu_forward(d, in);
  const std::vector<float> image = f.image.download(), alpha = f.alpha.download();
  const std::vector<std::uint32_t> last = f.last.download();
  for (std::size_t pix = 0; pix < alpha.size(); ++pix) {
    ASSERT_EQ(alpha[pix], 0.0f) << pix;
    ASSERT_EQ(last[pix], 0u) << pix;
    for (int ch = 0; ch < 3; ++ch) ASSERT_EQ(image[pix * 3 + ch], in.rs.background[ch]) << pix;
  }
}

// The warp test (device only, approximate reciprocals) must be conservative: whenever it drops a
// splat for a box of pixels, the rasterizer would have skipped the splat at every pixel of the box
// (the CPU test Tiles.ReachesPixelsIsConservativeOnAnyBox does the same for the lists' exact test).
// Boxes of the warps' shapes (8x4 patches and what is left of them as lanes finish) and others.
TEST(RasterizeParityExtra, WarpTestIsConservative) {
  const int boxes[][2] = {{7, 3}, {3, 3}, {0, 0}, {7, 0}, {0, 3}, {15, 15}, {5, 2}};
  std::vector<cuda::WarpTestCase> cases;
  const Inputs* inputs[3];
  const Inputs a = make_inputs(kCases[1]), b = make_inputs(kCases[3]), c = make_inputs(kCases[6]);
  inputs[0] = &a, inputs[1] = &b, inputs[2] = &c;
  std::mt19937 rng(21);
  for (const Inputs* in : inputs) {
    const cpu::Projected<float>& p = in->proj;
    std::uniform_int_distribution<int> ux(-12, in->width + 4), uy(-12, in->height + 4);
    for (std::size_t g = 0; g < p.opacities.size(); ++g) {
      if (p.radii[g * 2] <= 0 && p.radii[g * 2 + 1] <= 0) continue;
      for (int k = 0; k < 14; ++k) {
        const auto [w, h] = boxes[k % 7];
        // Half the boxes near the splat's mean, where the decision is close.
        const int x0 = k % 2 ? ux(rng) : int(p.means2d[g * 2]) - w / 2 + int(rng() % 9) - 4;
        const int y0 = k % 2 ? uy(rng) : int(p.means2d[g * 2 + 1]) - h / 2 + int(rng() % 9) - 4;
        cases.push_back({p.conics[g * 3], p.conics[g * 3 + 1], p.conics[g * 3 + 2],
                         p.means2d[g * 2], p.means2d[g * 2 + 1], p.opacities[g], x0, y0, w, h});
      }
    }
  }
  const std::vector<std::uint8_t> keep = cuda::warp_test(cases);
  ASSERT_EQ(keep.size(), cases.size());
  std::size_t dropped = 0;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    if (keep[i]) continue;
    ++dropped;
    const cuda::WarpTestCase& t = cases[i];
    for (int y = t.y0; y <= t.y0 + t.h; ++y)
      for (int x = t.x0; x <= t.x0 + t.w; ++x) {
        // The rasterizer's exponent (rasterize_common.cuh, gaussian_power) and skip rules.
        const float dx = t.mean_x - (float(x) + 0.5f), dy = t.mean_y - (float(y) + 0.5f);
        const float power =
            std::fma(dx, std::fma(-t.b, dy, (-0.5f * t.a) * dx), ((-0.5f * t.c) * dy) * dy);
        const bool skipped = power > 0.0f || power < float(cpu::kMinPower) ||
                             t.opacity * std::exp(power) < config::alpha_min;
        ASSERT_TRUE(skipped) << "case " << i << ": dropped, but blends at pixel " << x << "," << y;
      }
  }
  // Most boxes miss most splats: the test checks many drops, not a handful.
  EXPECT_GT(dropped, cases.size() / 3) << dropped << " of " << cases.size();
}

}  // namespace
}  // namespace splat
