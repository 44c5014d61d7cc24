#pragma once
// Adam's hyperparameters (Kingma & Ba 2015), as torch.optim.Adam with betas (0.9, 0.999) and
// 3DGS's eps 1e-15: one definition for every backend, so their updates agree to the bit.
namespace splat {

inline constexpr double kAdamBeta1 = 0.9, kAdamBeta2 = 0.999, kAdamEps = 1e-15;

}  // namespace splat
