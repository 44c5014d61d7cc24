// Compiled by the test Layers.Probe_denied, which passes only if this fails to compile: the engine
// layer does not link the train layer, so the build must not find train/ headers from it.
#include "train/config.h"

int splat_layer_probe() {
  return sizeof(splat::TrainConfig);
}
