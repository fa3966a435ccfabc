#!/usr/bin/env bash
# One-time set-up on Debian 12 / Ubuntu (idempotent): installs the build and runtime
# dependencies with apt (as root, or through sudo), then configures and builds zoo (Release).
#
#   tools/setup.sh                 # install + build into build/
#   tools/setup.sh --no-install    # build only (dependencies already present)
#   BUILD_DIR=out tools/setup.sh   # another build directory
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD_DIR=${BUILD_DIR:-build}
INSTALL=1
for arg in "$@"; do
  case "$arg" in
    --no-install) INSTALL=0 ;;
    -h|--help) sed -n '2,8p' "$0"; exit 0 ;;
    *) echo "setup.sh: unknown option '$arg' (try --help)" >&2; exit 2 ;;
  esac
done

PACKAGES=(
  build-essential cmake ninja-build ccache pkg-config
  libtorch-dev              # LibTorch 1.13 (CPU)
  libdnnl-dev               # oneDNN's headers: zoo's int8 products call LibTorch's oneDNN directly
  libopenblas0-pthread      # fast BLAS: without it LibTorch's matmuls are ~30x slower
  libtcmalloc-minimal4      # the zoo program's allocator: 2x the 512-token fine-tuning step (docs/results.md)
  libsentencepiece-dev nlohmann-json3-dev libcli11-dev libgtest-dev libgloo-dev
  libicu-dev zlib1g-dev libstb-dev
  libcpp-httplib-dev        # zoo serve's HTTP server
  chromium-headless-shell nodejs   # zoo serve's tests: its page in a real browser, OpenAI's Node client
  dataset-fashion-mnist     # Fashion-MNIST IDX files in /usr/share/datasets/fashion-mnist
  python3-torch python3-numpy python3-nltk python3-sentencepiece python3-regex   # reference scripts used by the tests
  python3-pandas python3-tqdm   # document 000's BERT data preparation (tools/bench/bert_prep_bench.sh)
)

if [ "$INSTALL" = 1 ]; then
  missing=()
  for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    SUDO=""
    if [ "$(id -u)" != 0 ]; then
      command -v sudo >/dev/null || { echo "setup.sh: run as root (or install sudo) to apt-get install: ${missing[*]}" >&2; exit 1; }
      SUDO=sudo
    fi
    echo "setup.sh: installing ${missing[*]}"
    $SUDO apt-get update -q
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
  else
    echo "setup.sh: all packages present"
  fi
fi

GEN=()
command -v ninja >/dev/null && GEN=(-G Ninja)
if [ -f "$BUILD_DIR/CMakeCache.txt" ]; then
  cmake "$BUILD_DIR" >/dev/null
else
  cmake -S . -B "$BUILD_DIR" "${GEN[@]}" -DCMAKE_BUILD_TYPE=Release
fi
cmake --build "$BUILD_DIR" -j "$(nproc)"
echo "setup.sh: built $BUILD_DIR/zoo"
