// Compiled by the test Layers.Probe_denied_strategy, which passes only if this fails to compile:
// the backends sit below the densification strategies (a strategy's tick uses a backend's refine
// context, never the other way), so the cpu layer must not find strategy/ headers.
#include "strategy/strategy.h"

int splat_layer_probe() {
  return sizeof(splat::DensifyConfig);
}
