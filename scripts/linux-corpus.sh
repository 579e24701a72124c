#!/usr/bin/env bash
# The char-RNN's corpus as SINGA trained it (§4.2.3): C source of the Linux
# kernel, from Debian's linux-source-6.1 package (installed when missing).
# The .c and .h files of kernel/ and mm/, in sorted path order, are
# concatenated whole until the corpus holds at least MB megabytes
# (default 6): the same bytes on every machine with the same package version.
#
#   scripts/linux-corpus.sh [OUT [MB]]     default OUT: runs/corpus/linux.txt
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=${1:-$root/runs/corpus/linux.txt}
megabytes=${2:-6}
archive=/usr/src/linux-source-6.1.tar.xz
if [[ ! -f $archive ]]; then
  sudo=$( ((EUID == 0)) || echo sudo)
  $sudo apt-get install -y linux-source-6.1 >/dev/null
fi
[[ -f $out ]] && exit 0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
tar -xJf "$archive" -C "$tmp" --wildcards 'linux-source-6.1/kernel/*' 'linux-source-6.1/mm/*'
mkdir -p "$(dirname "$out")"
limit=$((megabytes * 1024 * 1024))
(cd "$tmp/linux-source-6.1" && find kernel mm -type f \( -name '*.c' -o -name '*.h' \) | LC_ALL=C sort) |
  while read -r file; do
    cat "$tmp/linux-source-6.1/$file"
    size=$((${size:-0} + $(stat -c %s "$tmp/linux-source-6.1/$file")))
    ((size < limit)) || break
  done >"$out.tmp"
mv "$out.tmp" "$out"
echo "$out: $(stat -c %s "$out") bytes"
