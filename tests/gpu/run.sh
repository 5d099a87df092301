#!/usr/bin/env bash
# The GPU check of the CUDA backend, on a machine with an NVIDIA GPU and its
# driver, over a PACK made by tests/gpu/prepare.sh on a machine with the
# compiler. For each model: its CUDA library runs through the runtime's
# CUDA path (libcuda.so.1 opened at context creation, the cubin loaded, else
# the PTX), its outputs are compared with the CPU library's (max abs and rel
# error), and its latency (p50 over icc_runner's runs, inputs and outputs
# copied through host memory) is printed. Fails when a model does not run
# or differs from the CPU by more than rtol 1e-3 + atol 1e-4 (fp16: 2e-2).
# With ICC_CUDA_DRIVER=build/tests/libfakecuda.so and a PACK prepared with
# ICC_GPU_SELFTEST=1 it runs without a GPU, to check the script itself.
# Then, when PACK has conformance/ (prepare.sh's "conformance"), the ONNX
# node tests compiled for CUDA run through icc-gpu-conformance against their
# expected outputs (icc-conformance's tolerance); it prints the pass count
# and the failures, and a run that fails or crashes leaves the next test
# to a fresh process. Their failures do not change the status.
# Usage: tests/gpu/run.sh PACK   (about a minute on an H200)
set -uo pipefail
PACK=$(realpath "${1:?usage: tests/gpu/run.sh PACK}")
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
fail=0
printf '%-18s %-8s %12s %12s %12s\n' model status "p50 ms" "max abs err" "max rel err"
for dir in "$PACK"/*/; do
  name=$(basename "$dir")
  [ -f "$dir/cuda.so" ] || continue
  rm -rf "$dir/gpu" && mkdir -p "$dir/gpu"
  [ -f "$dir/emu.so" ] && export ICC_FAKE_CUDA_EMU="$dir/emu.so"   # the stand-in driver's module
  # shellcheck disable=SC2046
  if ! "$PACK/icc_runner" "$dir/cuda.so" $(cat "$dir/args") --save="$dir/gpu" >"$dir/log" 2>&1; then
    printf '%-18s %-8s %s\n' "$name" FAIL "$(tail -1 "$dir/log")"
    fail=1
    continue
  fi
  p50=$(grep -oE 'p50 [0-9.]+' "$dir/log" | cut -d' ' -f2)
  case $name in matmul4096*) p50="$p50 ($(python3 -c "print(f'{2*4096**3/($p50*1e-3)/1e12:.1f}')") TFLOP/s)" ;; esac
  tol=1e-3; case $name in *fp16*) tol=2e-2 ;; esac
  if ! python3 - "$dir" "$name" "$p50" "$tol" <<'PY'
import os, sys
import numpy as np
d, name, p50, tol = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
ok, worst_abs, worst_rel = True, 0.0, 0.0
ref = {}
if os.path.isdir(os.path.join(d, "cpu")):
    ref = {f: np.load(os.path.join(d, "cpu", f)) for f in sorted(os.listdir(os.path.join(d, "cpu")))}
else:   # the MatMul: its reference from its inputs, in f64
    g = os.path.join(d, "gpu")
    ref = {"y.npy": np.load(os.path.join(g, "in_a.npy")).astype(np.float64) @ np.load(os.path.join(g, "in_b.npy"))}
for f, want in ref.items():
    want = want.astype(np.float64)
    got = np.load(os.path.join(d, "gpu", f)).astype(np.float64)
    if got.shape != want.shape:
        print(f"{name}: {f}: shape {got.shape}, want {want.shape}")
        ok = False
        continue
    err = np.abs(got - want)
    worst_abs = max(worst_abs, float(err.max(initial=0)))
    worst_rel = max(worst_rel, float((err / np.maximum(np.abs(want), 1e-6)).max(initial=0)))
    ok &= bool(np.all(err <= 1e-4 + tol * np.abs(want)))
print(f"{name:<18} {'ok' if ok else 'DIFFERS':<8} {p50:>12} {worst_abs:>12.3g} {worst_rel:>12.3g}")
sys.exit(0 if ok else 1)
PY
  then fail=1; fi
done
if [ -d "$PACK/conformance" ]; then
  log=$PACK/conformance.log state=$PACK/conformance.state from=0
  : >"$log"
  while :; do
    "$PACK/icc-gpu-conformance" "$PACK/conformance" --from "$from" --state "$state" >>"$log" 2>&1
    rc=$?
    [ $rc = 0 ] && break
    read -r at name <"$state" || break
    [ "${at:-0}" -ge "$from" ] || break
    [ $rc = 3 ] || echo "FAIL $name: the process ended with status $rc" >>"$log"
    from=$((at + 1))
  done
  echo "ONNX node tests through CUDA: $(grep -c '^ok ' "$log") passed, $(grep -c '^FAIL ' "$log") failed" \
    "($(grep -c . "$PACK/conformance.pack.log" 2>/dev/null || echo ?) lines of packing log)"
  grep '^FAIL ' "$log" | cut -c1-200 | head -60
fi
exit $fail
