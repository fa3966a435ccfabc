#!/usr/bin/env bash
# Fetches the public data sets used by zoo's recipes, from the internet or from a local
# mirror folder, verifies them and unpacks them. Run with --help for usage.
set -euo pipefail

PROG=$(basename "$0")
NAMES=(cmn-eng imdb tinyshakespeare cifar10 fashion-mnist)

# Upstream locations.
URL_CMN=https://www.manythings.org/anki/cmn-eng.zip
URL_IMDB=https://ai.stanford.edu/~amaas/data/sentiment/aclImdb_v1.tar.gz
URL_SHAKESPEARE=https://raw.githubusercontent.com/karpathy/char-rnn/master/data/tinyshakespeare/input.txt
URL_CIFAR10=https://www.cs.toronto.edu/~kriz/cifar-10-binary.tar.gz
FASHION_DIR=/usr/share/datasets/fashion-mnist

# Known checksums. cmn-eng.zip changes as Tatoeba grows, so only the mirror's copy has
# one; the IMDB archive of the mirror is a repack, so both it and upstream's are known.
SHA_CMN_MIRROR=aa264a2447b26ab7c9d413f8321f9e2a779fd134b5118306b6e26a3499b3926e
SHA_IMDB_MIRROR=6c9535f8c47f8efc9d22773a3bd4f1e1fccc6fbcd78237f47bf25cb1dcf88134
SHA_IMDB_UPSTREAM=c40f74a18d3b61f90feba1e17730e0d38e8b97c05fde7008942e91923d1658fe
SHA_SHAKESPEARE=86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed
MD5_CIFAR10=c32a1d4ab5d03f1284b67883e8d87530

usage() {
  cat <<EOF
Usage: $PROG NAME... [--mirror DIR] [--dest DIR]

Fetches data sets into DEST/NAME, verifies them and unpacks archives. Already present
and verified data is left alone, so running it again is cheap.

DEST defaults to zoo's data home, where zoo looks up every data path that starts
with none of /, ./, ../, ~/ (e.g. "path": "cmn-eng/cmn.txt" in a recipe):
\$ZOO_DATA_DIR, else \$XDG_DATA_HOME/zoo/data, else \$HOME/.local/share/zoo/data;
here $DEFAULT_DEST. Paths with a leading /, ./, ../ or ~/ are used as given.
With --dest elsewhere, run zoo with ZOO_DATA_DIR set to that folder.

Names:
  cmn-eng          English-Chinese sentence pairs (manythings.org)  -> cmn-eng/cmn.txt
  imdb             Large Movie Review Dataset v1.0 (Stanford)       -> imdb/aclImdb/
  tinyshakespeare  karpathy/char-rnn's tinyshakespeare              -> tinyshakespeare/input.txt
  cifar10          CIFAR-10, binary version (Toronto)               -> cifar10/cifar-10-batches-bin/
  fashion-mnist    from the Debian package dataset-fashion-mnist    -> $FASHION_DIR
                   (and DEST/fashion-mnist, a link to it)

Options:
  --mirror DIR  copy from a local folder instead of downloading (offline machines:
                $PROG cmn-eng --mirror /path/to/mirror); its layout is
                DIR/cmn-eng/cmn.txt, DIR/imdb/aclImdb_v1.tar.gz,
                DIR/tinyshakespeare/input.txt, DIR/cifar10/cifar-10-binary.tar.gz
  --dest DIR    the data root (default: the data home above); each set goes into
                DIR/NAME
  -h, --help    this help

Archives (imdb, cifar10) are deleted once verified and unpacked.
EOF
}

die() {
  echo "$PROG: error: $*" >&2
  exit 1
}

say() { echo "$PROG: $*"; }

sha256_of() { sha256sum "$1" | cut -d' ' -f1; }
md5_of() { md5sum "$1" | cut -d' ' -f1; }

# The data home, by the rule core/paths.cc applies (the XDG spec ignores a relative
# XDG_DATA_HOME), so that zoo finds what this script fetched without being told where.
data_home() {
  if [[ -n ${ZOO_DATA_DIR:-} ]]; then
    echo "$ZOO_DATA_DIR"
  elif [[ ${XDG_DATA_HOME:-} == /* ]]; then
    echo "$XDG_DATA_HOME/zoo/data"
  elif [[ -n ${HOME:-} ]]; then
    echo "$HOME/.local/share/zoo/data"
  fi
}
DEFAULT_DEST=$(data_home)
MIRROR=
DEST=$DEFAULT_DEST
REQUESTED=()

while [[ $# -gt 0 ]]; do
  case $1 in
    -h | --help) usage; exit 0 ;;
    --mirror) [[ $# -ge 2 ]] || { echo "$PROG: --mirror needs a folder" >&2; exit 2; }
      MIRROR=$2; shift 2 ;;
    --mirror=*) MIRROR=${1#--mirror=}; shift ;;
    --dest) [[ $# -ge 2 ]] || { echo "$PROG: --dest needs a folder" >&2; exit 2; }
      DEST=$2; shift 2 ;;
    --dest=*) DEST=${1#--dest=}; shift ;;
    -*) echo "$PROG: unknown option '$1' (see --help)" >&2; exit 2 ;;
    *) REQUESTED+=("$1"); shift ;;
  esac
done

if [[ ${#REQUESTED[@]} -eq 0 ]]; then
  usage >&2
  exit 2
fi
for name in "${REQUESTED[@]}"; do
  if [[ " ${NAMES[*]} " != *" $name "* ]]; then
    echo "$PROG: unknown data set '$name'; valid names: ${NAMES[*]}" >&2
    exit 2
  fi
done
[[ -n $DEST ]] || die "no data home: ZOO_DATA_DIR, XDG_DATA_HOME and HOME are all unset; use --dest DIR"
if [[ -n $MIRROR && ! -d $MIRROR ]]; then
  die "mirror folder $MIRROR does not exist"
fi

# Temporary files and folders are removed however the script ends.
CLEANUP=()
cleanup() {
  local p
  for p in "${CLEANUP[@]+"${CLEANUP[@]}"}"; do rm -rf -- "$p"; done
}
trap cleanup EXIT

# download URL FILE: fetches with a timeout; one clear line and exit 1 when it fails.
download() {
  local url=$1 out=$2 rc=0 offline
  say "downloading $url"
  if command -v curl >/dev/null; then
    local progress=-s
    [[ -t 2 ]] && progress=-#
    curl -fL $progress --connect-timeout 20 --retry 2 --max-time 3600 \
      -A "zoo-fetch-data (curl)" -o "$out" "$url" || rc=$?
    # 5/6: cannot resolve, 7: cannot connect, 28: timed out, 35/56: connection broken.
    [[ $rc -eq 5 || $rc -eq 6 || $rc -eq 7 || $rc -eq 28 || $rc -eq 35 || $rc -eq 56 ]] &&
      offline=1
  elif command -v wget >/dev/null; then
    wget -q --timeout=20 --tries=2 -U "zoo-fetch-data (wget)" -O "$out" "$url" || rc=$?
    [[ $rc -eq 4 ]] && offline=1  # network failure
  else
    die "neither curl nor wget is installed; install one or use --mirror DIR"
  fi
  if [[ $rc -ne 0 ]]; then
    if [[ -n ${offline:-} ]]; then
      die "cannot reach $url: this machine seems to be offline;" \
        "copy from a local mirror with --mirror DIR"
    fi
    die "download of $url failed (exit code $rc; the server may have moved it);" \
      "retry later or use --mirror DIR"
  fi
}

# obtain REL URL OUT: copies MIRROR/REL, or downloads URL, into OUT. Sets SOURCE to
# where it came from, for messages.
SOURCE=
obtain() {
  local rel=$1 url=$2 out=$3
  SOURCE=$url
  [[ -n $MIRROR ]] && SOURCE=$MIRROR/$rel
  if [[ -n $MIRROR ]]; then
    [[ -f $MIRROR/$rel ]] || die "the mirror has no $MIRROR/$rel (drop --mirror to download it)"
    say "copying $MIRROR/$rel"
    cp -- "$MIRROR/$rel" "$out"
    chmod u+w -- "$out"
  else
    download "$url" "$out"
  fi
}

# check_sum FILE KIND SUM...: KIND is sha256 or md5; FILE must match one of the sums.
check_sum() {
  local file=$1 kind=$2 got want
  shift 2
  got=$("${kind}_of" "$file")
  for want in "$@"; do
    [[ $got == "$want" ]] && return 0
  done
  die "$kind mismatch for ${SOURCE:-$file}: got $got, expected $1" \
    "(damaged or changed; nothing was installed)"
}

# A tab-separated text file: its first line has at least two tab-separated fields.
is_tsv() { [[ -s $1 ]] && awk -F'\t' 'NR == 1 { exit (NF >= 2) ? 0 : 1 }' "$1"; }

fetch_tinyshakespeare() {
  local dir=$1 tmp
  if [[ -f $dir/input.txt && $(sha256_of "$dir/input.txt") == "$SHA_SHAKESPEARE" ]]; then
    say "tinyshakespeare: $dir/input.txt already present and verified"
    return
  fi
  [[ -f $dir/input.txt ]] && say "tinyshakespeare: $dir/input.txt fails verification, replacing it"
  tmp=$dir/.input.txt.part
  CLEANUP+=("$tmp")
  obtain tinyshakespeare/input.txt "$URL_SHAKESPEARE" "$tmp"
  check_sum "$tmp" sha256 "$SHA_SHAKESPEARE"
  mv -f -- "$tmp" "$dir/input.txt"
  say "tinyshakespeare: ready in $dir/input.txt"
}

fetch_cmn_eng() {
  local dir=$1 tmp
  if [[ -f $dir/cmn.txt ]] &&
    { [[ -f $dir/.zoo-verified ]] && is_tsv "$dir/cmn.txt" ||
      [[ $(sha256_of "$dir/cmn.txt") == "$SHA_CMN_MIRROR" ]]; }; then
    say "cmn-eng: $dir/cmn.txt already present and verified"
    return
  fi
  rm -f -- "$dir/.zoo-verified"
  tmp=$(mktemp -d "$dir/.part.XXXXXX")
  CLEANUP+=("$tmp")
  if [[ -n $MIRROR ]]; then
    obtain cmn-eng/cmn.txt "$URL_CMN" "$tmp/cmn.txt"
    check_sum "$tmp/cmn.txt" sha256 "$SHA_CMN_MIRROR"
  else
    command -v unzip >/dev/null || die "unzip is not installed (apt-get install unzip)"
    download "$URL_CMN" "$tmp/cmn-eng.zip"
    unzip -q -o "$tmp/cmn-eng.zip" cmn.txt -d "$tmp" 2>/dev/null ||
      die "$URL_CMN did not unzip to a cmn.txt (the download may be damaged or an error page)"
  fi
  # Upstream changes over time: verify the shape rather than a checksum.
  is_tsv "$tmp/cmn.txt" || die "cmn.txt from $URL_CMN is not tab-separated text"
  mv -f -- "$tmp/cmn.txt" "$dir/cmn.txt"
  touch "$dir/.zoo-verified"
  say "cmn-eng: ready in $dir/cmn.txt ($(wc -l <"$dir/cmn.txt") pairs)"
}

# fetch_archive NAME DIR REL URL TOPDIR KIND SUM...: fetches a .tar.gz, verifies it,
# unpacks its TOPDIR into DIR and deletes it.
fetch_archive() {
  local name=$1 dir=$2 rel=$3 url=$4 top=$5 kind=$6 tmp archive
  shift 6
  if [[ -d $dir/$top && -f $dir/.zoo-verified ]]; then
    say "$name: $dir/$top already present and verified"
    return
  fi
  rm -f -- "$dir/.zoo-verified"
  tmp=$(mktemp -d "$dir/.part.XXXXXX")
  CLEANUP+=("$tmp")
  archive=$tmp/$(basename "$rel")
  obtain "$rel" "$url" "$archive"
  check_sum "$archive" "$kind" "$@"
  say "$name: unpacking"
  mkdir "$tmp/unpacked"
  tar -xzf "$archive" -C "$tmp/unpacked" || die "$archive: cannot unpack (damaged archive?)"
  [[ -d $tmp/unpacked/$top ]] || die "$archive does not contain $top/"
  rm -rf -- "${dir:?}/$top"
  mv -- "$tmp/unpacked/$top" "$dir/$top"
  touch "$dir/.zoo-verified"
  say "$name: ready in $dir/$top"
}

fetch_fashion_mnist() {
  local f missing=0
  for f in train-images-idx3-ubyte train-labels-idx1-ubyte t10k-images-idx3-ubyte \
    t10k-labels-idx1-ubyte; do
    [[ -f $FASHION_DIR/$f.gz || -f $FASHION_DIR/$f ]] || missing=1
  done
  if [[ $missing -eq 1 ]]; then
    if [[ $(id -u) -eq 0 ]]; then
      say "fashion-mnist: installing the Debian package dataset-fashion-mnist"
      apt-get install -y dataset-fashion-mnist ||
        die "apt-get install dataset-fashion-mnist failed (run apt-get update first?)"
    else
      die "fashion-mnist comes from Debian: run 'sudo apt-get install dataset-fashion-mnist'" \
        "(it installs into $FASHION_DIR)"
    fi
  fi
  # A link in DEST lets a config name it like the other sets (data.path=fashion-mnist);
  # the recipes keep Debian's absolute path, which needs no data home.
  if [[ ! -e $DEST/fashion-mnist ]]; then
    mkdir -p -- "$DEST" && ln -s -- "$FASHION_DIR" "$DEST/fashion-mnist" ||
      die "cannot create the link $DEST/fashion-mnist"
  fi
  say "fashion-mnist: ready in $FASHION_DIR (also $DEST/fashion-mnist)"
}

for name in "${REQUESTED[@]}"; do
  if [[ $name == fashion-mnist ]]; then
    fetch_fashion_mnist
    continue
  fi
  dir=$DEST/$name
  mkdir -p -- "$dir" || die "cannot create $dir"
  case $name in
    tinyshakespeare) fetch_tinyshakespeare "$dir" ;;
    cmn-eng) fetch_cmn_eng "$dir" ;;
    imdb)
      fetch_archive imdb "$dir" imdb/aclImdb_v1.tar.gz "$URL_IMDB" aclImdb sha256 \
        "$SHA_IMDB_UPSTREAM" "$SHA_IMDB_MIRROR" ;;
    cifar10)
      fetch_archive cifar10 "$dir" cifar10/cifar-10-binary.tar.gz "$URL_CIFAR10" \
        cifar-10-batches-bin md5 "$MD5_CIFAR10" ;;
  esac
done
if [[ $DEST != "$DEFAULT_DEST" ]]; then
  say "note: $DEST is not zoo's data home ($DEFAULT_DEST): run zoo with ZOO_DATA_DIR=$DEST" \
    "so that recipes find the data there"
fi
