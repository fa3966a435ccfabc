#!/usr/bin/env bash
# Starts N processes of a data-parallel run on this machine, as torchrun does, without Python:
#
#   tools/launch.sh --nproc 2 -- build/zoo train --config tools/recipes/vit_fashion_mnist.json \
#     --set train.max_time=0
#
# Each process gets RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT (and, unless set,
# OMP_NUM_THREADS = cores / N). When one exits with an error the others are stopped and the
# launcher exits with that status. Several machines: run torchrun, srun or mpirun (docs/usage.md).
#
#   --nproc N          processes (default: 2)
#   --master-port P    rendezvous port on 127.0.0.1 (default: MASTER_PORT, else 29500)
set -uo pipefail

NPROC=2
PORT=${MASTER_PORT:-29500}
while [ $# -gt 0 ]; do
  case "$1" in
    --nproc) NPROC=${2:?--nproc needs a number}; shift 2 ;;
    --nproc=*) NPROC=${1#*=}; shift ;;
    --master-port) PORT=${2:?--master-port needs a number}; shift 2 ;;
    --master-port=*) PORT=${1#*=}; shift ;;
    --) shift; break ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    *) echo "launch.sh: unknown option '$1' (the command goes after --; try --help)" >&2; exit 2 ;;
  esac
done
[ $# -gt 0 ] || { echo "launch.sh: no command (tools/launch.sh --nproc N -- zoo train ...)" >&2; exit 2; }
[[ "$NPROC" =~ ^[1-9][0-9]*$ ]] || { echo "launch.sh: --nproc '$NPROC' is not a positive number" >&2; exit 2; }
[[ "$PORT" =~ ^[0-9]+$ ]] && [ "$PORT" -ge 1 ] && [ "$PORT" -le 65535 ] ||
  { echo "launch.sh: --master-port '$PORT' is not a port number" >&2; exit 2; }

if [ -z "${OMP_NUM_THREADS:-}" ]; then
  threads=$(( $(nproc) / NPROC ))
  export OMP_NUM_THREADS=$(( threads > 0 ? threads : 1 ))
fi

pids=()
stop_all() {
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
}
trap 'stop_all; wait; exit 130' INT TERM

for ((r = 0; r < NPROC; ++r)); do
  RANK=$r LOCAL_RANK=$r WORLD_SIZE=$NPROC LOCAL_WORLD_SIZE=$NPROC MASTER_ADDR=127.0.0.1 MASTER_PORT=$PORT "$@" &
  pids+=($!)
done

status=0
left=$NPROC
while [ "$left" -gt 0 ]; do
  wait -n -p done_pid
  rc=$?
  left=$((left - 1))
  if [ "$rc" -ne 0 ] && [ "$status" -eq 0 ]; then
    for ((r = 0; r < NPROC; ++r)); do [ "${pids[$r]}" = "$done_pid" ] && rank=$r; done
    echo "launch.sh: rank ${rank:-?} exited with status $rc; stopping the other processes" >&2
    status=$rc
    stop_all
  fi
done
exit "$status"
