// The NCCL communicator (dist/nccl.h). One rank runs on any GPU machine; the launch of two ranks
// (`splat train --gpus 2`) needs two GPUs and is skipped, saying so, where there are fewer.
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "cuda/check.h"
#include "dist/nccl.h"
#include "test_util.h"

namespace splat::test {
namespace {

TEST(Nccl, OneRankCollectives) {
  auto comm = dist::make_nccl_communicator(0, 1, dist::nccl_unique_id());
  EXPECT_EQ(comm->name(), "nccl");
  EXPECT_EQ(comm->size(), 1);
  EXPECT_TRUE(comm->reduces_device_buffers());
  std::vector<float> f = {1.5f, -2.0f, 3.25f};
  comm->allreduce_sum(std::span(f), "float");
  EXPECT_EQ(f, (std::vector<float>{1.5f, -2.0f, 3.25f}));
  std::vector<double> d = {0.125, 7.0};
  comm->allreduce_sum(std::span(d), "double");
  EXPECT_EQ(d, (std::vector<double>{0.125, 7.0}));
  std::vector<std::int32_t> i = {3, -4};
  comm->allreduce_sum(std::span(i), "int");
  EXPECT_EQ(i, (std::vector<std::int32_t>{3, -4}));
  std::vector<std::byte> bytes = {std::byte{1}, std::byte{2}, std::byte{255}};
  comm->broadcast(std::span(bytes), 0, "broadcast");
  EXPECT_EQ(bytes[2], std::byte{255});
  EXPECT_EQ(comm->allgather(0x1234567890abcdefull, "allgather"), (std::vector<std::uint64_t>{0x1234567890abcdefull}));

  float* dev = nullptr;
  SPLAT_CUDA_CHECK(cudaMalloc(&dev, 4 * sizeof(float)));
  const float host[4] = {1, 2, 3, 4};
  SPLAT_CUDA_CHECK(cudaMemcpy(dev, host, sizeof host, cudaMemcpyHostToDevice));
  comm->allreduce_sum_device(dev, 4, nullptr, "device");
  float back[4] = {};
  SPLAT_CUDA_CHECK(cudaMemcpy(back, dev, sizeof back, cudaMemcpyDeviceToHost));
  SPLAT_CUDA_CHECK(cudaFree(dev));
  for (int k = 0; k < 4; ++k) EXPECT_EQ(back[k], host[k]);
}

// Two ranks on two GPUs train the small demo scene with a batch of 2 and end with the same
// digests (the trainer compares them across ranks at the end and fails otherwise).
TEST(Nccl, TwoGpusTrain) {
  if (dist::cuda_device_count() < 2) GTEST_SKIP() << "needs 2 GPUs, this machine has " << dist::cuda_device_count();
  const auto dir = temp_dir("nccl_two");
  const auto r = run_splat("train " + small_demo_scene() + " --gpus 2 --out " + dir.string() +
                           " --set train.iterations=60 --set train.batch_size=2 --set model.init_points=2000"
                           " --set train.digest_every=10 --set output.save_renders=false");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("nccl"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace splat::test
