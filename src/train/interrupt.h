#pragma once
// Ctrl-C (SIGINT) and SIGTERM during training: the first one asks the trainer to stop after the
// step in progress and save its work; a second one ends the process at once (the default action).
namespace splat {

// Installs the handlers (idempotent). Until then, and for other commands, signals act as usual.
void install_interrupt_handlers();
// The signal that asked to stop (SIGINT or SIGTERM), or 0.
int interrupt_signal();
// For tests: as if `signal` had arrived.
void request_interrupt(int signal);

}  // namespace splat
