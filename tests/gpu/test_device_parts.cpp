// The CUDA backend's parts on their own, with no backend around them: the device model's host
// boundary (exact round trip, zero tails, digest, generation, the 3D filter's guard), the training
// images (validation, streaming past a budget, staging), a refine tick run on a
// bare model, and the appearance transforms' recentering.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <vector>

#include "core/error.h"
#include "cpu/adc_cpu.h"
#include "cuda/appearance_cuda.h"
#include "cuda/device_model.h"
#include "cuda/refine_cuda.h"
#include "cuda/sync_log.h"
#include "cuda/training_images.h"
#include "distributed/communicator.h"
#include "engine/appearance.h"
#include "engine/state_digest.h"
#include "strategy/adc/adc_strategy.h"
#include "strategy/adc/adc_tick_cpu.h"
#include "strategy/mcmc/mcmc_strategy.h"

namespace splat::cuda {
namespace {

bool bit_equal(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

bool bit_equal(const Gaussians& a, const Gaussians& b) {
  bool same = a.sh_degree == b.sh_degree;
  std::vector<const std::vector<float>*> groups;
  a.for_each_group([&](const char*, const std::vector<float>& v) { groups.push_back(&v); });
  int i = 0;
  b.for_each_group(
      [&](const char*, const std::vector<float>& v) { same = same && bit_equal(*groups[i++], v); });
  return same;
}

TrainState random_state(std::size_t n, std::uint32_t seed, bool extras) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  TrainState st;
  for (Gaussians* g : {&st.params, &st.adam_m, &st.adam_v}) {
    g->sh_degree = 2;
    g->resize(n);
    g->for_each_group([&](const char*, std::vector<float>& v) {
      for (float& x : v) x = normal(rng);
    });
  }
  st.adam_step = 1234;
  if (extras) {
    st.adc.grad2d.resize(n);
    st.adc.count.resize(n);
    st.adc.grad2d_abs.resize(n);
    for (std::size_t i = 0; i < n; ++i) {
      st.adc.grad2d[i] = std::abs(normal(rng));
      st.adc.count[i] = int(i % 7);
      st.adc.grad2d_abs[i] = std::abs(normal(rng));
    }
    st.filter3d.resize(n);
    for (float& x : st.filter3d) x = 1e-4f * std::abs(normal(rng));
  }
  return st;
}

// Every array's slots from its size up to its capacity.
std::vector<float> tails(const DeviceModel& model) {
  std::vector<float> out;
  for (const DeviceArrayView& a : model.arrays()) {
    std::vector<float> all(a.capacity);
    SPLAT_CUDA_CHECK(
        cudaMemcpy(all.data(), a.data, a.capacity * sizeof(float), cudaMemcpyDeviceToHost));
    out.insert(out.end(), all.begin() + std::ptrdiff_t(a.size), all.end());
  }
  return out;
}

TEST(DeviceModelGpu, RoundTripIsExactWithZeroTailsAndTheHostDigest) {
  Stream stream;
  SyncLog syncs;
  DeviceModel model(stream, syncs);
  const TrainState big = random_state(3000, 1, true);
  model.upload(big);
  EXPECT_EQ(model.generation, 1);
  TrainState got = model.download();
  EXPECT_TRUE(bit_equal(got.params, big.params));
  EXPECT_TRUE(bit_equal(got.adam_m, big.adam_m));
  EXPECT_TRUE(bit_equal(got.adam_v, big.adam_v));
  EXPECT_EQ(got.adam_step, big.adam_step);
  EXPECT_TRUE(bit_equal(got.adc.grad2d, big.adc.grad2d));
  EXPECT_EQ(got.adc.count, big.adc.count);
  EXPECT_TRUE(bit_equal(got.adc.grad2d_abs, big.adc.grad2d_abs));
  EXPECT_TRUE(bit_equal(got.filter3d, big.filter3d));
  EXPECT_TRUE(bit_equal(model.download_params(), big.params));
  EXPECT_EQ(model.digest(), state_digest(big));
  EXPECT_TRUE(model.diverged_groups().empty());

  // A smaller state reuses the storage: what lay past its count must read zero.
  const TrainState small = random_state(1000, 2, false);
  model.upload(small);
  EXPECT_EQ(model.generation, 2);
  ASSERT_EQ(model.arrays().size(), 20u);
  std::size_t nonzero = 0;
  for (float x : tails(model)) nonzero += x != 0.0f;
  EXPECT_EQ(nonzero, 0u);
  // 2000 slots of 38 floats (SH degree 2) in parameters and moments, 11 in the gradients (no SH
  // gradients: no step summed them) were kept, or this proves nothing.
  EXPECT_FALSE(model.sh_grads_in_use());
  EXPECT_GE(tails(model).size(), 2000u * (38 * 3 + 11));
  got = model.download();
  EXPECT_TRUE(bit_equal(got.params, small.params));
  EXPECT_TRUE(got.filter3d.empty());
  EXPECT_EQ(model.filter3d(), nullptr);
  EXPECT_EQ(model.digest(), state_digest(small));
}

TEST(DeviceModelGpu, TheFilterMustFollowTheCount) {
  Stream stream;
  SyncLog syncs;
  DeviceModel model(stream, syncs);
  model.upload(random_state(500, 3, true));
  ASSERT_NE(model.filter3d(), nullptr);
  RefineScratch scratch;
  RefineContext ctx{model, stream, syncs, scratch, dist::single_process()};
  McmcRefineSettings grow;
  grow.target_count = 600;
  grow.min_opacity = 0.005;
  const long before = model.generation;
  McmcTick(grow).run_cuda(ctx);
  EXPECT_EQ(model.n, 600);
  EXPECT_GT(model.generation, before);
  EXPECT_THROW(model.filter3d(), Error);
  Camera cam;
  cam.width = 64, cam.height = 48, cam.fx = cam.fy = 60, cam.cx = 32, cam.cy = 24;
  cam.t = {0, 0, 4};
  model.update_filter3d(std::vector<Camera>{cam});
  EXPECT_NE(model.filter3d(), nullptr);
  EXPECT_EQ(model.download().filter3d.size(), 600u);
}

// Growth with a known cap moves each array once, to room for the cap, keeping what it held; later
// growth stays in place (the same pointers, so a captured graph's buffers stay).
TEST(RefinerGpu, GrowthReservesTheCapOnce) {
  Stream stream;
  SyncLog syncs;
  DeviceModel model(stream, syncs);
  const TrainState st = random_state(500, 5, false);
  model.upload(st);
  RefineScratch scratch;
  RefineContext ctx{model, stream, syncs, scratch, dist::single_process()};
  McmcRefineSettings grow;
  grow.min_opacity = 0.0f;  // nothing dies: the first 500 slots must keep their values
  grow.target_count = 600;
  grow.max_count = 1000;
  McmcTick(grow).run_cuda(ctx);
  const std::vector<DeviceArrayView> first = model.arrays();
  const int widths[5] = {3, 3, 4, 1, 27};
  // Array 9 is the SH gradients (the second group of arrays, the fifth array): not held.
  auto held = [](std::size_t a) { return a != 9; };
  for (std::size_t a = 0; a < first.size(); ++a) {
    EXPECT_EQ(first[a].size, held(a) ? 600u * widths[a % 5] : 0u) << a;
    EXPECT_EQ(first[a].capacity, held(a) ? 1000u * widths[a % 5] : 0u) << a;
  }
  EXPECT_EQ(syncs.counts().at("mcmc_grow_copy"), 19);
  const TrainState got = model.download();
  std::vector<float> kept(got.params.means.begin(), got.params.means.begin() + 1500);
  EXPECT_TRUE(bit_equal(kept, st.params.means));
  grow.target_count = 900;
  McmcTick(grow).run_cuda(ctx);
  const std::vector<DeviceArrayView> second = model.arrays();
  for (std::size_t a = 0; a < second.size(); ++a) {
    EXPECT_EQ(second[a].data, first[a].data);
    EXPECT_EQ(second[a].size, held(a) ? 900u * widths[a % 5] : 0u) << a;
  }
  EXPECT_EQ(syncs.counts().at("mcmc_grow_copy"), 19);
  // Once a step sums SH gradients they are held, zero, with the parameters' room, and follow
  // the count: later growth neither moves nor copies them.
  const long before = model.generation;
  model.use_sh_grads();
  EXPECT_GT(model.generation, before);
  const DeviceArrayView sh_grads = model.arrays()[9];
  EXPECT_EQ(sh_grads.size, 900u * 27);
  EXPECT_EQ(sh_grads.capacity, 1000u * 27);
  std::vector<float> values(sh_grads.size);
  SPLAT_CUDA_CHECK(cudaMemcpy(values.data(), sh_grads.data, values.size() * sizeof(float),
                              cudaMemcpyDeviceToHost));
  EXPECT_TRUE(std::all_of(values.begin(), values.end(), [](float x) { return x == 0.0f; }));
  grow.target_count = 1000;
  McmcTick(grow).run_cuda(ctx);
  EXPECT_EQ(model.arrays()[9].data, sh_grads.data);
  EXPECT_EQ(model.arrays()[9].size, 1000u * 27);
  EXPECT_EQ(syncs.counts().at("mcmc_grow_copy"), 19);
  std::size_t nonzero = 0;
  for (float x : tails(model)) nonzero += x != 0.0f;
  EXPECT_EQ(nonzero, 0u);
}

TEST(RefinerGpu, OpacityResetOnABareModelMatchesTheCpu) {
  Stream stream;
  SyncLog syncs;
  DeviceModel model(stream, syncs);
  const TrainState st = random_state(2000, 4, false);
  model.upload(st);
  RefineScratch scratch;
  RefineContext ctx{model, stream, syncs, scratch, dist::single_process()};
  OpacityResetTick(0.01f).run_cuda(ctx);
  TrainState want = st;
  cpu::adc_reset_opacity(want, 0.01f);
  const TrainState got = model.download();
  EXPECT_TRUE(bit_equal(got.params, want.params));
  EXPECT_TRUE(bit_equal(got.adam_m, want.adam_m));
  EXPECT_TRUE(bit_equal(got.adam_v, want.adam_v));
  EXPECT_FALSE(bit_equal(want.params.raw_opacity, st.params.raw_opacity));  // the reset did work
}

TEST(TrainingImagesGpu, KeepsBytesStreamsPastTheBudgetAndRefusesWhatTheLossCannotUse) {
  Stream stream;
  SyncLog syncs;
  TrainingImages images(stream, syncs);
  Image8 rgb(5, 4, 3), rgba(3, 2, 4);
  for (std::size_t i = 0; i < rgb.data.size(); ++i) rgb.data[i] = std::uint8_t(i * 7);
  for (std::size_t i = 0; i < rgba.data.size(); ++i) rgba.data[i] = std::uint8_t(255 - i);
  // A budget of the first image's bytes: it stays on the GPU, the second is streamed.
  images.set({&rgb, &rgba}, std::int64_t(rgb.data.size()));
  EXPECT_EQ(images.streamed(), 1u);
  EXPECT_EQ(images.at(0).host, nullptr);
  EXPECT_EQ(images.at(1).host, rgba.data.data());
  EXPECT_EQ(images.at(1).width, 3);
  EXPECT_EQ(images.at(1).format.channels, 4);
  EXPECT_EQ(&images.fetch(0), &images.at(0));
  EXPECT_EQ(images.fetch(0).pixels.download(), rgb.data);
  const DeviceImage& slot = images.fetch(1);
  EXPECT_EQ(slot.width, 3);
  EXPECT_EQ(slot.pixels.download(), rgba.data);
  EXPECT_EQ(slot.norm.download(), images.at(1).norm.download());
  images.stage(1);
  EXPECT_EQ(images.staged().pixels.download(), rgba.data);
  images.stage(0);
  EXPECT_EQ(images.staged().pixels.download(), rgb.data);
  EXPECT_THROW(images.at(2), std::out_of_range);
  images.set({&rgb, &rgba}, -1);  // auto: half the free memory holds both
  EXPECT_EQ(images.streamed(), 0u);

  // A mask keeping half the pixels weighs each of them twice (cuda/loss_cuda.h); one keeping none,
  // or a gray image, cannot be trained on.
  Image8 half(4, 2, 4);
  half.alpha = AlphaUse::mask;
  for (std::size_t i = 0; i < half.pixels(); i += 2) half.data[4 * i + 3] = 255;
  images.set({&half}, 0);
  EXPECT_EQ(images.at(0).norm.download(), std::vector<float>{2.0f});
  Image8 none(4, 2, 4), gray(4, 4, 1);
  none.alpha = AlphaUse::mask;
  EXPECT_THROW(images.set({&none}, 0), Error);
  EXPECT_THROW(images.set({&gray}, 0), Error);
}

// The transforms' mean held at the identity (engine/appearance.h) on the device: the host's bits,
// for one image, a few, and many (each entry's mean sums over all images in one thread).
TEST(AppearanceGpu, RecenteringGivesTheHostsBits) {
  Stream stream;
  for (const std::size_t images : {1u, 7u, 1000u}) {
    std::mt19937 rng{unsigned(images)};
    std::normal_distribution<float> normal(0.0f, 0.2f);
    std::vector<float> host = AppearanceState::identity(images).params;
    for (float& x : host) x += normal(rng);
    DeviceBuffer<float> device;
    device.upload(host);
    appearance_recenter(device.data(), images, stream);
    SPLAT_CUDA_CHECK(cudaStreamSynchronize(stream));
    splat::appearance_recenter(host.data(), images);
    EXPECT_TRUE(bit_equal(device.download(), host)) << images << " images";
  }
}

}  // namespace
}  // namespace splat::cuda
