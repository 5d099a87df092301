#!/usr/bin/env bash
# The main job on the bundled example: installs what is missing, builds
# icc, prints the model's summary and runs it on the bundled input through
# the reference interpreter.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake -S . -B build >/dev/null
cmake --build build -j"$(nproc)" 2>&1 | grep -vE '^\[ *[0-9]+%\]|^-- ' || true
M=examples/digits
echo "== icc info $M/digits.onnx"
build/icc info $M/digits.onnx
echo "== icc run $M/digits.onnx --input image=$M/digits_input.npy"
build/icc run $M/digits.onnx --input image=$M/digits_input.npy
echo "true labels:     $(cat $M/digits_labels.txt)"
