#!/usr/bin/env bash
# The main job on the bundled example: installs what is missing, builds
# icc, prints the model's summary, runs it on the bundled input through the
# reference interpreter, then compiles it to digits.so (+ digits.h), runs
# the compiled model through the runtime, and from a C program (app.c) that
# classifies the 360 held-out images.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake -S . -B build >/dev/null
# the build's output less its progress lines; a failed build stops here
# (a build folder left from before would otherwise run stale binaries)
rc=0
cmake --build build -j"$(nproc)" > build/build.log 2>&1 || rc=$?
grep -vE '^\[ *[0-9]+%\]|^-- ' build/build.log || true
if [ "$rc" -ne 0 ]; then
  echo "== build failed (exit $rc): full log in build/build.log" >&2
  exit "$rc"
fi
M=examples/digits
echo "== icc info $M/digits.onnx"
build/icc info $M/digits.onnx
echo "== icc run $M/digits.onnx --input image=$M/digits_input.npy"
build/icc run $M/digits.onnx --input image=$M/digits_input.npy
echo "true labels:     $(cat $M/digits_labels.txt)"
echo "== icc $M/digits.onnx --shape=image:8x1x8x8 --name=digits -o build/digits.so   (ahead of time, LLVM)"
build/icc $M/digits.onnx --shape=image:8x1x8x8 --name=digits -o build/digits.so
echo "== icc run build/digits.so --name=digits --input image=$M/digits_input.npy   (the compiled model, by the runtime)"
build/icc run build/digits.so --name=digits --input image=$M/digits_input.npy
echo "== a C program that includes build/digits.h and links build/digits.so ($M/app.c)"
cc -O2 -Iinclude -Ibuild $M/app.c build/digits.so -Wl,-rpath,"$PWD/build" -o build/digits_app
build/digits_app $M
