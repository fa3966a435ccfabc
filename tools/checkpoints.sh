# Sourced by the tools/ scripts (not run): which checkpoint of a run to read.
#   last_checkpoint RUN_DIR  the checkpoint-N with the largest N
#   best_checkpoint RUN_DIR  the run's best_model_checkpoint (train.metric_for_best_model) as the
#                            last checkpoint's trainer_state.json names it, else the last checkpoint
#   run_finished RUN_DIR     true when the run's last checkpoint (it has one) is at its last step
#   train_once RUN_DIR ARGS  `$ZOO train ARGS --output-dir RUN_DIR` unless RUN_DIR finished (kept, said
#                            so); a run stopped part way continues with --resume. ARGS are recorded in
#                            RUN_DIR/train_once.args (with the --config file's checksum); a run
#                            trained with other ARGS or another config is neither kept nor continued
#                            (return 2, naming the difference)
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
# One line per argument, shell-quoted, without --device and its value (where a run trains is not
# what it trains: a run started on one device may continue on another); a --config file's line
# carries a checksum of its contents, so an edited config is another run.
run_args() {
  local skip=0 config=0 a
  for a in "$@"; do
    if [ "$skip" = 1 ]; then
      skip=0
    elif [ "$a" = --device ]; then
      skip=1
    elif [ "$config" = 1 ] && [ -f "$a" ]; then
      printf '%q (contents %s)\n' "$a" "$(cksum < "$a" | cut -d' ' -f1)"
    else
      printf '%q\n' "$a"
    fi
    if [ "$a" = --config ]; then config=1; else config=0; fi
  done
}
train_once() {
  local dir=$1 record
  shift
  record=$(run_args "$@")
  if ! compgen -G "$dir/checkpoint-*" > /dev/null; then
    mkdir -p "$dir" && printf '%s\n' "$record" > "$dir/train_once.args"
    "$ZOO" train "$@" --output-dir "$dir"
    return
  fi
  local changes=""
  [ -f "$dir/train_once.args" ] && changes=$(diff "$dir/train_once.args" <(printf '%s\n' "$record") | grep '^[<>]' || true)
  if [ -n "$changes" ]; then
    { echo "== $dir was trained with other arguments or config (< then, > now):"
      echo "$changes"
      echo "   delete $dir to train it with these, or write to another output folder"; } >&2
    return 2
  fi
  if run_finished "$dir"; then
    echo "== $dir finished at $(basename "$(last_checkpoint "$dir")"): kept (delete it to train it again)"
  else
    echo "== $dir stopped at $(basename "$(last_checkpoint "$dir")"): continuing it"
    "$ZOO" train "$@" --output-dir "$dir" --resume
  fi
}
