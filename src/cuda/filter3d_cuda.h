#pragma once
// Mip-Splatting's 3D filter variances on the device (engine/filter3d.h); the reference is
// filter3d::variances (engine/filter3d_host.h).
#include "cuda/types.h"

namespace splat::cuda {

// var [n]: the filter variance of each of the n splats (means [n, 3]) from `count` training
// cameras (device memory). fallback_bits [1] is scratch: the lowest sampling rate of a seen splat,
// as float bits (positive floats order as their bits).
void filter3d_variances(int n,
                        const float* means,
                        const CameraParams* cams,
                        int count,
                        float* var,
                        unsigned* fallback_bits,
                        cudaStream_t stream);

}  // namespace splat::cuda
