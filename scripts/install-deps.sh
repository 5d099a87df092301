#!/usr/bin/env bash
# Installs what icc needs to build and test, and nothing else. Idempotent:
# quiet, and touching nothing, when everything is already there.
#   Debian packages: the build (compiler, CMake, protobuf-c, ONNX's .proto,
#     LLVM 19, Check), clang-19 for the libFuzzer targets, and gnuplot for
#     `icc bench --plot`.
#   PyPI packages, for tests and benchmarks only: onnx (its node tests are
#     the conformance oracle; pinned to 1.22.0, the newest release whose
#     wheel still ships the node test data), onnxruntime, numpy, and pytest
#     (the Python package's tests); with ICC_SERVING=1 also ray[serve] and
#     kserve, for the serving examples' tests (large: ray alone is ~70 MB).
set -euo pipefail

APT_PKGS=(build-essential cmake pkg-config libprotobuf-c-dev protobuf-c-compiler
          libonnx-dev llvm-19-dev check clang-19 libclang-rt-19-dev python3 gnuplot-nox)
PIP_PKGS=("onnx==1.22.0" "onnxruntime" "numpy" "pytest")
if [ "${ICC_SERVING:-0}" = 1 ]; then PIP_PKGS+=("ray[serve]" "kserve"); fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

missing=()
for p in "${APT_PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: apt: ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

PY=${PYTHON:-python3}
if ! $PY -m pip --version >/dev/null 2>&1; then
  echo "install-deps: apt: python3-pip"
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq python3-pip >/dev/null
fi
# One check of the installed versions; pip runs only if something differs.
if ! ICC_SERVING=${ICC_SERVING:-0} $PY - <<'PYEOF' 2>/dev/null
import importlib.metadata as m, os, sys
want = {"onnx": "1.22.0", "onnxruntime": None, "numpy": None, "pytest": None}
if os.environ["ICC_SERVING"] == "1":
    want.update({"ray": None, "kserve": None, "fastapi": None, "starlette": None})
for name, ver in want.items():
    have = m.version(name)
    if ver and have != ver:
        sys.exit(1)
PYEOF
then
  echo "install-deps: pip: ${PIP_PKGS[*]}"
  PIP_BREAK_SYSTEM_PACKAGES=1 $PY -m pip install -q --disable-pip-version-check "${PIP_PKGS[@]}"
fi
