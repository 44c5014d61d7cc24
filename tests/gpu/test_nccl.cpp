// The NCCL communicator (cuda/nccl.h). One rank runs on any GPU machine; the launch of two ranks
// (`splat train --gpus 2`) needs two GPUs and is skipped, saying so, where there are fewer.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "cuda/check.h"
#include "cuda/nccl.h"
#include "io/checkpoint.h"
#include "test_util.h"

namespace splat::test {
namespace {

TEST(Nccl, OneRankCollectives) {
  auto comm = dist::make_nccl_communicator(0, 1, dist::nccl_unique_id(), 0);
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
  EXPECT_EQ(comm->allgather(0x1234567890abcdefull, "allgather"),
            (std::vector<std::uint64_t>{0x1234567890abcdefull}));

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

// Two ranks on two GPUs train the small demo scene with a batch of 2 (one view each), compare
// digests across ranks (the trainer fails on a mismatch), end cleanly (every rank destroys its
// communicator; a rank left alone in NCCL's destroy hangs the job), and match one GPU with the
// same batch: both sum the same two views' gradients, in one process or through the all-reduce.
TEST(Nccl, TwoGpusTrainLikeOneGpuWithTheSameBatch) {
  if (dist::cuda_device_count() < 2)
    GTEST_SKIP() << "needs 2 GPUs, this machine has " << dist::cuda_device_count();
  auto train = [](int gpus) {
    const auto dir = temp_dir("nccl_gpus" + std::to_string(gpus));
    const auto r = run_splat(
        "train " + small_demo_scene() + " --gpus " + std::to_string(gpus) + " --out " +
            dir.string() +
            " --set train.iterations=60 --set train.batch_size=2 --set model.init_points=2000"
            " --set train.digest_every=10 --set output.save_renders=false",
        120);
    EXPECT_EQ(r.exit_code, 0) << r.output;  // 124: timed out
    if (gpus > 1) {
      EXPECT_MENTIONS(r.output, "x 2 ranks (nccl)");
    }
    return read_checkpoint((dir / "checkpoint.ckpt").string());
  };
  const Checkpoint one = train(1), two = train(2);
  ASSERT_EQ(two.params.size(), one.params.size());
  EXPECT_EQ(two.iteration, one.iteration);
  const double d = relative_difference(two.params, one.params, nullptr);
  std::printf("2 GPUs vs 1 GPU, batch 2: relative difference of parameters %.3g\n", d);
  EXPECT_LT(d, 1e-3);  // the bound of the CPU ranks' test (tests/test_dist.cpp)
}

}  // namespace
}  // namespace splat::test
