# Sourced by the tools/ scripts (not run): which checkpoint of a run to read.
#   last_checkpoint RUN_DIR  the checkpoint-N with the largest N
#   best_checkpoint RUN_DIR  the run's best_model_checkpoint (train.metric_for_best_model) as the
#                            last checkpoint's trainer_state.json names it, else the last checkpoint
last_checkpoint() { ls -d "$1"/checkpoint-* | sort -t- -k2 -n | tail -1; }
best_checkpoint() {
  local state b
  state="$(last_checkpoint "$1")/trainer_state.json"
  b=$(sed -n 's/^ *"best_model_checkpoint": *"\(.*\)",\{0,1\}$/\1/p' "$state")
  if [ -n "$b" ] && [ -d "$b" ]; then echo "$b"; else last_checkpoint "$1"; fi
}
