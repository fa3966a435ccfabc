#pragma once
// Ctrl-C and SIGTERM during training: the first asks the trainer to finish the step, write a
// checkpoint and return; a second leaves at once (checkpoints are atomic).
#include <atomic>

namespace zoo {

/// Set by SIGINT/SIGTERM (installed by install_stop_handlers()); the trainer finishes the
/// current step, writes a checkpoint and returns.
std::atomic<bool>& stop_requested();
void install_stop_handlers();

}  // namespace zoo
