#pragma once
// Ctrl-C and SIGTERM during training: the first asks the trainer to finish the step, write a
// checkpoint and return (zoo train then exits with stop_exit_status()); a second leaves at
// once (checkpoints are atomic).
#include <atomic>

namespace zoo {

/// Set by SIGINT/SIGTERM (installed by install_stop_handlers()); the trainer finishes the
/// current step, writes a checkpoint and returns.
std::atomic<bool>& stop_requested();
void install_stop_handlers();
/// The exit status of a run that stopped this way, as a shell reports a process the signal
/// ended: 128 + the first signal's number (130 for Ctrl-C, 143 for SIGTERM; 143 for a rank
/// that stopped because another was signalled), so that `zoo train && next` stops too.
int stop_exit_status();

}  // namespace zoo
