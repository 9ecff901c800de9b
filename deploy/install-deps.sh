#!/usr/bin/env bash
# install-deps.sh: installs the Debian packages clsolve builds and tests with,
# and only those that are missing (dpkg-query first, apt-get only when needed).
# Usage: deploy/install-deps.sh [--bench]   (--bench adds the peers for benchmarks)
set -euo pipefail
# libcurl4-openssl-dev: the client commands (https, proxies); libsystemd-dev:
# sd_notify for Type=notify; git: the commit in --version. For the tests:
# groff-base and systemd (man pages, systemd-analyze), stunnel4 and openssl
# (a TLS endpoint with a certificate made by the test), python3-yaml (the
# OpenAPI document), python3-venv and python3-pip (pip install ./python),
# python3-numpy and python3-scipy (the Python client's numpy and scipy paths),
# python3-prometheus-client (a real parser for /metrics after hostile requests)
pkgs="build-essential cmake pkg-config ocl-icd-opencl-dev opencl-headers pocl-opencl-icd
      clinfo libopenmpi-dev openmpi-bin libmicrohttpd-dev libjansson-dev zlib1g-dev python3
      curl chromium iproute2 clang libclang-rt-14-dev valgrind wrk git
      libcurl4-openssl-dev libsystemd-dev groff-base systemd stunnel4 openssl python3-yaml
      python3-venv python3-pip python3-numpy python3-scipy python3-prometheus-client"
if [ "${1:-}" = "--bench" ]; then
  pkgs="$pkgs python3-petsc4py-real"
fi
missing=""
for p in $pkgs; do
  st=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  case "$st" in *"install ok installed"*) ;; *) missing="$missing $p" ;; esac
done
if [ -z "$missing" ]; then
  echo "install-deps: everything is installed"
  exit 0
fi
echo "install-deps: installing$missing"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# shellcheck disable=SC2086
$SUDO apt-get install -y -qq --no-install-recommends $missing
