#!/usr/bin/env bash
# Prepares the GPU check (tests/gpu/run.sh) on a machine without a GPU: the
# GPU machine this project is lent is bare (no LLVM, protobuf-c or Check, and
# nothing can be installed there), so everything that needs the compiler
# happens here. Writes into PACK:
#   icc_runner                      examples/runner/icc_runner.c, linked with
#                                   the runtime (it needs only libc there)
#   <model>/cuda.so                 the model compiled with --target=cuda
#                                   --cuda-arch=sm_90 (NVRTC's cubin and PTX)
#   <model>/cpu/<output>.npy        the CPU library's outputs for
#                                   icc_runner's fixed inputs: the reference
#                                   (for the MatMul, 64 MB, none: run.sh
#                                   multiplies the inputs in numpy there)
#   <model>/args                    icc_runner's arguments for that model
#   conformance/, icc-gpu-conformance  the ONNX node tests compiled for CUDA
#                                   (icc-conformance --cuda-pack: each test's
#                                   library, its data sets' inputs and expected
#                                   outputs as .npy) and tests/gpu/conformance.c,
#                                   which runs them there (model name
#                                   "conformance"; about 5 minutes here)
# Models: the bundled digits MLP (batch 8), the ONNX package's light
# ResNet-50, a BERT-base encoder layer (seq 128) in fp32 and with
# --precision=fp16 (issue 11's 1 ms target; its reference is the CPU
# library at fp16 too) and a 4096^3 MatMul of f16 tensors (f32
# accumulation: the tensor cores on sm_80 and later), all static.
# ICC_GPU_SELFTEST=1 also builds each model's (and each node test's) CUDA C
# for the CPU (emu.so), so that run.sh can be checked here over
# tests/cuda/fake_driver.c; ICC_GPU_CONFORMANCE_FILTER=S[,S...] packs only
# the node tests whose names contain one of them.
# Usage: tests/gpu/prepare.sh PACK [MODEL...]   (default: all; then carry
# PACK to the GPU machine and run tests/gpu/run.sh PACK there). About 6
# minutes here; PACK ~190 MB, ~48 MB as a tar.xz (the device tool carries
# 64 MiB: carry the archive and unpack it there).
set -euo pipefail
cd "$(dirname "$0")/../.."
PACK=${1:?usage: tests/gpu/prepare.sh PACK [MODEL...]}
shift
ONLY=" $* "
mkdir -p "$PACK"
PACK=$(realpath "$PACK")
[ -x build/icc ] || { cmake -S . -B build >/dev/null && cmake --build build -j"$(nproc)" >/dev/null; }
ICC=$PWD/build/icc
cc -O2 -Iinclude examples/runner/icc_runner.c build/libiccrt.a -lpthread -ldl -lm -o "$PACK/icc_runner"
if [ "$ONLY" = "  " ] || [[ "$ONLY" == *" conformance "* ]]; then
  echo "== conformance" >&2
  cmake --build build --target icc-conformance icc-gpu-conformance >/dev/null
  cp build/tests/icc-gpu-conformance "$PACK/"
  NODE=$(python3 -c "import onnx, os; print(os.path.join(os.path.dirname(onnx.__file__), 'backend/test/data/node'))")
  rm -rf "$PACK/conformance"
  # ICC_GPU_CONFORMANCE_FILTER: only those tests (icc-conformance --filter)
  build/tests/icc-conformance --data "$NODE" --cuda-pack "$PACK/conformance" -O2 \
    ${ICC_GPU_CONFORMANCE_FILTER:+--filter "$ICC_GPU_CONFORMANCE_FILTER"} >"$PACK/conformance.pack.log" 2>&1 || true
  tail -1 "$PACK/conformance.pack.log" >&2
fi
SRC=$(mktemp -d)
trap 'rm -rf "$SRC"' EXIT
LIGHT=$(python3 -c "import onnx, os; print(os.path.join(os.path.dirname(onnx.__file__), 'backend/test/data/light'))")
python3 tests/models/make_bert_layer.py "$SRC" >/dev/null
python3 - "$SRC/matmul4096.onnx" <<'PY'
import sys
from onnx import TensorProto, helper, save
n = 4096
g = helper.make_graph([helper.make_node("MatMul", ["a", "b"], ["y"])], "matmul4096",
                      [helper.make_tensor_value_info("a", TensorProto.FLOAT16, [n, n]),
                       helper.make_tensor_value_info("b", TensorProto.FLOAT16, [n, n])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT16, [n, n])])
save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), sys.argv[1])
PY
# name | model | compile options | icc_runner options
MODELS=(
  "digits|examples/digits/digits.onnx|--shape=image:8x1x8x8|--runs=200"
  "resnet50|$LIGHT/light_resnet50.onnx||--runs=20"
  "bert_layer|$SRC/bert_layer.onnx||--runs=20"
  "bert_layer_fp16|$SRC/bert_layer.onnx|--precision=fp16|--runs=20"
  "matmul4096_fp16|$SRC/matmul4096.onnx||--runs=20 --save-inputs"
)
for spec in "${MODELS[@]}"; do
  IFS='|' read -r name model copts ropts <<<"$spec"
  [ "$ONLY" = "  " ] || [[ "$ONLY" == *" $name "* ]] || continue
  echo "== $name" >&2
  mkdir -p "$PACK/$name"
  # shellcheck disable=SC2086
  "$ICC" "$model" $copts --target=cuda --cuda-arch=sm_90 -o "$PACK/$name/cuda.so"
  rm -f "$PACK/$name/cuda.h"
  echo "$ropts" >"$PACK/$name/args"
  if [ -n "${ICC_GPU_SELFTEST:-}" ]; then
    # for run.sh over the stand-in driver (tests/cuda/fake_driver.c), here
    # shellcheck disable=SC2086
    "$ICC" "$model" $copts --target=cuda --emit=cuda -o "$SRC/$name.cu"
    c++ -x c++ -std=c++17 -O1 -w -shared -fPIC -include tests/cuda/emu.h -o "$PACK/$name/emu.so" "$SRC/$name.cu"
  fi
  [[ $name == matmul* ]] && continue
  mkdir -p "$PACK/$name/cpu"
  # shellcheck disable=SC2086
  "$ICC" "$model" $copts -o "$SRC/$name.cpu.so"
  "$PACK/icc_runner" "$SRC/$name.cpu.so" --runs=1 --save="$PACK/$name/cpu" >/dev/null
done
du -sh "$PACK" >&2
