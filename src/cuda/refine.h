#pragma once
// The refine ticks on the device (engine/backend.h): MCMC relocation and growth, ADC clone, split
// and prune, and the opacity reset, each on a DeviceModel with nothing in flight that reads it
// (the backend drains the step engine first). Their scratch and host readbacks live here.
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/adc_cuda.h"
#include "cuda/buffer.h"
#include "cuda/device_model.h"
#include "cuda/mcmc_cuda.h"
#include "cuda/sync_log.h"
#include "distributed/communicator.h"
#include "engine/backend.h"

namespace splat::cuda {

class Refiner {
 public:
  Refiner(cudaStream_t stream, SyncLog& syncs) : stream_(stream), syncs_(syncs) {}

  RefineStats mcmc(DeviceModel& model, const McmcRefineSettings& s);
  // With several ranks, every rank decides from the statistics of all ranks' views.
  RefineStats adc(DeviceModel& model, const AdcRefineSettings& s, dist::Communicator& comm);
  void reset_opacity(DeviceModel& model, float max_opacity);
  std::size_t bytes() const { return mcmc_scratch_.bytes() + adc_scratch_.bytes(); }

 private:
  cudaStream_t stream_;
  SyncLog& syncs_;
  ScratchGroup<McmcScratch, McmcSize> mcmc_scratch_;
  Pinned<std::int32_t> dead_host_{1};
  ScratchGroup<AdcScratch, int> adc_scratch_;
  Pinned<std::int32_t> adc_totals_host_{kAdcTotals};
};

}  // namespace splat::cuda
