# Sourced by the tools/ scripts (not run): which checkpoint of a run to read.
#   last_checkpoint RUN_DIR  the checkpoint-N with the largest N
#   best_checkpoint RUN_DIR  the run's best_model_checkpoint (train.metric_for_best_model) as the
#                            last checkpoint's trainer_state.json names it, else the last checkpoint
#   run_finished RUN_DIR     true when the run's last checkpoint (it has one) is at its last step
#   train_once RUN_DIR ARGS  `$ZOO train ARGS --output-dir RUN_DIR` unless RUN_DIR finished (kept, said
#                            so); a run stopped part way continues with --resume
source "$(dirname "${BASH_SOURCE[0]}")/json.sh"
last_checkpoint() { ls -d "$1"/checkpoint-* | sort -t- -k2 -n | tail -1; }
best_checkpoint() {
  local state b
  state="$(last_checkpoint "$1")/trainer_state.json"
  b=$(sed -n 's/^ *"best_model_checkpoint": *"\(.*\)",\{0,1\}$/\1/p' "$state")
  if [ -n "$b" ] && [ -d "$b" ]; then echo "$b"; else last_checkpoint "$1"; fi
}
run_finished() {
  local state step max
  state="$(last_checkpoint "$1")/trainer_state.json"
  [ -f "$state" ] || return 1
  step=$(field global_step < "$state" | head -1) max=$(field max_steps < "$state" | head -1)
  [ -n "$step" ] && [ -n "$max" ] && [ "$step" -ge "$max" ]
}
train_once() {
  local dir=$1
  shift
  if ! compgen -G "$dir/checkpoint-*" > /dev/null; then
    "$ZOO" train "$@" --output-dir "$dir"
  elif run_finished "$dir"; then
    echo "== $dir finished at $(basename "$(last_checkpoint "$dir")"): kept (delete it to train it again)"
  else
    echo "== $dir stopped at $(basename "$(last_checkpoint "$dir")"): continuing it"
    "$ZOO" train "$@" --output-dir "$dir" --resume
  fi
}
