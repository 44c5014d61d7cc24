// A GPU the build has no kernels for gets one clear error that names the GPU, its compute
// capability and what the build holds, and says what to do: not a failed launch deep in training.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <string>

#include "core/error.h"
#include "cuda/cuda_backend.h"

namespace splat::cuda {
namespace {

TEST(UnsupportedDevice, ErrorNamesTheGpuAndTheFix) {
  ASSERT_TRUE(device_available());
  cudaDeviceProp prop{};
  ASSERT_EQ(cudaGetDeviceProperties(&prop, 0), cudaSuccess);
  if (prop.major == 7 && prop.minor == 5)
    GTEST_SKIP() << "a Turing GPU runs this build's sm_75 code";
  try {
    require_supported_device();
    FAIL() << "an sm_75-only build accepted " << prop.name;
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(prop.name), std::string::npos) << msg;
    EXPECT_NE(msg.find("compute capability " + std::to_string(prop.major) + "." +
                       std::to_string(prop.minor)),
              std::string::npos)
        << msg;
    EXPECT_NE(msg.find("75-real"), std::string::npos) << msg;
    EXPECT_NE(msg.find("-DCMAKE_CUDA_ARCHITECTURES=native"), std::string::npos) << msg;
    EXPECT_NE(msg.find("backend.type=cpu"), std::string::npos) << msg;
  }
  EXPECT_STREQ(built_architectures(), "75-real");
}

}  // namespace
}  // namespace splat::cuda
