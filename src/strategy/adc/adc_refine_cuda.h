#pragma once
// ADC's refine tick and opacity reset on the GPU (3DGS, Kerbl et al. 2023; gsplat's
// DefaultStrategy), mirroring the CPU ticks (adc_tick_cpu.h). Decisions and split samples come
// from engine/adc.h, so both backends decide the same and draw the same.
//
// A refine tick is two calls around the caller's one host wait:
//   adc_decide    decisions per splat, survivor flags, one scan for every destination slot; the
//                 totals are copied to pinned host memory
//   <host wait>   the caller reads the totals and allocates arrays for the new count
//   adc_compact   writes the refined model into the new arrays (out of place: a slot's
//                 destination may be another splat's source)
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "cuda/adc_cuda.h"  // AdcStatsPtrs
#include "cuda/arena.h"
#include "cuda/device_model.h"  // ModelSlots
#include "cuda/types.h"
#include "engine/adc.h"

namespace splat::cuda {

struct RefineContext;

// The model's ADC statistics ready for a tick that reads them (cpu::gather_adc_stats): one entry
// per splat (zeros if no step gathered any since the count changed), summed over the ranks.
void gather_adc_stats(RefineContext& ctx);

// Totals of a tick, as adc_decide leaves them on the host: surviving kept originals, clones and
// split pairs, then the clone and split decisions before pruning.
inline constexpr int kAdcKept = 0, kAdcClones = 1, kAdcChildren = 2, kAdcCloned = 3, kAdcSplit = 4;
inline constexpr int kAdcTotals = 5;

// Scratch of one tick, carved from one allocation (cuda/arena.h). Segment k of flags/offsets is
// [k n, (k + 1) n): 0 kept originals, 1 surviving clones, 2 surviving split pairs. One exclusive
// scan over the three segments gives every destination: kept j -> offsets[j], clone ->
// offsets[n + j], first child -> offsets[2 n + j], second child -> that + surviving pairs.
struct AdcScratch {
  std::int32_t* flags;    // [3 N] 0 or 1
  std::int32_t* offsets;  // [3 N] exclusive prefix sums of flags
  std::int32_t* totals;   // [kAdcTotals]
  void* temp;             // CUB scratch
  std::size_t temp_bytes;
  void carve(Carver& c, int n);
};

// Decides every splat (adc::decide on the statistics, the max log-scale and the raw opacity of
// `in`, whose other arrays are not read), fills the flags and offsets, and queues the copy of
// the totals into totals_host (pinned, [kAdcTotals]); they are valid after a host wait on stream.
// n >= 1, 3 n <= INT_MAX.
void adc_decide(int n,
                GaussianPtrs in,
                const AdcStatsPtrs& stats,
                const adc::Thresholds& t,
                const AdcScratch& s,
                std::int32_t* totals_host,
                cudaStream_t stream);

// adc_decide's second half, for a tick that fills the flags and the decision totals (kAdcCloned,
// kAdcSplit) itself: the scan, the survivor totals and their copy into totals_host.
void adc_scan(int n, const AdcScratch& s, std::int32_t* totals_host, cudaStream_t stream);

// After adc_decide and the host wait: writes the refined model into dst, whose arrays hold
// kept + clones + 2 children slots. Kept splats take their parameters and Adam moments; clones
// and children take the parameters with zero moments; children's means and log-scales are the
// split samples (adc::split_offset, seed) and the parent's log-scales - log 1.6. src and dst
// must not overlap.
void adc_compact(const ModelSlots& src,
                 const ModelSlots& dst,
                 int n,
                 int children,
                 std::uint64_t seed,
                 const AdcScratch& s,
                 cudaStream_t stream);

// After the host wait on the totals of adc_decide or adc_scan: moves ctx's model into fresh arrays
// with adc_compact (m = kept + clones + 2 children slots), resizes the gradients, resets the
// statistics and waits (sync `what`) before the old arrays are freed. Returns m.
std::size_t compact_model(RefineContext& ctx,
                          const AdcScratch& s,
                          const std::int32_t* totals_host,
                          std::uint64_t seed,
                          const char* what);

// raw_opacity = min(raw_opacity, max_raw_opacity) (NaN stays NaN, as on the CPU), and zero Adam
// moments of the opacity group, for n splats.
void adc_reset_opacity(int n,
                       float max_raw_opacity,
                       float* raw_opacity,  // [N]
                       float* m_opacity,    // [N]
                       float* v_opacity,    // [N]
                       cudaStream_t stream);

}  // namespace splat::cuda
