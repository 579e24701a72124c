#!/usr/bin/env bash
# Installs the Debian packages shoal needs. Idempotent: installs only what is missing.
#   scripts/install-deps.sh run   what building the tools and running a job needs (make demo)
#   scripts/install-deps.sh       that and what the tests, fuzzers, reports and benchmarks need
set -euo pipefail

run=(build-essential cmake pkg-config git libcli11-dev nlohmann-json3-dev libyaml-cpp-dev
     libnng-dev libopenblas-dev libdnnl-dev doctest-dev zlib1g-dev dataset-fashion-mnist
     libturbojpeg0-dev libpng-dev libopencv-imgproc-dev libzip-dev python3 jq)
# The PyTorch peers need python3-torch and python3-numpy, which the tests need
# too (tests/integration/torch_export_check.py); bench/peers/shoal_net.py reads jobs with
# python3-yaml; dl-report draws with matplotlib.
rest=(python3-jsonschema python3-numpy python3-torch python3-torchvision python3-pil python3-matplotlib python3-yaml
      openssl iproute2 slurm-wlm munge
      clang libclang-rt-14-dev  # the fuzzers (make fuzz)
      clang-format shellcheck)  # tests/integration/style_test.sh
case "${1:-all}" in
  run) packages=("${run[@]}") ;;
  all) packages=("${run[@]}" "${rest[@]}") ;;
  *) echo "usage: $0 [run|all]" >&2; exit 2 ;;
esac

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
