#include "train/interrupt.h"

#include <csignal>

namespace splat {

namespace {
volatile std::sig_atomic_t g_signal = 0;

extern "C" void on_signal(int signal) {
  g_signal = signal;
  std::signal(signal, SIG_DFL);  // the second one is not caught
}
}  // namespace

void install_interrupt_handlers() {
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
}

int interrupt_signal() {
  return g_signal;
}

void request_interrupt(int signal) {
  g_signal = signal;
}

}  // namespace splat
