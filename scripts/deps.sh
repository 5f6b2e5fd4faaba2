#!/bin/sh
# Installs the Debian packages kdispatch needs to build and test, when run as
# root; otherwise prints the exact apt-get line and fails. Extra package names
# may be given as arguments (CI adds clang).
set -eu
# The OpenCL backend (backends/opencl): the ICD loader and headers, PoCL (a CPU
# OpenCL platform, so its tests run on any machine) and CLBlast.
pkgs="cmake make gcc pkg-config libcmocka-dev libyaml-dev libopenblas-dev libedit-dev patch ocl-icd-opencl-dev opencl-headers pocl-opencl-icd libclblast-dev clinfo $*"
missing=""
for p in $pkgs; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing="$missing $p"
  fi
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" -eq 0 ]; then
  echo "deps: installing$missing"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends $missing
else
  echo "deps: missing Debian packages. Run:" >&2
  echo "  sudo apt-get install -y$missing" >&2
  exit 1
fi
