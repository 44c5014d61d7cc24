// Compiled by the test Layers.Probe_allowed: the same include as engine_includes_train.cpp from a
// target that links the train layer compiles, so Probe_denied fails for the layer rule alone.
#include "train/config.h"

int splat_layer_probe() {
  return sizeof(splat::TrainConfig);
}
