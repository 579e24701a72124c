#!/usr/bin/env bash
# Installs the Debian packages shoal needs. Idempotent: installs only what is missing.
#   scripts/install-deps.sh          build, run and test
#   scripts/install-deps.sh --bench  also the PyTorch peers (large)
set -euo pipefail

packages=(build-essential cmake pkg-config git libcli11-dev nlohmann-json3-dev libyaml-cpp-dev
          libnng-dev libopenblas-dev doctest-dev zlib1g-dev dataset-fashion-mnist
          python3 python3-jsonschema openssl iproute2 slurm-wlm munge)
if [[ "${1:-}" == "--bench" ]]; then
  packages+=(python3-torch python3-numpy)
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if (( ${#missing[@]} == 0 )); then
  exit 0
fi

sudo=()
if (( EUID != 0 )); then
  command -v sudo >/dev/null || { echo "install-deps: run as root or install sudo" >&2; exit 1; }
  sudo=(sudo)
fi
echo "install-deps: installing ${missing[*]}" >&2
"${sudo[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
