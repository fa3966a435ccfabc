# Sourced (not run) by the scripts that run a recipe once per seed, several at a time
# (seed_spread.sh, bert_imdb_gain.sh, tools/train_ensemble.sh); NAME is the script's name for messages.
#   seed_list SEEDS   the comma-separated SEEDS into the array SEED_LIST, each checked
#   share_cores RUNS  JOBS (runs at once: the caller's JOBS if set, else one per core, at most
#                     RUNS) and THREADS (cores / JOBS, at least 1)
#   wait_for_slot     waits until fewer than JOBS runs are going
#   wait_all PID...   waits for every run
# When a run fails, the two waits stop the others (SIGTERM to each one's process tree: zoo
# writes a checkpoint and exits) and exit 1.
seed_list() {
  local s
  IFS=, read -r -a SEED_LIST <<< "$1"
  for s in "${SEED_LIST[@]}"; do
    [[ "$s" =~ ^[0-9]+$ ]] || { echo "$NAME: --seeds takes non-negative integers separated by commas, got '$s'" >&2; exit 2; }
  done
}
share_cores() {
  local cores
  cores=$(nproc)
  JOBS=${JOBS:-$((cores < $1 ? cores : $1))}
  [[ "$JOBS" =~ ^[1-9][0-9]*$ ]] || { echo "$NAME: --jobs takes a positive integer, got '$JOBS'" >&2; exit 2; }
  THREADS=$((cores / JOBS > 0 ? cores / JOBS : 1))
}
kill_tree() { local c; for c in $(pgrep -P "$1"); do kill_tree "$c"; done; kill "$1" 2>/dev/null || true; }
stop_all() { local j; for j in $(jobs -p); do kill_tree "$j"; done; wait; exit 1; }
wait_for_slot() { while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n || stop_all; done; }
wait_all() { local p; for p in "$@"; do wait "$p" || stop_all; done; }
