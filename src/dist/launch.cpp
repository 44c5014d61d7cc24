#include "dist/launch.h"

#include <cstdlib>
#include <string>

#include "core/error.h"

namespace splat::dist {

void disable_nvlink_multicast() {
  for (const char* var :
       {"NCCL_NVLS_ENABLE=0", "TORCH_SYMM_MEM_DISABLE_MULTICAST=1", "NVSHMEM_DISABLE_NVLS=1"}) {
    const std::string s(var);
    const auto eq = s.find('=');
    setenv(s.substr(0, eq).c_str(), s.substr(eq + 1).c_str(), 1);
  }
}

void check_gpus(int gpus) {
  disable_nvlink_multicast();
  if (gpus > 1)
    throw Error(
        "--gpus " + std::to_string(gpus) +
        ": the GPU communicator (NCCL) is not written yet, so gradients cannot be reduced across GPUs; use --gpus 1, or "
        "several processes on the CPU backend (mpirun -n N splat train ... --set "
        "backend.type=cpu)");
}

}  // namespace splat::dist
