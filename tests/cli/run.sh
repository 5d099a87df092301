#!/usr/bin/env bash
# Tests of the icc driver's command line: help, version, info, emit, opt,
# run (checked against ONNX Runtime on the bundled example), and its errors
# (one line, exit 1, no partial output). Usage: tests/cli/run.sh ICC
set -uo pipefail
ICC=$(realpath "$1")
cd "$(dirname "$0")/../.."
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
M=examples/digits/digits.onnx
X=examples/digits/digits_input.npy
pass=0 fail=0

check() { # name, then a command that must succeed
  local name=$1; shift
  if "$@" >"$T/out" 2>"$T/err"; then pass=$((pass + 1)); echo "ok   $name"
  else fail=$((fail + 1)); echo "FAIL $name"; head -5 "$T/out" "$T/err"; fi
}

# fails_cleanly NAME REGEX CMD...: exit 1, one stderr line "icc: error: ..." matching REGEX
fails_cleanly() {
  local name=$1 re=$2; shift 2
  "$@" >"$T/out" 2>"$T/err"
  local rc=$?
  if [ $rc -eq 1 ] && [ "$(wc -l <"$T/err")" -eq 1 ] && grep -qE "^icc: error: .*$re" "$T/err"; then
    pass=$((pass + 1)); echo "ok   $name"
  else
    fail=$((fail + 1)); echo "FAIL $name (exit $rc)"; head -3 "$T/err"
  fi
}

help_lists_options() {
  "$ICC" --help >"$T/help" || return 1
  for opt in --emit= -o --input --name= --help --version --bind= --weights= info run opt verify; do
    grep -q -- "$opt" "$T/help" || { echo "--help lacks $opt"; return 1; }
  done
}
check "--help lists every option" help_lists_options
check "--version" sh -c "'$ICC' --version | grep -qE '^icc [0-9]+\.[0-9]+\.[0-9]+ \(LLVM 19'"

info_digits() {
  "$ICC" info "$M" >"$T/info" || return 1
  grep -q "image: f32\[N,1,8,8\]" "$T/info" && grep -q "probs: f32\[N,10\]" "$T/info" &&
    grep -qE "^parameters: 2410 " "$T/info" && grep -qE "^  Gemm +2$" "$T/info" &&
    grep -q "^nodes: 5$" "$T/info" && grep -q "^FLOPs: 4808 .*symbolic dims taken as 1" "$T/info"
}
check "info: inputs, outputs, params, op histogram" info_digits

emit_opt_roundtrip() {
  "$ICC" "$M" --emit=ir -o "$T/d.icc" && "$ICC" opt "$T/d.icc" -o "$T/d2.icc" && cmp "$T/d.icc" "$T/d2.icc" &&
    "$ICC" "$M" --emit=ir | cmp - "$T/d.icc"
}
check "--emit=ir then opt round-trips identically" emit_opt_roundtrip

run_matches_onnxruntime() {
  "$ICC" run "$M" --input image="$X" -o "$T/out_dir" || return 1
  python3 - "$M" "$X" "$T/out_dir/probs.npy" <<'PY'
import sys, numpy as np, onnxruntime as ort
m, x, got = sys.argv[1:]
want = ort.InferenceSession(m, providers=["CPUExecutionProvider"]).run(None, {"image": np.load(x)})[0]
got = np.load(got)
assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, got.dtype)
np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
PY
}
check "run -o writes outputs matching ONNX Runtime" run_matches_onnxruntime

emit_dot() {
  "$ICC" "$M" --emit=dot -o "$T/d.dot" || return 1
  head -1 "$T/d.dot" | grep -q '^digraph "digits_mlp" {$' && tail -1 "$T/d.dot" | grep -q '^}$' &&
    [ "$(grep -c -- ' -> ' "$T/d.dot")" -eq 10 ] && grep -q 'label="Gemm\\nfc1\\nf32\[N,32\]"' "$T/d.dot"
}
check "--emit=dot writes a Graphviz digraph" emit_dot

run_optimized_same() {
  "$ICC" run "$M" --input image="$X" -o "$T/o0" -O0 && "$ICC" run "$M" --input image="$X" -o "$T/o2" -O2 &&
    cmp "$T/o0/probs.npy" "$T/o2/probs.npy"
}
check "run -O2 gives the outputs of -O0" run_optimized_same

passes_flags() {
  "$ICC" "$M" --emit=ir -O2 --time-passes --stats --print-after=dce -o "$T/p.icc" 2>"$T/perr" || return 1
  grep -q "^# pass timings (wall)" "$T/perr" && grep -q "^# IR after dce" "$T/perr" &&
    grep -q "^# cse: " "$T/perr" && "$ICC" --list-passes | grep -q "^  -O2  "
}
check "pass flags: --time-passes, --stats, --print-after, --list-passes" passes_flags
# A library's large kernels are optimized and generated in parallel modules
# (ICC_COMPILE_THREADS caps them): the same outputs, bit for bit, as one
# module; --time-passes says how many there were; a bad value warns.
parallel_codegen() {
  python3 - "$T" <<'PY' || return 1
import sys, numpy as np, onnx
from onnx import helper, TensorProto, numpy_helper
t, rng = sys.argv[1], np.random.default_rng(3)
nodes, inits, x = [], [], "x"
for i in range(6):
    inits.append(numpy_helper.from_array(rng.standard_normal((16, 16, 3, 3)).astype(np.float32) * 0.2, "w%d" % i))
    nodes.append(helper.make_node("Conv", [x, "w%d" % i], ["c%d" % i], pads=[1, 1, 1, 1]))
    nodes.append(helper.make_node("Tanh", ["c%d" % i], ["y%d" % i]))
    x = "y%d" % i
g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16, 12, 12])],
                      [helper.make_tensor_value_info(x, TensorProto.FLOAT, [1, 16, 12, 12])], inits)
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), t + "/par.onnx")
np.save(t + "/par_x.npy", rng.standard_normal((1, 16, 12, 12)).astype(np.float32))
PY
  ICC_COMPILE_THREADS=1 "$ICC" "$T/par.onnx" -O2 -o "$T/par1.so" --time-passes 2>"$T/par1_err" &&
    ICC_COMPILE_THREADS=3 "$ICC" "$T/par.onnx" -O2 -o "$T/par3.so" --time-passes 2>"$T/par3_err" || return 1
  grep -q "optimize, generate, link (1 module)" "$T/par1_err" &&
    grep -qE "optimize, generate, link \([23] modules\)" "$T/par3_err" || { cat "$T/par1_err" "$T/par3_err"; return 1; }
  "$ICC" run "$T/par1.so" --input x="$T/par_x.npy" -o "$T/par1_out" &&
    "$ICC" run "$T/par3.so" --input x="$T/par_x.npy" -o "$T/par3_out" &&
    "$ICC" run "$T/par.onnx" --input x="$T/par_x.npy" -o "$T/pari_out" || return 1
  python3 -c "
import numpy as np, glob
a, b, i = (np.load(glob.glob('$T/%s/*.npy' % d)[0]) for d in ('par1_out', 'par3_out', 'pari_out'))
np.testing.assert_array_equal(a, b)
np.testing.assert_allclose(a, i, rtol=1e-4, atol=1e-5)" || return 1
  ICC_COMPILE_THREADS=x2 "$ICC" "$T/par.onnx" -O2 -o "$T/parx.so" 2>"$T/parx_err" &&
    grep -q "ICC_COMPILE_THREADS='x2' is not a positive number; ignored" "$T/parx_err" || { cat "$T/parx_err"; return 1; }
}
check "parallel code generation: the same library from 1 and 3 modules; a bad ICC_COMPILE_THREADS warns" parallel_codegen
# With no -O, compiling and info run the -O3 pipeline (the fastest): its
# layout pass blocks the Convs of the parallel-codegen model above.
default_level() {
  "$ICC" info "$T/par.onnx" | grep -q "^after -O3:" || return 1
  "$ICC" "$T/par.onnx" --emit=kernels -o "$T/dflt.txt" && "$ICC" "$T/par.onnx" -O3 --emit=kernels -o "$T/o3.txt" &&
    "$ICC" "$T/par.onnx" -O2 --emit=kernels -o "$T/o2.txt" || return 1
  cmp -s "$T/dflt.txt" "$T/o3.txt" && ! cmp -s "$T/dflt.txt" "$T/o2.txt" && grep -q _nchwc "$T/dflt.txt"
}
check "the default level is -O3: info says so, and the kernels are -O3's" default_level
# LLVM's remarks on its own transformations ("loop not vectorized", found by
# the differential fuzzer on a grouped, padded 1-D Conv) do not reach stderr.
no_llvm_remarks() {
  python3 - "$T" <<'PY' || return 1
import sys, numpy as np, onnx
from onnx import helper, TensorProto, numpy_helper
w = numpy_helper.from_array(np.ones((8, 4, 1), np.float32), "w")
nodes = [helper.make_node("Conv", ["x", "w"], ["c"], group=2, kernel_shape=[1], pads=[1, 0]),
         helper.make_node("Tanh", ["c"], ["y"])]
g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8, 1])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [w])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), sys.argv[1] + "/remark.onnx")
PY
  "$ICC" "$T/remark.onnx" -O3 -o "$T/remark.so" 2>"$T/remark_err" && [ ! -s "$T/remark_err" ] || { cat "$T/remark_err"; return 1; }
}
check "LLVM's remarks and warnings stay off stderr" no_llvm_remarks
fails_cleanly "unknown pass is named" "unknown pass 'nosuch'" "$ICC" "$M" --emit=ir --passes=nosuch
# A graph output declared with another rank than it computes (ddddocr's
# captcha model: [1, seqlen] for a [T, 1, 8210] value): compiled with the
# computed shape and one note, as ONNX Runtime runs it with a warning.
declared_shape_mismatch() {
  python3 - "$T" <<'PY' || return 1
import sys, onnx
from onnx import helper, TensorProto
g = helper.make_graph([helper.make_node("Flatten", ["x"], ["y"], axis=0)], "g",
                      [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 6, 1])])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), sys.argv[1] + "/declmis.onnx")
PY
  "$ICC" "$T/declmis.onnx" -o "$T/declmis.so" 2>"$T/declmis_err" &&
    [ "$(wc -l <"$T/declmis_err")" -eq 1 ] &&
    grep -q "^icc: note: .*declmis.onnx: 1 value declared with a shape that disagrees with the computed one, which is used (as ONNX Runtime does): node .* output 0 is declared with rank 3 but has rank 2" "$T/declmis_err" &&
    grep -q "outputs: y: f32\[1,6\]$" "$T/declmis.h" || { cat "$T/declmis_err"; return 1; }
}
check "a graph output declared with another shape: the computed one, with a note" declared_shape_mismatch

reproducer_on_failure() {
  cat >"$T/bad_gather.icc" <<'ICC'
graph @g(%x: f32[2]) -> (%y) {
  %d = const f32[3] [1.0, 2.0, 3.0]
  %i = const i64[1] [7]
  %c = Gather(%d, %i) {axis = 0} : f32[1]
  %y = Add(%x, %c) : f32[2]
}
ICC
  ! "$ICC" opt "$T/bad_gather.icc" --passes=fold,dce --reproducer="$T/repro.icc" 2>"$T/rerr" &&
    grep -q "reproducer: $T/repro.icc" "$T/rerr" && grep -q "^# re-run: icc opt .* --passes=fold,dce" "$T/repro.icc" &&
    "$ICC" opt "$T/repro.icc" >/dev/null &&
    ! "$ICC" opt "$T/bad_gather.icc" --passes=fold 2>"$T/rerr2" &&
    ! grep -q "reproducer: " "$T/rerr2" && grep -q -- "--reproducer=FILE" "$T/rerr2"
}
check "a failing pass writes a reproducer that opt re-reads (opt-in)" reproducer_on_failure

compile_and_run() {
  cat >"$T/ew.icc" <<'ICC'
graph @ew<N>(%x: f32[N,8], %m: f32[8]) -> (%y) {
  %w = const f32[1,8] [0.5, -1.0, 2.0, 0.25, 1.5, -0.5, 3.0, 1.0]
  %a = Mul(%x, %m) : f32[N,8]
  %b = Tanh(%a) : f32[N,8]
  %c = Add(%b, %w) : f32[N,8]
  %y = Sigmoid(%c) : f32[N,8]
}
ICC
  python3 -c "import numpy as np; np.save('$T/ewx.npy', np.linspace(-2, 2, 48, dtype=np.float32).reshape(6, 8)); np.save('$T/ewm.npy', np.linspace(0, 1, 8, dtype=np.float32))"
  "$ICC" "$T/ew.icc" --shape=x:6x8 -o "$T/ew.so" && [ -f "$T/ew.h" ] &&
    cc -std=c99 -Wall -Werror -fsyntax-only -I include -x c "$T/ew.h" &&
    "$ICC" run "$T/ew.so" --input x="$T/ewx.npy" --input m="$T/ewm.npy" -o "$T/c" &&
    "$ICC" run "$T/ew.icc" --input x="$T/ewx.npy" --input m="$T/ewm.npy" -o "$T/i" &&
    python3 -c "import numpy as np; a = np.load('$T/c/y.npy'); b = np.load('$T/i/y.npy'); np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)"
}
check "compile to .so + .h, run it, match the interpreter" compile_and_run

compiled_digits_matches_onnxruntime() {
  "$ICC" "$M" --shape=image:8x1x8x8 -o "$T/digits.so" &&
    "$ICC" run "$T/digits.so" --input image="$X" -o "$T/dc" || return 1
  python3 - "$M" "$X" "$T/dc/probs.npy" <<'PY'
import sys, numpy as np, onnxruntime as ort
m, x, got = sys.argv[1:]
want = ort.InferenceSession(m, providers=["CPUExecutionProvider"]).run(None, {"image": np.load(x)})[0]
np.testing.assert_allclose(np.load(got), want, rtol=1e-5, atol=1e-6)
PY
}
check "the digits MLP compiled to .so matches ONNX Runtime" compiled_digits_matches_onnxruntime

compile_dumps() {
  # (to files first: grep -q closing a pipe early would fail the writer under pipefail)
  # The chain is one fused kernel, named after its last node (index 3). Too
  # small to split over threads, it is called directly from run, which LLVM
  # inlines: the assembly has run, with the kernel's vector code in it.
  "$ICC" "$T/ew.icc" --shape=x:6x8 --emit=kernels >"$T/k.txt" && grep -q "^kernel @model_k3(" "$T/k.txt" &&
    [ "$(grep -c "^kernel @" "$T/k.txt")" = 1 ] &&
    "$ICC" "$T/ew.icc" --shape=x:6x8 --emit=llvm --name=ew >"$T/l.txt" && grep -q "@ew_model = " "$T/l.txt" &&
    "$ICC" "$T/ew.icc" --shape=x:6x8 --emit=asm >"$T/a.txt" && grep -q "^model_run:" "$T/a.txt" &&
    grep -q "vmulps" "$T/a.txt" &&
    "$ICC" "$T/ew.icc" --shape=x:6x8 --target-triple=aarch64-linux-gnu -o "$T/arm.o" &&
    [ "$(od -An -tu2 -j18 -N2 "$T/arm.o" | tr -d ' ')" = 183 ]
}
check "--emit=kernels|llvm|asm, and an aarch64 object" compile_dumps

# A blocked squeeze-excite Mul ([rows, 16 lanes] times a per-lane scale)
# is small enough to be inlined into run: its 16-lane loop must stay the
# vector loop, not be unrolled first and the row loop around it widened
# with gathers and scatters (47 us where 2 do: emit.c's unroll.disable).
se_mul_vector() {
  cat >"$T/se.icc" <<'G'
graph @se(%x: f32[1,15,14,14,16], %s: f32[1,15,1,1,16]) -> (%y) {
  %y = Mul(%x, %s) : f32[1,15,14,14,16]
}
G
  "$ICC" "$T/se.icc" -O3 -march=x86-64-v4 --emit=asm >"$T/se.s" &&
    grep -q "vmulps.*zmm" "$T/se.s" && ! grep -qE "vgather|vscatter" "$T/se.s"
}
check "a blocked squeeze-excite Mul compiles to vector multiplies, no gathers" se_mul_vector

# A MatMul over a B packed in column panels hints the next panel into L2
# while the current one's row blocks run (kir prefetch_l2, tile.c): on
# x86-64-v4 the k loop has a prefetcht1 beside its FMAs, and the compiled
# product still matches the interpreter.
matmul_prefetch() {
  cat >"$T/pf.icc" <<'G'
graph @pf(%a: f32[200,64], %b: f32[64,256]) -> (%y) {
  %y = MatMul(%a, %b) : f32[200,256]
}
G
  "$ICC" "$T/pf.icc" -O3 -march=x86-64-v4 --emit=asm >"$T/pf.s" &&
    grep -q "prefetcht1" "$T/pf.s" && grep -q "vfmadd231ps.*zmm" "$T/pf.s" &&
    "$ICC" verify "$T/pf.icc" >"$T/pf.v" && grep -qE "^  y: 51200 elements, .*: ok$" "$T/pf.v"
}
check "a packed MatMul prefetches its next B panel (prefetcht1) and matches the interpreter" matmul_prefetch

# A product narrower than the tile's row takes a power of two of vectors:
# [32, 256] x [256, 37] on AVX-512 runs 64 lanes (one masked chunk), not
# 48, whose masked <48 x float> chunk LLVM shuffled lane by lane (0.44 ms
# for 0.6 MFLOP, 0.034 so), and matches the interpreter.
matmul_narrow_width() {
  cat >"$T/nw.icc" <<'G'
graph @nw(%a: f32[32,256], %b: f32[256,37]) -> (%y) {
  %y = MatMul(%a, %b) : f32[32,37]
}
G
  "$ICC" "$T/nw.icc" -O3 -march=x86-64-v4 --emit=kernels >"$T/nw.k" && grep -q "vector for(64)" "$T/nw.k" &&
    ! grep -q "vector for(48)" "$T/nw.k" && "$ICC" verify "$T/nw.icc" >"$T/nw.v" && grep -qE "^  y: 1184 elements, .*: ok$" "$T/nw.v"
}
check "a MatMul of 37 columns on AVX-512 runs a 64-lane row, and matches the interpreter" matmul_narrow_width

# A pointwise NCHW Conv whose output outgrows half of L2 (4 MB here) runs
# each row block's tile across its column panels (tile.h rows_outer): the
# accumulators start right inside the vector loop, with no row-block loop
# between, and the result matches the interpreter.
conv_rows_outer() {
  cat >"$T/ro.icc" <<'G'
graph @ro(%x: f32[1,8,128,128], %w: f32[64,8,1,1]) -> (%y) {
  %y = Conv(%x, %w) {kernel_shape = [1, 1]} : f32[1,64,128,128]
}
G
  "$ICC" "$T/ro.icc" -O2 -march=x86-64-v4 --emit=kernels >"$T/ro.k" &&
    grep -A1 "vector for(64)" "$T/ro.k" | grep -qE "^ +a0 = 0:f32$" &&
    "$ICC" verify "$T/ro.icc" -O2 >"$T/ro.v" && grep -qE "^  y: 1048576 elements, .*: ok$" "$T/ro.v"
}
check "a pointwise NCHW Conv with a large output runs rows outside its panels, and matches the interpreter" conv_rows_outer

# A GEMV whose B is an input ([1, 1024] x [1024, 512], 2 MB of B) is split
# along K by pack-b (8 stretches of 128 rows: a batched product whose
# items are parallel chunks, then a ReduceSum) and matches the interpreter;
# a smaller B (256 x 256, 256 KB) is left alone.
gemv_split_k() {
  cat >"$T/sk.icc" <<'G'
graph @sk(%a: f32[1,1024], %b: f32[1024,512], %c: f32[1,256], %d: f32[256,256]) -> (%y, %z) {
  %y = MatMul(%a, %b) : f32[1,512]
  %z = MatMul(%c, %d) : f32[1,256]
}
G
  "$ICC" info "$T/sk.icc" --stats 2>"$T/sk.s" >/dev/null && grep -q "pack-b: 1 GEMVs on a run-time B split along K" "$T/sk.s" &&
    "$ICC" "$T/sk.icc" --emit=kernels >"$T/sk.k" && grep -q "f32\[8,1,128\]" "$T/sk.k" &&
    "$ICC" verify "$T/sk.icc" >"$T/sk.v" && grep -qE "^  y: 512 elements, .*: ok$" "$T/sk.v" &&
    grep -qE "^  z: 256 elements, .*: ok$" "$T/sk.v"
}
check "a GEMV on an input B is split along K into parallel stretches of rows, and matches the interpreter" gemv_split_k

# Wide element types on the packed-A tile: f64 and i64 MatMuls of 128
# rows (22 row blocks) size their packed A and B panel for 8-byte elements
# (at f32's block counts their thread scratch passed 256 KB and the
# compile failed), and match the interpreter.
matmul_wide_types() {
  cat >"$T/wt.icc" <<'G'
graph @wt(%a: f64[128,768], %b: f64[768,768], %c: i64[128,400], %d: i64[400,300]) -> (%y, %z) {
  %y = MatMul(%a, %b) : f64[128,768]
  %z = MatMul(%c, %d) : i64[128,300]
}
G
  "$ICC" verify "$T/wt.icc" >"$T/wt.v" && grep -qE "^  y: 98304 elements, .*: ok$" "$T/wt.v" &&
    grep -qE "^  z: 38400 elements, .*: ok$" "$T/wt.v"
}
check "f64 and i64 MatMuls of 128 rows compile (their packed A sized for 8-byte elements) and match the interpreter" matmul_wide_types

# One output block along a row shares each input column between the taps
# along W (conv_blocked.c's bc_lower_taps) for at most 16 taps: a 1x17
# kernel of 16 channels (a first version kept 16 of its taps) and a 3x3
# one must match the interpreter compiled.
conv_taps_verify() {
  cat >"$T/tp.icc" <<'G'
graph @tp(%x: f32[1,16,6,40], %w: f32[16,16,1,17], %v: f32[16,16,3,3]) -> (%y, %z) {
  %y = Conv(%x, %w) {kernel_shape = [1, 17], pads = [0, 8, 0, 8]} : f32[1,16,6,40]
  %z = Conv(%x, %v) {kernel_shape = [3, 3], pads = [1, 1, 1, 1]} : f32[1,16,6,40]
}
G
  "$ICC" verify "$T/tp.icc" -O3 >"$T/tp.v" && [ "$(grep -cE "^  [yz]: 3840 elements, .*: ok$" "$T/tp.v")" = 2 ]
}
check "ConvNCHWc with taps sharing broadcasts (3 and 17 along W) matches the interpreter" conv_taps_verify

# The layout pass blocks channels by the target's vector width, not the
# host's: 8 for AVX2 (haswell), 16 for AVX-512, 4 for NEON, and an
# aarch64 object from the same -O3 pipeline.
target_blocks() {
  cat >"$T/cnn.icc" <<'ICC'
graph @cnn(%x: f32[1,32,8,8], %w: f32[32,32,3,3]) -> (%y) {
  %c = Conv(%x, %w) {pads = [1, 1, 1, 1]} : f32[1,32,8,8]
  %y = Relu(%c) : f32[1,32,8,8]
}
ICC
  "$ICC" "$T/cnn.icc" -O3 -march=haswell --emit=ir >"$T/h.icc" && grep -q "ConvNCHWc(.*: f32\[1,4,8,8,8\]" "$T/h.icc" &&
    "$ICC" "$T/cnn.icc" -O3 -march=x86-64-v4 --emit=ir >"$T/v4.icc" && grep -q "ConvNCHWc(.*: f32\[1,2,8,8,16\]" "$T/v4.icc" &&
    "$ICC" "$T/cnn.icc" -O3 --target-triple=aarch64-linux-gnu --emit=ir >"$T/a.icc" &&
    grep -q "ConvNCHWc(.*: f32\[1,8,8,8,4\]" "$T/a.icc" &&
    "$ICC" "$T/cnn.icc" -O3 --target-triple=aarch64-linux-gnu -o "$T/cnn_arm.o" &&
    [ "$(od -An -tu2 -j18 -N2 "$T/cnn_arm.o" | tr -d ' ')" = 183 ]
}
check "-O3 layout blocks follow -march and --target-triple" target_blocks

# --precision=bf16 on a target with AMX-BF16 blocks by 32 (a pixel fills a
# 64-byte tile row) when every conv's channels come in 32s; by the vector
# width without bf16, without AMX, or with a 16-channel conv.
bf16_amx_blocks() {
  "$ICC" "$T/cnn.icc" -O3 -march=sapphirerapids --precision=bf16 --emit=ir | grep -q "ConvNCHWc(.*: f32\[1,1,8,8,32\]" &&
    "$ICC" "$T/cnn.icc" -O3 -march=sapphirerapids --emit=ir | grep -q "ConvNCHWc(.*: f32\[1,2,8,8,16\]" &&
    "$ICC" "$T/cnn.icc" -O3 -march=znver4 --precision=bf16 --emit=ir | grep -q "ConvNCHWc(.*: f32\[1,2,8,8,16\]" &&
    sed 's/\[1,32,8,8\]/[1,16,8,8]/g; s/\[32,32,3,3\]/[16,16,3,3]/' "$T/cnn.icc" >"$T/cnn16.icc" &&
    "$ICC" "$T/cnn16.icc" -O3 -march=sapphirerapids --precision=bf16 --emit=ir | grep -q "ConvNCHWc(.*: f32\[1,1,8,8,16\]"
}
check "--precision=bf16 blocks by 32 for AMX-BF16 where the convs' channels allow" bf16_amx_blocks
check "info names the target it optimizes for" sh -c "'$ICC' info '$M' -march=haswell | grep -qE '^target: x86_64-.* cpu=haswell vector=256x16 features=.*avx2'"
dynamic_batch() {
  # the digits model with its batch dim N left symbolic runs any batch
  "$ICC" "$M" -o "$T/dyn.so" &&
    python3 -c "import numpy as np,sys; np.save(sys.argv[2], np.load(sys.argv[1])[:3])" "$X" "$T/x3.npy" &&
    "$ICC" run "$T/dyn.so" --input image="$T/x3.npy" -o "$T/dyn3" &&
    "$ICC" run "$M" --input image="$T/x3.npy" -o "$T/ref3" &&
    python3 -c "import numpy as np,sys; a,b=np.load(sys.argv[1]),np.load(sys.argv[2]); assert a.shape==(3,10); assert np.allclose(a,b,rtol=1e-5,atol=1e-6)" \
      "$T/dyn3/probs.npy" "$T/ref3/probs.npy" &&
    grep -q "Symbolic dims (-1 in the dims arrays, given at run time): N" "$T/dyn.h"
}
check "compile: a symbolic batch stays symbolic; one .so runs any batch" dynamic_batch
cat >"$T/notyet.icc" <<'ICC'
graph @g<N>(%x: i64[N], %w: i64[N]) -> (%y) {
  %a = Unique(%x) "s1" : i64[2]
  %b = Unique(%w) "c1" : i64[2]
  %y = Add(%a, %b) : i64[2]
}
ICC
fails_cleanly "compile: ops not compiled yet are all named" "2 nodes cannot be compiled yet: Unique .'s1', dims not static., Unique .'c1', dims not static.; pinning" "$ICC" "$T/notyet.icc" -o "$T/no.so"
fails_cleanly "compile: bad --name" "must be a C identifier" "$ICC" "$M" --name=a-b -o "$T/no.so"

run_summary() {
  "$ICC" run "$M" --input image="$X" >"$T/sum" || return 1
  grep -q "^probs: f32\[8,10\]" "$T/sum" && grep -q "argmax per row: $(cat examples/digits/digits_labels.txt)" "$T/sum"
}
check "run without -o prints a summary with the predicted classes" run_summary

fails_cleanly "run: missing input is named" "input 'image'.*not given" "$ICC" run "$M"
fails_cleanly "run: unknown input name" "no input named 'bogus'" "$ICC" run "$M" --input bogus="$X"
fails_cleanly "run: malformed --input" "expected NAME=FILE" "$ICC" run "$M" --input "$X"
fails_cleanly "run: missing .npy" "nope.npy" "$ICC" run "$M" --input image=nope.npy
python3 -c "import numpy as np; np.save('$T/bad.npy', np.zeros((2, 3), np.float32))"
fails_cleanly "run: wrong rank" "rank" "$ICC" run "$M" --input image="$T/bad.npy"
python3 -c "import numpy as np; np.save('$T/i64.npy', np.zeros((1, 1, 8, 8), np.int64))"
fails_cleanly "run: wrong dtype" "dtype" "$ICC" run "$M" --input image="$T/i64.npy"
# Not regular files: a FIFO must not hang (timeout makes a hang exit 124, a
# failure), a directory is named as one; a malformed header field is refused.
mkfifo "$T/fifo.npy"
fails_cleanly "run: a FIFO as --input does not hang" "fifo.npy: not a regular file" timeout 10 "$ICC" run "$M" --input image="$T/fifo.npy"
mkdir "$T/dir.npy"
fails_cleanly "run: a directory as --input" "dir.npy: is a directory" "$ICC" run "$M" --input image="$T/dir.npy"
python3 -c "
b = open('$X', 'rb').read()
open('$T/fo.npy', 'wb').write(b.replace(b\"'fortran_order': False\", b\"'fortran_order': Fals3\"))"
fails_cleanly "run: malformed fortran_order" "malformed 'fortran_order'" "$ICC" run "$M" --input image="$T/fo.npy"
fails_cleanly "compile: a FIFO as the model does not hang" "not a regular file" timeout 10 "$ICC" "$T/fifo.npy" -o "$T/no.so"
ext_weights_not_regular() {
  "$ICC" "$M" --shape=image:8x1x8x8 --weights=external -o "$T/ext.so" || return 1
  rm "$T/ext.weights" && mkfifo "$T/ext.weights"
  timeout 10 "$ICC" run "$T/ext.so" --input image="$X" 2>"$T/ext_err"
  local rc=$?
  [ $rc -eq 1 ] && grep -q "ext.weights: the model's weights are not a regular file" "$T/ext_err" || {
    echo "FIFO weights: exit $rc"; cat "$T/ext_err"; return 1; }
  rm "$T/ext.weights" && mkdir "$T/ext.weights"
  "$ICC" run "$T/ext.so" --input image="$X" 2>"$T/ext_err"
  rc=$?
  [ $rc -eq 1 ] && grep -q "not a regular file" "$T/ext_err" || { echo "dir weights: exit $rc"; cat "$T/ext_err"; return 1; }
}
check "run .so: a FIFO or a directory as the external weights fails cleanly, without hanging" ext_weights_not_regular
# Outputs whose names map to one file name are all written, none overwritten.
same_file_names() {
  python3 - "$T" <<'PY' || return 1
import sys, numpy as np, onnx
from onnx import helper, TensorProto
t = sys.argv[1]
outs = ["a/b", "a_b", "a:b"]
nodes = [helper.make_node("Mul", ["x", "k%d" % i], [o]) for i, o in enumerate(outs)]
inits = [helper.make_tensor("k%d" % i, TensorProto.FLOAT, [1], [i + 1.0]) for i in range(3)]
g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                      [helper.make_tensor_value_info(o, TensorProto.FLOAT, [2]) for o in outs], inits)
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), t + "/names.onnx")
np.save(t + "/names_x.npy", np.array([1.0, 2.0], np.float32))
PY
  "$ICC" run "$T/names.onnx" --input x="$T/names_x.npy" -o "$T/names_out" 2>"$T/names_err" || return 1
  grep -q "output 'a_b' written as a_b_2.npy" "$T/names_err" && grep -q "output 'a:b' written as a_b_3.npy" "$T/names_err" || {
    cat "$T/names_err"; return 1; }
  python3 -c "
import numpy as np
d = '$T/names_out/'
for f, k in (('a_b', 1), ('a_b_2', 2), ('a_b_3', 3)):
    np.testing.assert_array_equal(np.load(d + f + '.npy'), np.array([1.0, 2.0], np.float32) * k)"
}
check "run -o: outputs whose names map to one file name get numbered files, none overwritten" same_file_names
# A dim declared as -1 (as Paddle exports write a dynamic dim) or with neither
# value nor name is an unnamed symbolic dim: it compiles without --shape and
# takes its size at run time.
unnamed_dims() {
  python3 - "$T" <<'PY' || return 1
import sys, numpy as np, onnx
from onnx import helper, TensorProto
t = sys.argv[1]
x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 1, "?", "?"])
x.type.tensor_type.shape.dim[0].dim_value = -1
x.type.tensor_type.shape.dim[2].Clear()
g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g", [x],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), t + "/neg1.onnx")
np.save(t + "/neg1_x.npy", np.linspace(-3, 3, 72, dtype=np.float32).reshape(3, 4, 2, 1, 3))
PY
  "$ICC" info "$T/neg1.onnx" | grep -q "x: f32\[x_dim0,4,x_dim2,x_dim3,x_dim4\]" || { "$ICC" info "$T/neg1.onnx"; return 1; }
  "$ICC" "$T/neg1.onnx" -o "$T/neg1.so" && "$ICC" run "$T/neg1.so" --input x="$T/neg1_x.npy" -o "$T/neg1_out" || return 1
  python3 -c "
import numpy as np
x = np.load('$T/neg1_x.npy')
np.testing.assert_array_equal(np.load('$T/neg1_out/y.npy'), np.maximum(x, 0))"
}
check "an input dim of -1, '?' or without value and name is an unnamed symbolic dim" unnamed_dims
info_pins_shapes() {
  "$ICC" info "$M" --shape=image:3x1x8x8 >"$T/info3" || return 1
  grep -q "image: f32\[3,1,8,8\]" "$T/info3" && grep -q "probs: f32\[3,10\]" "$T/info3" &&
    ! grep -q "symbolic dims taken as 1" "$T/info3"
}
check "info --shape pins the shapes as compiling does" info_pins_shapes
header_pinned_dims() {
  "$ICC" "$M" --shape=image:8x1x8x8 -o "$T/pinned.so" || return 1
  grep -q "inputs:  image: f32\[8,1,8,8\]" "$T/pinned.h" && ! grep -q "Symbolic dims" "$T/pinned.h" || return 1
  "$ICC" "$M" -o "$T/unpinned.so" && grep -q "Symbolic dims (-1 in the dims arrays, given at run time): N$" "$T/unpinned.h"
}
check "model.h lists only the symbolic dims the compiled interface has" header_pinned_dims
# A symbolic H/W through a 2x2 pool: model.h lists the derived output dims
# apart, and its usage example takes input dims the model accepts (2 here;
# 1 would make the pool's window larger than its input).
header_derived_dims() {
  python3 -c "
import numpy as np, onnx
from onnx import TensorProto as P, helper as h, numpy_helper as nh
g = h.make_graph([h.make_node('Conv', ['x', 'w'], ['c'], pads=[1, 1, 1, 1]),
                  h.make_node('MaxPool', ['c'], ['y'], kernel_shape=[2, 2], strides=[2, 2])], 'hw',
                 [h.make_tensor_value_info('x', P.FLOAT, [1, 3, 'H', 'W'])], [h.make_tensor_value_info('y', P.FLOAT, None)],
                 [nh.from_array(np.ones((4, 3, 3, 3), np.float32), 'w')])
m = h.make_model(g, opset_imports=[h.make_opsetid('', 17)]); m.ir_version = 8
onnx.save(m, '$T/hw.onnx')" || return 1
  "$ICC" "$T/hw.onnx" -o "$T/hw.so" || return 1
  grep -q "Symbolic dims (-1 in the dims arrays, given at run time): H W$" "$T/hw.h" &&
    grep -q "Dims computed from them (-1 in the dims arrays, icc_output_dims gives them): floor((H-2)/2)+1 floor((W-2)/2)+1$" \
      "$T/hw.h" && grep -q "int64_t x_dims\[4\] = {1, 3, 2, 2};" "$T/hw.h" && grep -q "calloc(1 \* 4 \* 1 \* 1, " "$T/hw.h" ||
    { cat "$T/hw.h"; return 1; }
}
check "model.h: derived output dims, and example input dims the model accepts" header_derived_dims
# Weights past --embed-limit (1 GiB by default: .rodata past 2 GiB overflows
# the linker's relocations) go to X.weights with a note; --weights=embedded
# keeps them in the .so.
auto_external_weights() {
  "$ICC" "$M" --embed-limit=1000 -o "$T/lim.so" 2>"$T/lim_err" || return 1
  grep -q "^icc: note: the weights (.* MB) go to a .weights file beside .*lim.so" "$T/lim_err" && [ -f "$T/lim.weights" ] ||
    { cat "$T/lim_err"; return 1; }
  "$ICC" "$M" --embed-limit=1000 --weights=embedded -o "$T/emb.so" 2>"$T/emb_err" && [ ! -s "$T/emb_err" ] &&
    [ ! -e "$T/emb.weights" ] && "$ICC" "$M" -o "$T/small.so" && [ ! -e "$T/small.weights" ] || return 1
  "$ICC" run "$T/lim.so" --input image="$X" -o "$T/lim_out" && "$ICC" run "$T/emb.so" --input image="$X" -o "$T/emb_out" &&
    cmp "$T/lim_out/probs.npy" "$T/emb_out/probs.npy"
}
check "weights past --embed-limit go to X.weights with a note; --weights=embedded keeps them in" auto_external_weights
# A failed link is one line naming the linker's first real complaint; --verbose
# adds the full log (here: a "runtime" that is not an archive).
printf 'not an archive\n' >"$T/notar.a"
fails_cleanly "a failed link: one line, the linker's own error" \
  "link .*bad.so failed \\(cc exit 1\\): .*notar.a:1: syntax error \\(2 more lines: --verbose shows" \
  env ICC_RUNTIME_LIB="$T/notar.a" "$ICC" "$M" -o "$T/bad.so"
link_log_verbose() {
  ICC_RUNTIME_LIB="$T/notar.a" "$ICC" "$M" -o "$T/bad.so" --verbose 2>"$T/link_err" && return 1
  grep -q "^icc: the linker's output:" "$T/link_err" && grep -q "^collect2: error: ld returned 1" "$T/link_err" &&
    grep -q "file format not recognized" "$T/link_err" && [ ! -e "$T/bad.so" ] || { cat "$T/link_err"; return 1; }
}
check "a failed link with --verbose prints the linker's full log" link_log_verbose
# Reduce axes given at run time: the output shape is fixed when compiling, so
# axes that would give another shape are refused by the kernel, naming it.
python3 - "$T" <<'PY'
import sys, numpy as np, onnx
from onnx import helper, TensorProto as TP
g = helper.make_graph([helper.make_node("ReduceSum", ["x", "a"], ["y"], keepdims=1, name="r")], "g",
                      [helper.make_tensor_value_info("x", TP.FLOAT, [4, 5]),
                       helper.make_tensor_value_info("a", TP.INT64, [1])],
                      [helper.make_tensor_value_info("y", TP.FLOAT, [4, 1])])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)]), sys.argv[1] + "/rsum.onnx")
np.save(sys.argv[1] + "/rsum_x.npy", np.arange(20, dtype=np.float32).reshape(4, 5))
np.save(sys.argv[1] + "/rsum_a1.npy", np.array([1])); np.save(sys.argv[1] + "/rsum_a0.npy", np.array([0]))
PY
"$ICC" "$T/rsum.onnx" -o "$T/rsum.so" >/dev/null 2>&1
check "run-time Reduce axes: the compiled axes give the sums" sh -c "'$ICC' run '$T/rsum.so' --input x='$T/rsum_x.npy' \
  --input a='$T/rsum_a1.npy' | grep -qF '[10, 35, 60, 85]'"
fails_cleanly "run-time Reduce axes: others are refused, naming the compiled shape" \
  "node 'r' \\(ReduceSum\\): the axes given at run time do not give the output shape \\[4,1\\] the model was compiled for" \
  "$ICC" run "$T/rsum.so" --input x="$T/rsum_x.npy" --input a="$T/rsum_a0.npy"
fails_cleanly "--embed-limit: not a number" "expected a positive number of bytes" "$ICC" "$M" --embed-limit=lots -o "$T/no.so"
fails_cleanly "info --shape: a fixed dim" "dim 1 of 'image' is fixed at 1" "$ICC" info "$M" --shape=image:3x2x8x8
# icc bench: its output's structure and arithmetic (not its timings).
bench_json() {
  "$ICC" bench "$M" --batch=1,4 --threads=1,2 --runs=5 --time=0 --warmup=0 --json >"$T/bench.json" 2>"$T/bench_err" ||
    return 1
  [ ! -s "$T/bench_err" ] && python3 - "$T/bench.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
assert r["scenario"] == "single-stream", r
rows = r["results"]
assert [(x["threads"], x["batch"]) for x in rows] == [(1, 1), (1, 4), (2, 1), (2, 4)], rows
for x in rows:
    assert x["runs"] >= 5, x
    assert 0 < x["min_ms"] <= x["p50_ms"] <= x["p90_ms"] <= x["p99_ms"] <= x["max_ms"], x
    assert x["min_ms"] <= x["mean_ms"] <= x["max_ms"], x
    assert abs(x["inferences_per_s"] - 1e3 / x["mean_ms"]) < 1e-3 * x["inferences_per_s"] + 1e-3, x
    assert abs(x["items_per_s"] - x["inferences_per_s"] * x["batch"]) < 1e-3 * x["items_per_s"] + 1e-3, x
PY
}
check "bench: a batch and thread sweep as JSON, with consistent statistics" bench_json
bench_table_and_plot() {
  "$ICC" "$M" -o "$T/bench.so" || return 1
  "$ICC" bench "$T/bench.so" --batch=1,2,4 --runs=3 --time=0 --warmup=0 --plot="$T/bench.png" >"$T/bench.txt" 2>/dev/null ||
    return 1
  grep -q "^threads  batch    runs    p50 ms" "$T/bench.txt" && [ "$(grep -cE '^ +[0-9]+ +[124] +[0-9]+ ' "$T/bench.txt")" -eq 3 ] &&
    grep -q "^single-stream: p90" "$T/bench.txt" || { cat "$T/bench.txt"; return 1; }
  python3 -c "
import sys
b = open('$T/bench.png', 'rb').read()
sys.exit(0 if b[:8] == b'\x89PNG\r\n\x1a\n' and len(b) > 2000 else 1)"
}
check "bench: the table of a compiled .so, and --plot draws a PNG" bench_table_and_plot
bench_server_offline() {
  "$ICC" bench "$T/bench.so" --scenario=server --rate=500 --queries=20 --runs=3 --time=0 --warmup=0 >"$T/srv.txt" 2>/dev/null &&
    grep -qE "^server at 500.0 queries/s \(20 queries.*p99 [0-9.]+ ms" "$T/srv.txt" || { cat "$T/srv.txt"; return 1; }
  "$ICC" bench "$T/bench.so" --scenario=offline --batch=1,8 --runs=3 --time=0 --warmup=0 >"$T/off.txt" 2>/dev/null &&
    grep -qE "^offline: [0-9.]+ items/s" "$T/off.txt"
}
check "bench: the server and offline scenarios" bench_server_offline
# bench A B: the models in turns, each one's statistics and its paired
# ratio to the first (the same library against itself reads about 1)
bench_compare() {
  "$ICC" bench "$T/bench.so" "$T/bench.so" "$M" --runs=40 --time=0 --warmup=0 --threads=1 --json \
    >"$T/cmp.json" 2>"$T/cmp_err" && [ ! -s "$T/cmp_err" ] || { cat "$T/cmp_err"; return 1; }
  python3 - "$T/cmp.json" "$M" <<'PY' || return 1
import json, sys
r = json.load(open(sys.argv[1]))["compare"]
assert r["threads"] == 1 and r["rounds"] >= 40, r
ms = r["models"]
assert [x["model"] for x in ms][2] == sys.argv[2] and len(ms) == 3, ms
assert ms[0]["ratio_median"] == 1 and ms[0]["faster_share"] == 0.5, ms[0]
for x in ms:
    assert 0 < x["min_ms"] <= x["p50_ms"] <= x["p90_ms"] <= x["p99_ms"] <= x["max_ms"], x
    assert 0 < x["ratio_p25"] <= x["ratio_median"] <= x["ratio_p75"], x
    assert 0 <= x["faster_share"] <= 1, x
assert 0.5 < ms[1]["ratio_median"] < 2, ms[1]
PY
  "$ICC" bench "$T/bench.so" "$T/bench.so" --runs=5 --time=0 --warmup=0 >"$T/cmp.txt" 2>/dev/null &&
    grep -q "^5 rounds in turns" "$T/cmp.txt" && grep -q "1 (the reference)" "$T/cmp.txt" &&
    grep -qE "^[^ ]*bench.so +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ \[[0-9.]+-[0-9.]+\], [0-9]+%$" "$T/cmp.txt" ||
    { cat "$T/cmp.txt"; return 1; }
}
check "bench A B: models compared in turns, with paired ratios (JSON and table)" bench_compare
# bench --input: an input's values from a file (all of them, or one
# repeated); without it the pattern's indices 0..3 leave a 2-row table.
bench_input_values() {
  python3 -c "
import numpy as np, onnx
from onnx import TensorProto as P, helper as h
g = h.make_graph([h.make_node('Gather', ['x', 'i'], ['y'], axis=0)], 'g',
                 [h.make_tensor_value_info('x', P.FLOAT, [2, 3]), h.make_tensor_value_info('i', P.INT64, ['N'])],
                 [h.make_tensor_value_info('y', P.FLOAT, ['N', 3])])
onnx.save(h.make_model(g, opset_imports=[h.make_opsetid('', 17)]), '$T/gather.onnx')
np.save('$T/one.npy', np.array([1], np.int64))
np.save('$T/two.npy', np.array([1, 0], np.int64))" && "$ICC" "$T/gather.onnx" -o "$T/gather.so" || return 1
  ! "$ICC" bench "$T/gather.so" --batch=4 --runs=3 --time=0 --warmup=0 >/dev/null 2>"$T/gerr" &&
    grep -q "out of range" "$T/gerr" &&
    "$ICC" bench "$T/gather.so" --batch=1,4 --runs=3 --time=0 --warmup=0 --input=i="$T/one.npy" >/dev/null &&
    "$ICC" bench "$T/gather.so" --batch=2 --runs=3 --time=0 --warmup=0 --input=i="$T/two.npy" >/dev/null
}
check "bench --input: an input's values from a .npy file, or one value repeated" bench_input_values
# without --batch or --dim, a file of the input's rank gives its symbolic
# dims (N = 2 here; it was 1, and the 2-element file was refused)
bench_input_dims() {
  "$ICC" bench "$T/gather.so" --runs=3 --time=0 --warmup=0 --input=i="$T/two.npy" --json >"$T/gdims.json" &&
    "$ICC" bench "$T/gather.so" --runs=3 --time=0 --warmup=0 --input=i="$T/one.npy" --dim=N=3 >/dev/null
}
check "bench --input: the file's dims give the input's symbolic dims (--dim and --batch first)" bench_input_dims
fails_cleanly "bench --input: a name the model does not have" "has no input named 'j'" "$ICC" bench \
  "$T/gather.so" --batch=4 --runs=3 --time=0 --warmup=0 --input=j="$T/one.npy"
fails_cleanly "bench --input: a file of another element count" "2 elements, input 'i' has 4 here" "$ICC" bench \
  "$T/gather.so" --batch=4 --runs=3 --time=0 --warmup=0 --input=i="$T/two.npy"
# --shape with a name: that dim stays symbolic under the name (one name in
# two places is one dim), the others are pinned; ',' joins names with an x.
shape_names() {
  "$ICC" info "$M" --shape=image:Bx1x8x8 >"$T/infoB" && grep -q "image: f32\[B,1,8,8\]" "$T/infoB" &&
    "$ICC" "$M" --shape=image:max_x,1,8,8 -o "$T/named.so" &&
    grep -q "Symbolic dims (-1 in the dims arrays, given at run time): max_x$" "$T/named.h"
}
check "--shape: a dim given as a name stays symbolic under it" shape_names
# a symbol declared in two inputs is one dim: pinning it in one pins the other
cat >"$T/twoin.icc" <<'ICC'
graph @g<B>(%x: f32[B,4], %s: f32[2,B,4]) -> (%y) {
  %y = Add(%x, %s) : f32[2,B,4]
}
ICC
shape_shared_symbol() {
  "$ICC" info "$T/twoin.icc" --shape=x:3x4 >"$T/info2in" && grep -q "s: f32\[2,3,4\]" "$T/info2in" &&
    "$ICC" info "$T/twoin.icc" --shape=x:Cx4 >"$T/info2inC" && grep -q "s: f32\[2,C,4\]" "$T/info2inC"
}
check "--shape: pinning a symbol in one input pins it in the others" shape_shared_symbol
# input dims that an op requires equal become one dim (ir/unify.c); where
# only the passes make the op's operands known (an If folded), info lists
# the inputs as compiled after its -O line
cat >"$T/late.icc" <<'ICC'
graph @g<n, m>(%a: f32[n,4], %b: f32[m,4]) -> (%y) {
  %c = const bool[] [true]
  %ax = const i64[1] [0]
  %u = If(%c | %a, %ax) {else_branch = graph @e<n>(%a: f32[n,4], %ax: i64[1]) -> (%a) {
  }, then_branch = graph @t<n>(%a: f32[n,4], %ax: i64[1]) -> (%r) {
    %r = Unsqueeze(%a, %ax) : f32[1,n,4]
  }} "pick" : f32[*]
  %bu = Unsqueeze(%b, %ax) : f32[1,m,4]
  %y = Concat(%u, %bu) {axis = 2} : f32[*]
}
ICC
info_unified_inputs() {
  "$ICC" info "$T/late.icc" >"$T/infolate" && grep -q "^  b: f32\[m,4\]$" "$T/infolate" &&
    grep -A1 "^inputs as compiled" "$T/infolate" | grep -q "^  b: f32\[n,4\]$" &&
    "$ICC" "$T/late.icc" -o "$T/late.so" && grep -q "Symbolic dims (-1 in the dims arrays, given at run time): n$" "$T/late.h"
}
check "info: inputs whose dims the ops join, as compiled" info_unified_inputs
fails_cleanly "--shape: two inputs' pins disagree on their shared symbol" \
  "dim 1 of .s. is fixed at 3 .an earlier --shape pinned the symbol it shares with another input." \
  "$ICC" info "$T/twoin.icc" --shape=x:3x4 --shape=s:2x5x4
fails_cleanly "--shape: a malformed dim" "dims must be non-negative numbers or names joined by 'x'" "$ICC" "$M" \
  --shape=image:2x-1x8x8 -o "$T/bad.so"
fails_cleanly "bench A B: with --profile" "comparing 2 models runs them in turns" "$ICC" bench "$T/bench.so" "$T/bench.so" --profile
fails_cleanly "bench A B: a --threads list" "or a --threads list" "$ICC" bench "$T/bench.so" "$M" --threads=1,2
fails_cleanly "bench: nine models" "more than 8 models to compare" "$ICC" bench "$M" "$M" "$M" "$M" "$M" "$M" "$M" "$M" "$M"
fails_cleanly "bench: a malformed --threads list" "--threads=1,,2: expected positive integers" "$ICC" bench "$M" --threads=1,,2
fails_cleanly "bench: --rate outside the server scenario" "belong to --scenario=server" "$ICC" bench "$M" --rate=10
fails_cleanly "bench: a compiler option for a .so" "-O3: unknown option for a compiled model" "$ICC" bench "$T/bench.so" -O3
fails_cleanly "bench: --batch on a pinned model" "--batch needs a symbolic dim" "$ICC" bench "$M" --shape=image:2x1x8x8 --batch=1,2 --runs=1 --time=0 --warmup=0
fails_cleanly "bench: a missing model" "nope.so" "$ICC" bench nope.so
fails_cleanly "bench: the compiler's error" "no_such.onnx" "$ICC" bench no_such.onnx
# bench --profile: one row per kernel, shares summing to 100%, a MatMul's
# FLOPs 2*M*N*K; roofs from a peak file of known numbers (no measuring).
python3 - "$T/mm.onnx" <<'PY'
import sys, numpy as np, onnx
from onnx import helper as h, TensorProto as T, numpy_helper as nh
w = nh.from_array(np.random.RandomState(0).rand(16, 8).astype(np.float32), "w")
g = h.make_graph([h.make_node("MatMul", ["x", "w"], ["y"], name="mm"),
                  h.make_node("Softmax", ["y"], ["z"], name="sm", axis=-1)], "mm",
                 [h.make_tensor_value_info("x", T.FLOAT, [4, 16])], [h.make_tensor_value_info("z", T.FLOAT, [4, 8])], [w])
onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 17)]), sys.argv[1])
PY
echo '{"cores": 2, "fma_gflops_per_core": 40, "fma_gflops_all_cores": 80,
 "read_gbs_per_core": {"L1": 100, "L2": 50, "L3": 30, "DRAM": 10},
 "read_gbs_all_cores": {"L1": 200, "L2": 100, "L3": 60, "DRAM": 16}}' >"$T/peak.json"
bench_profile_json() {
  ICC_PEAK_CACHE="$T/peak.json" "$ICC" bench "$T/mm.onnx" --profile --threads=1,2 --runs=5 --time=0 --warmup=0 --json \
    >"$T/prof.json" 2>"$T/prof_err" || return 1
  [ ! -s "$T/prof_err" ] && python3 - "$T/prof.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
assert [x["threads"] for x in r["results"]] == [1, 2], r
for x, roof in zip(r["results"], [(40, 10), (80, 16)]):
    p = x["profile"]
    assert (p["peak_gflops"], p["peak_gbs"]) == roof, p
    ks = p["kernels"]
    assert sorted(k["name"] for k in ks) == ["mm", "sm"], ks
    assert abs(sum(k["share"] for k in ks) - 100) < 0.01, ks
    assert [k["us"] for k in ks] == sorted((k["us"] for k in ks), reverse=True), ks
    assert abs(sum(k["us"] for k in ks) - p["kernels_us"]) < 1e-3, p
    mm = next(k for k in ks if k["name"] == "mm")
    assert mm["ops"] == "MatMul" and mm["flops"] == 2 * 4 * 8 * 16, mm
    assert mm["bytes"] == 4 * (4 * 16 + 16 * 8 + 4 * 8), mm   # x, w and y, once each
    assert abs(mm["intensity"] - mm["flops"] / mm["bytes"]) < 1e-3, mm
    assert mm["bound"] == "memory", mm   # 1.1 FLOP/B, under either ridge
PY
}
check "bench --profile: the kernels' JSON (shares, FLOPs, bytes, roofs)" bench_profile_json
bench_profile_table() {
  "$ICC" "$T/mm.onnx" --profile -o "$T/mm.so" || return 1
  ICC_PEAK_CACHE="$T/peak.json" "$ICC" bench "$T/mm.so" --profile --threads=1 --runs=5 --time=0 --warmup=0 >"$T/prof.txt" \
    2>/dev/null || return 1
  grep -qE "^ +us/run +share +MFLOP +KB +GFLOP/s +GB/s +FLOP/B +bound +roof +kind +ops +kernel$" "$T/prof.txt" &&
    [ "$(grep -cE '^ +[0-9.]+ +[0-9.]+% .* (memory|compute) .* (MatMul +mm|Softmax +sm)$' "$T/prof.txt")" -eq 2 ] &&
    grep -qE "^ +[0-9.]+ 100\.0% .*total of 2 kernels" "$T/prof.txt" &&
    grep -q "roofs 40.0 GFLOP/s and 10.0 GB/s, the ridge at 4.00 FLOP/B" "$T/prof.txt" || { cat "$T/prof.txt"; return 1; }
}
check "bench --profile: the table of a profiled .so, sorted, with a total" bench_profile_table
# bench --profile on symbolic dims: each kernel's FLOPs and bytes at the
# run's dims (the model's kernel_costs) equal those of the same model
# compiled with the dims pinned, kernel by kernel (a batch, a quadratic
# [N, S, S] score, a conv over H and W); the roofs line no longer says the
# symbols count as 1.
python3 - "$T/symprof.onnx" <<'PY'
import sys, numpy as np, onnx
from onnx import helper as h, TensorProto as T, numpy_helper as nh
r = np.random.RandomState(1)
w = nh.from_array(r.rand(16, 16).astype(np.float32), "w")
k = nh.from_array(r.rand(8, 1, 3, 3).astype(np.float32), "k")
g = h.make_graph([h.make_node("MatMul", ["x", "w"], ["y"], name="mm"),
                  h.make_node("Transpose", ["y"], ["yt"], name="tr", perm=[0, 2, 1]),
                  h.make_node("MatMul", ["y", "yt"], ["s"], name="scores"),
                  h.make_node("Softmax", ["s"], ["z"], name="sm", axis=-1),
                  h.make_node("Conv", ["img", "k"], ["c"], name="conv", pads=[1, 1, 1, 1], strides=[2, 2])], "symprof",
                 [h.make_tensor_value_info("x", T.FLOAT, ["N", "S", 16]),
                  h.make_tensor_value_info("img", T.FLOAT, ["N", 1, "H", "W"])],
                 [h.make_tensor_value_info("z", T.FLOAT, None), h.make_tensor_value_info("c", T.FLOAT, None)], [w, k])
onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 17)]), sys.argv[1])
PY
bench_profile_symbolic() {
  "$ICC" "$T/symprof.onnx" -O0 --profile -o "$T/symprof.so" &&
    "$ICC" "$T/symprof.onnx" -O0 --profile --shape=x:3x10x16 --shape=img:3x1x17x23 -o "$T/symprof_pin.so" || return 1
  ICC_PEAK_CACHE="$T/peak.json" "$ICC" bench "$T/symprof.so" --dim=N=3 --dim=S=10 --dim=H=17 --dim=W=23 --profile \
    --threads=1 --runs=3 --time=0 --warmup=0 --json >"$T/symprof.json" 2>/dev/null &&
    ICC_PEAK_CACHE="$T/peak.json" "$ICC" bench "$T/symprof_pin.so" --profile --threads=1 --runs=3 --time=0 \
      --warmup=0 --json >"$T/symprof_pin.json" 2>/dev/null &&
    ICC_PEAK_CACHE="$T/peak.json" "$ICC" bench "$T/symprof.so" --dim=N=3 --dim=S=10 --dim=H=17 --dim=W=23 --profile \
      --threads=1 --runs=3 --time=0 --warmup=0 >"$T/symprof.txt" 2>/dev/null || return 1
  ! grep -q "count symbolic dims as 1" "$T/symprof.txt" || return 1
  python3 - "$T/symprof.json" "$T/symprof_pin.json" <<'PY'
import json, sys
got, want = ({k["name"]: k for k in json.load(open(f))["results"][0]["profile"]["kernels"]} for f in sys.argv[1:])
assert sorted(got) == sorted(want) and {"mm", "scores", "sm", "conv"} <= set(got), (sorted(got), sorted(want))
for n in got:
    assert (got[n]["flops"], got[n]["bytes"]) == (want[n]["flops"], want[n]["bytes"]), (n, got[n], want[n])
assert got["scores"]["flops"] == 2 * 3 * 10 * 10 * 16, got["scores"]
assert got["conv"]["flops"] == 2 * 3 * 8 * 9 * 12 * 9, got["conv"]
PY
}
check "bench --profile: FLOPs and bytes at a symbolic model's run dims (as pinned)" bench_profile_symbolic
profile_off_by_default() {
  "$ICC" "$T/mm.onnx" -o "$T/plain.so" && "$ICC" "$T/mm.onnx" --emit=llvm -o "$T/plain.ll" &&
    "$ICC" "$T/mm.onnx" --profile --emit=llvm -o "$T/prof.ll" || return 1
  ! grep -q "clock" "$T/plain.ll" && grep -q "clock" "$T/prof.ll"
}
check "--profile adds timing code; without it the code has none" profile_off_by_default
fails_cleanly "bench --profile: a .so compiled without it" "compiled without --profile" "$ICC" bench "$T/plain.so" --profile
fails_cleanly "bench --profile with --peak" "--profile times the kernels" "$ICC" bench --peak --profile
fails_cleanly "bench --quick without --peak" "--quick belongs to --peak" "$ICC" bench "$T/plain.so" --quick
bench_peak_json() {
  ICC_PEAK_CACHE="$T/peak2.json" "$ICC" bench --peak --quick --json >"$T/peak_out.json" 2>/dev/null || return 1
  python3 - "$T/peak_out.json" "$T/peak2.json" <<'PY'
import json, sys
for f in sys.argv[1:]:   # printed, and left where --profile reads it
    r = json.load(open(f))
    for k in ["isa", "cores", "fma_gflops_per_core", "fma_gflops_all_cores", "vnni", "amx", "int8_gops_vnni"]:
        assert k in r, k
    for k in ["read_gbs", "read_gbs_per_core", "read_gbs_all_cores", "working_set_bytes"]:
        assert sorted(r[k]) == ["DRAM", "L1", "L2", "L3"], r[k]
        assert all(v > 0 for v in r[k].values()), r[k]
    ws = r["working_set_bytes"]
    assert ws["L1"] < ws["L2"] < ws["L3"] < ws["DRAM"], ws
    if not r["vnni"]:
        assert r["int8_gops_vnni"] is None
    # measured where the CPU has the 512-bit units, null elsewhere
    flags = next((l.split() for l in open("/proc/cpuinfo") if l.startswith("flags")), [])
    for key, flag in [("int8_gops_vnni", "avx512_vnni"), ("bf16_gflops", "avx512_bf16")]:
        for k in [key, key + "_all_cores"]:
            want = flag in flags and "avx512f" in flags
            assert (r[k] is not None and r[k] > 0) if want else r[k] is None, (k, r[k])
PY
}
# the compiler's own short measurement of vdpbf16ps against the FMA (the
# target line's bf16-dot=Rx-fma, which decides the pair kernel) agrees with
# --peak's long one within a factor of 1.5, and is there exactly where the
# CPU has avx512_bf16
bf16_dot_rate() {
  local line
  line=$("$ICC" info "$T/mm.onnx" | grep '^target:') || return 1
  python3 - "$T/peak_out.json" "$line" <<'PY'
import json, sys
r, line = json.load(open(sys.argv[1])), sys.argv[2]
flags = next((l.split() for l in open("/proc/cpuinfo") if l.startswith("flags")), [])
rate = next((float(w[9:].split("x")[0]) for w in line.split() if w.startswith("bf16-dot=")), None)
if "avx512_bf16" not in flags or "avx512f" not in flags:
    assert rate is None, line
else:
    peak = r["bf16_gflops"] / r["fma_gflops_per_core"]
    assert rate is not None and 1 / 1.5 <= rate / peak <= 1.5, (rate, peak, line)
PY
}
check "bench --peak --json: per-level and all-core bandwidths, int8 flags, the VNNI and BF16 dot peaks; the cache" bench_peak_json
check "the target's measured vdpbf16ps rate (icc info) agrees with bench --peak's" bf16_dot_rate
# bench --profile: each kernel stands against the peak of what its code
# runs on (icc_kernel_kind): a MatMulInteger with constant i8 weights on
# the int8 dot product (vpdpbusd with VNNI, vpmaddwd/vpmaddubsw on AVX2; f32
# on a baseline x86-64 without them), a --precision=bf16 MatMul on
# vdpbf16ps where the target has AVX512-BF16 (f32 where it widens to FMAs).
python3 - "$T" <<'PY'
import sys, numpy as np, onnx
from onnx import helper as h, TensorProto as T, numpy_helper as nh
rng = np.random.RandomState(0)
w = nh.from_array(rng.randint(-128, 128, (128, 192)).astype(np.int8), "w")
g = h.make_graph([h.make_node("MatMulInteger", ["x", "w"], ["y"], name="mmi")], "i8",
                 [h.make_tensor_value_info("x", T.UINT8, [32, 128])], [h.make_tensor_value_info("y", T.INT32, [32, 192])], [w])
onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 17)]), sys.argv[1] + "/i8.onnx")
w = nh.from_array(rng.rand(256, 128).astype(np.float32), "w")
g = h.make_graph([h.make_node("MatMul", ["x", "w"], ["m"], name="mm"), h.make_node("Relu", ["m"], ["y"], name="r")], "bf",
                 [h.make_tensor_value_info("x", T.FLOAT, [16, 256])], [h.make_tensor_value_info("y", T.FLOAT, [16, 128])], [w])
onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 17)]), sys.argv[1] + "/bf.onnx")
PY
echo '{"cores": 2, "fma_gflops_per_core": 40, "fma_gflops_all_cores": 80,
 "read_gbs_per_core": {"L1": 100, "L2": 50, "L3": 30, "DRAM": 10},
 "read_gbs_all_cores": {"L1": 200, "L2": 100, "L3": 60, "DRAM": 16},
 "int8_gops_vnni": 300, "int8_gops_vnni_all_cores": 500, "bf16_gflops": 150, "bf16_gflops_all_cores": 250}' >"$T/kpeak.json"
# profile_kinds PEAKFILE: the contraction's kind and roof in the JSON of each
# build below (kind: i8, f32, host: bf16 where icc compiles the pair kernel
# for this CPU (icc_run.bf16_pairs_host), else f32, hostbf16: bf16 (the pair
# kernel for -march=cooperlake, built only where the CPU has avx512_bf16),
# or hosti8: amx-i8 where it has amx_int8 and avx512_vnni (the 32-row
# product runs on tiles), else i8). With the fake peaks each kind's roof is
# its own, one core's or all cores' (AMX, absent from the fake file, on the
# dot product's); with the measured
# ones, each kind's own measured peak where the machine has it; both: the
# roof percentage is the kernel's rate over its roof.
profile_kinds() (   # a subshell: ICC_BF16_DOT_RATE stays in it
  local n=0 model want flags
  # the host's bf16 dot rate measured once, so that the expectation
  # (bf16_pairs_host's `icc info`) and each compile see the same one
  local rate
  rate=$("$ICC" info "$T/bf.onnx" | grep -o 'bf16-dot=[0-9.]*' | cut -d= -f2)
  [ -n "$rate" ] && export ICC_BF16_DOT_RATE="$rate"
  while read -r model want flags; do
    n=$((n + 1))
    "$ICC" "$T/$model.onnx" --profile $flags -o "$T/kind$n.so" 2>/dev/null &&
      ICC_PEAK_CACHE="$1" "$ICC" bench "$T/kind$n.so" --profile --threads=1,2 --runs=20 --time=0.1 --warmup=0.05 --json \
        >"$T/kind$n.json" 2>/dev/null || { echo "$model $flags: no profile"; return 1; }
    python3 - "$T/kind$n.json" "$want" "$1" "$ICC" "$T/$model.onnx" <<'PY' || { echo "$model $flags"; return 1; }
import json, os, sys
sys.path.insert(0, os.path.join(os.getcwd(), "tests/models"))
from icc_run import bf16_pairs_host
r, want, fake = json.load(open(sys.argv[1])), sys.argv[2], sys.argv[3].endswith("kpeak.json")
flags = next((l.split() for l in open("/proc/cpuinfo") if l.startswith("flags")), [])
if want == "host":   # vdpbf16ps where the host takes the pair kernel (not where it measured it slow)
    want = "bf16" if bf16_pairs_host(sys.argv[4], sys.argv[5]) else "f32"
if want == "hostbf16":   # -march=cooperlake: nothing measured, the pair kernel wherever it runs
    want = "bf16" if "avx512_bf16" in flags else "f32"
if want == "hosti8":
    want = "amx-i8" if "amx_int8" in flags and "avx512_vnni" in flags else "i8"
for x in r["results"]:
    p = x["profile"]
    k = next(k for k in p["kernels"] if "MatMul" in k["ops"])
    assert k["kind"] == want, (k["kind"], want, k)
    assert k["peak_gflops"] == p["peaks_gflops"][want], (k, p["peaks_gflops"])
    if fake:
        t = x["threads"] - 1
        own = {"f32": (40, 80), "i8": (300, 500), "bf16": (150, 250), "amx-i8": (300, 500)}[want][t]
        assert k["peak_gflops"] == own and p["peak_gflops"] == (40, 80)[t], (k, own)
        assert p["peak_of"] == {"f32": "f32", "bf16": "bf16", "i8": "i8", "amx-bf16": "bf16", "amx-i8": "i8"}, p
    else:
        # the measured peaks (no timing bound: an instrumented build measures its own
        # peak loops slowly but runs the kernels at speed): a dot-product kernel takes its
        # kind's measured peak where this machine has one, not FP32's
        have = json.load(open(sys.argv[3])).get({"i8": "int8_gops_vnni", "bf16": "bf16_gflops",
                                                 "amx-i8": "int8_gops_amx"}.get(want, ""))
        assert want == "f32" or (p["peak_of"][want] == want) == bool(have), (p, have)
    roof = min(k["peak_gflops"], k["intensity"] * p["peak_gbs"])
    assert abs(k["roof_pct"] - 100 * k["gflops"] / roof) < 0.01 + 1e-3 * k["roof_pct"], (k, roof)
PY
  done <<EOF
i8 hosti8
i8 i8 -march=x86-64-v3
i8 f32 -march=x86-64
bf host --precision=bf16 --no-default-keep
$(grep -qw avx512_bf16 /proc/cpuinfo && echo "bf hostbf16 --precision=bf16 --no-default-keep -march=cooperlake")
bf f32 --precision=bf16 --no-default-keep -march=x86-64-v3
bf f32
EOF
)
check "bench --profile: int8 and bf16 contractions on their own (fake) peaks; the kind follows the target" \
  profile_kinds "$T/kpeak.json"
check "bench --profile: int8 and bf16 contractions on this machine's measured peaks of their kind" \
  profile_kinds "$T/peak2.json"
# the host's bf16 dot rate given instead of measured (reproducible builds;
# only a target with AVX512-BF16 has one)
dot_rate_env() {
  ! grep -qw avx512_bf16 /proc/cpuinfo ||
    { ICC_BF16_DOT_RATE=0.9 "$ICC" info "$T/bf.onnx" | grep -q "bf16-dot=0.90x-fma" &&
      ICC_BF16_DOT_RATE=0.3 "$ICC" info "$T/bf.onnx" | grep -q "bf16-dot=0.30x-fma"; }
}
check "ICC_BF16_DOT_RATE gives the bf16 dot rate instead of measuring it" dot_rate_env
# bench --generate on a tiny static-KV decoder (seq 1) and its prefill
# graph (seq 4): the step counts, and the greedy tokens ONNX Runtime picks.
GEN=bench/models/gpt2_static_kv.py
python3 $GEN "$T/dec.onnx" --layers 1 --hidden 32 --heads 2 --max-len 16 --vocab 50 --seq 1 &&
  python3 $GEN "$T/pre.onnx" --layers 1 --hidden 32 --heads 2 --max-len 16 --vocab 50 --seq 4 &&
  "$ICC" "$T/dec.onnx" -o "$T/dec.so" 2>/dev/null && "$ICC" "$T/pre.onnx" -o "$T/pre.so" 2>/dev/null
bench_generate() {
  "$ICC" bench "$T/dec.so" --generate=6 --prompt-len=4 --runs=2 --time=0 --warmup=0 --json >"$T/gen1.json" 2>/dev/null &&
    "$ICC" bench "$T/dec.so" --prefill="$T/pre.so" --generate=6 --prompt-len=4 --threads=1,2 --runs=2 --time=0 \
      --warmup=0 --json >"$T/gen2.json" 2>/dev/null || return 1
  python3 - "$T/dec.onnx" "$T/gen1.json" "$T/gen2.json" <<'PY'
import json, sys
import numpy as np, onnxruntime as ort
s = ort.InferenceSession(sys.argv[1], providers=["CPUExecutionProvider"])
past = {i.name: np.zeros(i.shape, np.float32) for i in s.get_inputs() if i.name.startswith("past")}
names = [o.name for o in s.get_outputs()]
def step(tok, pos):   # the decode graph, one token at a time
    global past
    r = dict(zip(names, s.run(None, dict(past, input_ids=np.array([[tok]]), position_ids=np.array([[pos]])))))
    past = {n: r["present" + n[4:]] for n in past}
    return int(np.argmax(r["logits"][0, -1]))
for p in range(4):
    t = step((p * 7919 + 13) % 50, p)
want = [t] + [t := step(t, 4 + k) for k in range(6)]
one = json.loads(open(sys.argv[2]).read())
two = [json.loads(l) for l in open(sys.argv[3])]
assert one["prefill_calls"] == 4 and one["decode_steps"] == 6 and one["max_len"] == 16 and one["vocab"] == 50, one
assert [x["threads"] for x in two] == [1, 2] and all(x["prefill_calls"] == 1 for x in two), two
for x in [one] + two:
    assert x["scenario"] == "generate" and x["generations"] == 2, x
    assert x["tokens"] == want, (x["tokens"], want)
    assert 0 < x["tpot_ms"]["p50"] <= x["tpot_ms"]["p90"] and x["ttft_ms"]["p50"] > 0 and x["tokens_per_s"] > 0, x
PY
}
check "bench --generate: prefill by token or by a prefill graph, then greedy steps as ONNX Runtime" bench_generate
bench_generate_text() {
  "$ICC" bench "$T/dec.so" --generate=3 --prompt-len=2 --runs=1 --time=0 --warmup=0 >"$T/gen.txt" 2>/dev/null &&
    grep -q "prompt 2 tokens in 2 calls, then 3 decode steps (cache 16, vocabulary 50); 1 generation$" "$T/gen.txt" &&
    grep -qE "^TTFT p50 [0-9.]+ ms, p90 [0-9.]+ ms; TPOT p50 [0-9.]+ ms, p90 [0-9.]+ ms; [0-9.]+ tokens/s" "$T/gen.txt" ||
    { cat "$T/gen.txt"; return 1; }
}
check "bench --generate: the text report" bench_generate_text
fails_cleanly "bench --generate: past the cache" "do not fit the cache of 16" "$ICC" bench "$T/dec.so" --generate=13 --prompt-len=4
fails_cleanly "bench --generate: a model that is no decoder" "input 'x' has no role in --generate" "$ICC" bench "$T/plain.so" --generate=2
fails_cleanly "bench --generate=0" "--generate=0: expected a whole number of tokens" "$ICC" bench "$T/dec.so" --generate=0
fails_cleanly "bench --prompt-len without --generate" "belong to --generate" "$ICC" bench "$T/dec.so" --prompt-len=4
fails_cleanly "bench --generate with --profile" "--generate times a decoding loop" "$ICC" bench "$T/dec.so" --generate=2 --profile
fails_cleanly "bench --gen-io: an unknown role" "expected ROLE=NAME" "$ICC" bench "$T/dec.so" --generate=2 --gen-io=colour=red
fails_cleanly "bench --prefill of another prompt length" "--prefill: its caches, vocabulary or seq \(4, the prompt is 5\)" "$ICC" bench "$T/dec.so" --generate=2 --prompt-len=5 --prefill="$T/pre.so"
fails_cleanly "unknown option" "unknown option '--frobnicate'" "$ICC" "$M" --frobnicate
fails_cleanly "missing model" "no_such.onnx" "$ICC" info no_such.onnx
fails_cleanly "unknown --emit kind" "unknown --emit kind" "$ICC" "$M" --emit=bogus
fails_cleanly "opt wants text IR" "opt reads text IR" "$ICC" opt "$M"

# icc run MODEL.so: the hand-written toy model (tests/runtime/toy_model.c,
# y[n][j] = 2*x[n][j] + 1 + w[n] over x: f32[N,4], w: f32[N]) through the
# runtime. It is built next to icc; a missing one is a failure.
TOY=$(dirname "$ICC")/tests/libtoy_model.so
toy_built() { [ -f "$TOY" ] || { echo "$TOY is missing (build the toy_model target)"; return 1; }; }
check "the toy model .so is built" toy_built
python3 - "$T" <<'PY'
import sys, numpy as np
t = sys.argv[1]
np.save(t + "/tx.npy", np.arange(12, dtype=np.float32).reshape(3, 4) - 5.5)
np.save(t + "/tw.npy", np.array([0.0, 10.0, -20.0], np.float32))
np.save(t + "/tx64.npy", np.zeros((3, 4), np.float64))
np.save(t + "/tx1.npy", np.zeros(12, np.float32))
np.save(t + "/tw2.npy", np.zeros(2, np.float32))
PY
run_compiled() {
  "$ICC" run "$TOY" --input x="$T/tx.npy" --input w="$T/tw.npy" -o "$T/so_out" || return 1
  python3 - "$T" <<'PY'
import sys, numpy as np
t = sys.argv[1]
x, w, y = np.load(t + "/tx.npy"), np.load(t + "/tw.npy"), np.load(t + "/so_out/y.npy")
assert y.dtype == np.float32 and y.shape == (3, 4), (y.dtype, y.shape)
np.testing.assert_array_equal(y, 2 * x + 1 + w[:, None])
PY
}
check "run MODEL.so -o writes the compiled model's outputs" run_compiled
run_compiled_summary() {
  "$ICC" run "$TOY" --input w="$T/tw.npy" --input x="$T/tx.npy" >"$T/so_sum" || return 1
  grep -q "^y: f32\[3,4\] min=-14 max=14 mean=-2.33333$" "$T/so_sum" &&
    grep -q "^  \[-10, -8, -6, -4, 8, 10, 12, 14, -14, -12, ...\]$" "$T/so_sum"
}
check "run MODEL.so without -o prints the summary" run_compiled_summary
run_compiled_name() {
  "$ICC" run "$TOY" --name=model --input x="$T/tx.npy" --input w="$T/tw.npy" -o "$T/so_out2" &&
    cmp "$T/so_out/y.npy" "$T/so_out2/y.npy"
}
check "run MODEL.so --name=model is the default prefix" run_compiled_name
fails_cleanly "run .so: missing input is named" "input 'w' \(f32\[N\]\) is not given" \
  "$ICC" run "$TOY" --input x="$T/tx.npy"
fails_cleanly "run .so: unknown input name" "no input named 'bogus'" \
  "$ICC" run "$TOY" --input bogus="$T/tx.npy"
fails_cleanly "run .so: wrong dtype" "input 'x' wants dtype f32\[N,4\], but .*tx64.npy holds f64" \
  "$ICC" run "$TOY" --input x="$T/tx64.npy" --input w="$T/tw.npy"
fails_cleanly "run .so: wrong rank" "input 'x' wants rank 2" \
  "$ICC" run "$TOY" --input x="$T/tx1.npy" --input w="$T/tw.npy"
fails_cleanly "run .so: inconsistent symbol" "input 'w' dim 0 \(N\) is 2" \
  "$ICC" run "$TOY" --input x="$T/tx.npy" --input w="$T/tw2.npy"
fails_cleanly "run .so: --name of a missing prefix" "not an icc model: no symbol 'nosuch_model'" \
  "$ICC" run "$TOY" --name=nosuch --input x="$T/tx.npy" --input w="$T/tw.npy"
fails_cleanly "run .so: another model's ABI version" "ABI version 999" \
  "$ICC" run "$TOY" --name=toy3 --input x="$T/tx.npy" --input w="$T/tw.npy"
echo 'int not_a_model(void) { return 1; }' >"$T/plain.c"
cc -shared -fPIC -o "$T/plain.so" "$T/plain.c"
fails_cleanly "run .so: a shared object that is not an icc model" "plain.so: not an icc model: no symbol 'model_model'" \
  "$ICC" run "$T/plain.so" --input x="$T/tx.npy"
echo "not ELF" >"$T/text.so"
fails_cleanly "run .so: not a shared object" "text.so: not a loadable shared object" "$ICC" run "$T/text.so"
fails_cleanly "run .so: missing file" "nope.so: No such file" "$ICC" run "$T/nope.so"
fails_cleanly "run .so: -O does not apply" "do not apply to a compiled model" \
  "$ICC" run "$TOY" -O2 --input x="$T/tx.npy" --input w="$T/tw.npy"

# --bind: a Reshape whose target shape is an input compiles once the shape is bound
python3 - "$T" <<'PY'
import sys, numpy as np, onnx
from onnx import helper as h, TensorProto as P
g = h.make_graph([h.make_node("Reshape", ["x", "shape"], ["y"])], "bindme",
                 [h.make_tensor_value_info("x", P.FLOAT, [2, 6]), h.make_tensor_value_info("shape", P.INT64, [2])],
                 [h.make_tensor_value_info("y", P.FLOAT, None)])
onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 17)]), sys.argv[1] + "/bindme.onnx")
np.save(sys.argv[1] + "/shape.npy", np.array([3, 4], np.int64))
np.save(sys.argv[1] + "/shape32.npy", np.array([3, 4], np.int32))
np.save(sys.argv[1] + "/bx.npy", np.arange(12, dtype=np.float32).reshape(2, 6))
PY
bind_compiles() {
  "$ICC" "$T/bindme.onnx" --bind=shape="$T/shape.npy" -o "$T/bindme.so" &&
    "$ICC" run "$T/bindme.so" --input x="$T/bx.npy" -o "$T/bind_out" &&
    python3 -c "import numpy as np,sys; y=np.load(sys.argv[1]); assert y.shape==(3,4) and (y.ravel()==np.arange(12)).all()" \
      "$T/bind_out/y.npy"
}
check "--bind makes a shape input constant, and the model compiles" bind_compiles
fails_cleanly "--bind: no such input" "--bind: the model has no input named 'nope'" \
  "$ICC" "$T/bindme.onnx" --bind=nope="$T/shape.npy" -o "$T/x.so"
fails_cleanly "--bind: wrong dtype" "--bind=shape=.*bound tensor is i32, the input is i64" \
  "$ICC" "$T/bindme.onnx" --bind=shape="$T/shape32.npy" -o "$T/x.so"
fails_cleanly "compile: a shape input left unbound" "depends on input values: bind the inputs that decide it with --bind" \
  "$ICC" "$T/bindme.onnx" -o "$T/x.so"
# a Squeeze without axes (opset 11) over a symbolic batch: its rank depends on
# whether the batch is 1, which dims decide, not values (speechmos' AECMOS
# models): the hint names the dim and says --shape, not --bind
python3 - "$T" <<'PY'
import sys, onnx
from onnx import helper as h, TensorProto as P
g = h.make_graph([h.make_node("Squeeze", ["x"], ["y"])], "sqall", [h.make_tensor_value_info("x", P.FLOAT, ["batch_size", 1, 4])],
                 [h.make_tensor_value_info("y", P.FLOAT, None)])
onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 11)]), sys.argv[1] + "/sqall.onnx")
PY
fails_cleanly "compile: a Squeeze without axes over a symbolic dim says which dim to pin" \
  "node 'y' \(Squeeze without axes\) drops every dim of 1, and whether 'batch_size' is 1 only the run knows: pin it with --shape" \
  "$ICC" "$T/sqall.onnx" -o "$T/x.so"
check "... and compiles pinned" "$ICC" "$T/sqall.onnx" --shape=x:1x1x4 -o "$T/sqall.so"
# a ceil_mode pool whose last window may start in the end padding: whether it
# does, and so the output's dim, the input's dims decide (one input, not NonZero)
python3 - "$T" <<'PY'
import sys, onnx
from onnx import helper as h, TensorProto as P
g = h.make_graph([h.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2], strides=[2, 2], pads=[0, 0, 1, 1], ceil_mode=1)],
                 "ceilpool", [h.make_tensor_value_info("x", P.FLOAT, [1, 2, "H", "W"])], [h.make_tensor_value_info("y", P.FLOAT, None)])
onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 19)]), sys.argv[1] + "/ceilpool.onnx")
PY
fails_cleanly "compile: a ceil_mode pool's symbolic output dim says --shape, not --bind" \
  "value 'y' has a dim that node 'y' \(MaxPool\) cannot give from symbolic dims: pin them with --shape" \
  "$ICC" "$T/ceilpool.onnx" -o "$T/x.so"

verify_ok() {
  "$ICC" verify "$M" --shape=image:8x1x8x8 --input image="$X" >"$T/verify" &&
    grep -qE "^  probs: 80 elements, max abs error [0-9.e+-]+, max rel error [0-9.e+-]+: ok$" "$T/verify"
}
check "verify: compiled and interpreter agree on the example" verify_ok
verify_strict() {
  # with zero tolerance, float rounding differences must be reported
  ! "$ICC" verify "$M" --shape=image:8x1x8x8 --rtol=0 --atol=0 >"$T/verify" 2>"$T/verr" &&
    grep -q "MISMATCH (.* beyond atol 0 + rtol 0)" "$T/verify" &&
    grep -q "the compiled model differs from the interpreter" "$T/verr"
}
check "verify: differences beyond the tolerance fail, naming the output" verify_strict
fails_cleanly "verify: made-up inputs need static dims" "input 'image': the input's shape is not static: pin it with --shape" \
  "$ICC" verify "$M"
fails_cleanly "verify: bad --rtol" "--rtol needs a non-negative number, not 'x'" "$ICC" verify "$M" --rtol=x
verify_metrics() {
  # the second line: cosine and SQNR, and top-1/top-5 since probs[8,10] looks like class scores
  "$ICC" verify "$M" --shape=image:8x1x8x8 --input image="$X" >"$T/verify" &&
    grep -qE "^    cosine 1\.0000000, SQNR [0-9.]+ dB, top-1 8/8 \(100\.0%\), top-5 8/8 \(100\.0%\)$" "$T/verify"
}
check "verify: cosine, SQNR and top-k of the example's class scores" verify_metrics
verify_bf16() {
  # bf16 weights against fp32: still the same classes, SQNR well above the 30 dB threshold
  "$ICC" verify "$M" --shape=image:8x1x8x8 --input image="$X" --precision=bf16 >"$T/verify" &&
    grep -q "compiled at fp32 in .* and at bf16 in" "$T/verify" &&
    grep -qE "^    cosine 0\.99999[0-9]+|^    cosine 1\.0000000" "$T/verify" && grep -q "top-1 8/8 (100.0%)" "$T/verify" &&
    awk '/SQNR/ { for (i = 1; i < NF; i++) if ($i == "SQNR") exit !($(i + 1) + 0 > 40) }' "$T/verify"
}
check "verify --precision=bf16: the example against fp32" verify_bf16
sets_dir() {
  mkdir -p "$T/sets/0" "$T/sets/1" && cp "$X" "$T/sets/0/image.npy" && cp "$X" "$T/sets/1/image.npy" &&
    "$ICC" verify "$M" --shape=image:8x1x8x8 --inputs="$T/sets" >"$T/verify" &&
    grep -q "^  probs: 80 elements x 2 sets, " "$T/verify" && grep -q "top-1 16/16 (100.0%)" "$T/verify"
}
check "verify --inputs=DIR: numbered sets, top-k summed over them" sets_dir
fails_cleanly "verify --inputs: a file naming no input" "sets/0/x.npy: the model has no input named 'x' \(its inputs: image\)" \
  sh -c "cp '$X' '$T/sets/0/x.npy' 2>/dev/null; '$ICC' verify '$M' --shape=image:8x1x8x8 --inputs='$T/sets'"
fails_cleanly "verify --per-node needs two precisions" "--per-node and --bisect compare two precisions" \
  "$ICC" verify "$M" --shape=image:8x1x8x8 --per-node
fails_cleanly "--json is only for verify" "--json is only for 'icc verify'" "$ICC" info "$M" --json

output_names_kept() {
  # -O2 removes the Identity; the compiled model still calls its output y
  cat >"$T/idn.icc" <<'ICC'
graph @g(%x: f32[4]) -> (%y, %z) {
  %y = Identity(%x) : f32[4]
  %z = Relu(%x) : f32[4]
}
ICC
  python3 -c "import numpy as np,sys; np.save(sys.argv[1], np.array([-1,2,-3,4],np.float32))" "$T/x4.npy" &&
    "$ICC" "$T/idn.icc" -o "$T/idn.so" && "$ICC" run "$T/idn.so" --input x="$T/x4.npy" -o "$T/idn" &&
    python3 -c "import numpy as np,sys; d=sys.argv[1]; assert (np.load(d+'/y.npy')==[-1,2,-3,4]).all() and (np.load(d+'/z.npy')==[0,2,0,4]).all()" "$T/idn" &&
    grep -q "MODEL_OUTPUT_Y_NAME \"y\"" "$T/idn.h"
}
check "compiled outputs keep their names when passes bypass them" output_names_kept

# --precision (docs/precision.md)
fails_cleanly "--precision: an unknown mode" "--precision=fp8: expected fp32, bf16, fp16, int8 or int8-dynamic" \
  "$ICC" info "$M" --precision=fp8
fails_cleanly "--precision: a pipeline without the precision pass" "--precision=bf16: the pipeline has no 'precision' pass" \
  "$ICC" "$M" --passes=shape-infer --precision=bf16 --emit=ir
# (the two activations are bf16 values too where the target multiplies bf16
# pairs, cooperlake; not where it widens to FMAs, x86-64-v3)
info_bf16() {
  "$ICC" info "$M" --precision=bf16 --no-default-keep -march=cooperlake >"$T/info16" &&
    "$ICC" info "$M" --precision=bf16 --no-default-keep -march=x86-64-v3 >"$T/info16v3" || return 1
  grep -qE "^  bf16 +2 +2 +4.74 KB$" "$T/info16" && grep -q "weight bytes: 9.64 KB at fp32, 4.90 KB at bf16 (0.51x)" "$T/info16" &&
    grep -qE "^  bf16 +0 +2 +4.74 KB$" "$T/info16v3" && grep -q "weight bytes: 9.64 KB at fp32, 4.90 KB at bf16 (0.51x)" "$T/info16v3"
}
check "info --precision=bf16: weights per dtype, bytes before and after; bf16 activations where the target multiplies pairs" info_bf16
compiled_half_matches_interpreter() {
  for p in bf16 fp16; do
    "$ICC" "$M" --shape=image:8x1x8x8 --precision=$p --no-default-keep -o "$T/d_$p.so" &&
      "$ICC" run "$T/d_$p.so" --input image="$X" -o "$T/d_$p" &&
      "$ICC" run "$M" -O2 --precision=$p --no-default-keep --shape=image:8x1x8x8 --input image="$X" -o "$T/r_$p" &&
      "$ICC" "$M" --emit=ir --precision=$p --no-default-keep -o "$T/d_$p.icc" &&
      grep -q "const $([ $p = bf16 ] && echo bf16 || echo f16)\[" "$T/d_$p.icc" ||
      return 1
  done
  # the weights' bytes, through --weights=external: this model's 9.6 KB of weights are
  # smaller than the page granularity and the widening code of the library itself
  for p in fp32 bf16 fp16; do
    "$ICC" "$M" --shape=image:8x1x8x8 --precision=$p --no-default-keep --weights=external -o "$T/w_$p.so" || return 1
  done
  python3 - "$T" <<'PY'
import sys, os, numpy as np
t = sys.argv[1]
for p in ["bf16", "fp16"]:
    got, want = np.load(t + "/d_%s/probs.npy" % p), np.load(t + "/r_%s/probs.npy" % p)
    assert np.abs(got - want).max() <= 1e-5, (p, np.abs(got - want).max())
    half, full = os.path.getsize(t + "/w_%s.weights" % p), os.path.getsize(t + "/w_fp32.weights")
    assert half <= 0.55 * full, (p, half, full)
PY
}
check "--precision=bf16/fp16: compiled matches the interpreter's half graph, weights half the bytes" compiled_half_matches_interpreter

no_partial_output() {
  # writing into a directory that does not exist fails and leaves nothing
  ! "$ICC" "$M" --emit=ir -o "$T/missing_dir/x.icc" 2>/dev/null && [ ! -e "$T/missing_dir" ] &&
    [ -z "$(ls "$T" | grep '\.tmp')" ]
}
check "a failed write leaves no file" no_partial_output

# int8: calibration sets and their errors (tests/models/int8_accuracy.py checks accuracy)
mkdir -p "$T/cal/0" "$T/cal/1" "$T/nocal" "$T/badcal/0"
python3 -c "import numpy as np,sys; [np.save(sys.argv[1]+'/%d/image.npy' % k, np.random.default_rng(k).random((2,1,8,8),dtype=np.float32)) for k in (0,1)]" "$T/cal"
python3 -c "import numpy as np,sys; np.save(sys.argv[1], np.zeros((2,1,8,9),np.float32))" "$T/badcal/0/image.npy"
int8_calibrated() {
  "$ICC" "$M" --shape=image:2x1x8x8 --precision=int8 --calibrate="$T/cal" --calibrate-method=entropy --no-default-keep \
    --emit=ir -o "$T/d8.icc" 2>"$T/cal.err" && grep -q "MatMulInteger" "$T/d8.icc" &&
    grep -q "calibrate: set 1" "$T/cal.err" && grep -q "calibrate: 2 sets" "$T/cal.err"
}
check "int8: --calibrate runs every set, MatMulInteger in the IR" int8_calibrated
fails_cleanly "int8: without --calibrate" "--precision=int8 needs activation ranges: give --calibrate=DIR" \
  "$ICC" "$M" --shape=image:2x1x8x8 --precision=int8 --emit=ir
fails_cleanly "int8: a folder without set 0" "no input set .*nocal/0" \
  "$ICC" "$M" --shape=image:2x1x8x8 --precision=int8 --calibrate="$T/nocal" --emit=ir
fails_cleanly "int8: a set that does not fit names the file" "badcal/0/image.npy: input 'image' is f32\\[2,1,8,8\\], the file holds f32\\[2,1,8,9\\]" \
  "$ICC" "$M" --shape=image:2x1x8x8 --precision=int8 --calibrate="$T/badcal" --emit=ir
fails_cleanly "int8: an unknown method" "--calibrate-method=kl: unknown method" "$ICC" "$M" --calibrate-method=kl
fails_cleanly "int8: --calibrate with another precision" "--calibrate is for --precision=int8" \
  "$ICC" "$M" --shape=image:2x1x8x8 --precision=int8-dynamic --calibrate="$T/cal" --emit=ir

# --target=cuda: CUDA C through NVRTC (docs/backends.md, "The CUDA backend"); compile-only here
if "$ICC" "$M" --target=cuda --emit=cuda >/dev/null 2>"$T/cuda.err" || ! grep -q "without the CUDA backend" "$T/cuda.err"; then
  cuda_every_kernel() {
    "$ICC" "$M" --target=cuda --emit=kernels >"$T/k.txt" && "$ICC" "$M" --target=cuda --emit=cuda >"$T/m.cu" &&
      "$ICC" "$M" --target=cuda --emit=ptx >"$T/m.ptx" || return 1
    local n; n=$(grep -c "^kernel @" "$T/k.txt")
    [ "$n" -gt 0 ] && [ "$(grep -c "^ICC_KERNEL model_k" "$T/m.cu")" -eq "$n" ] &&
      [ "$(grep -c "^.visible .entry model_k" "$T/m.ptx")" -eq "$n" ] && grep -q "^.target sm_90" "$T/m.ptx"
  }
  check "cuda: --emit=cuda has every kernel, NVRTC's PTX (sm_90) an entry for each" cuda_every_kernel
  check "cuda: --cuda-arch=sm_80" sh -c "'$ICC' '$M' --target=cuda --cuda-arch=sm_80 --emit=ptx | grep -q '^.target sm_80'"
  fails_cleanly "cuda: an architecture NVRTC lacks" "this NVRTC cannot compile for sm_52 \\(it supports sm_" \
    "$ICC" "$M" --target=cuda --cuda-arch=sm_52 --emit=ptx
  fails_cleanly "cuda: a malformed architecture" "bad CUDA architecture 'ampere'" "$ICC" "$M" --target=cuda --cuda-arch=ampere --emit=cuda
  fails_cleanly "cuda: symbolic dims are refused, and no file left" "cuda.so: --target=cuda cannot compile a model with symbolic dims \(pin them with --shape\) yet" \
    "$ICC" "$M" --target=cuda -o "$T/cuda.so"
  check "cuda: the refused library left nothing" test ! -e "$T/cuda.so" -a ! -e "$T/cuda.h"
  fails_cleanly "cuda: --profile is refused" "cannot compile a profiled model" \
    "$ICC" "$M" --target=cuda --shape=image:8x1x8x8 --profile -o "$T/cuda.so"
  check "cuda: a model library (static shapes)" "$ICC" "$M" --target=cuda --shape=image:8x1x8x8 -o "$T/cuda.so"
  check "cuda: ... and its header" grep -q "model_model" "$T/cuda.h"
  check "cuda: icc info describes the library (no driver needed)" sh -c \
    "'$ICC' info '$T/cuda.so' | grep -q '^target: CUDA sm_90: [0-9]* kernels' && '$ICC' info '$T/cuda.so' | grep -q '^  image: f32\[8,1,8,8\]'"
  # a damaged plan (one byte of its kernel table) is refused at open, before any driver
  damaged_plan() {
    python3 - "$T/cuda.so" "$T/damaged.so" <<'PY'
import struct, sys
b = bytearray(open(sys.argv[1], "rb").read())
i = b.find(b"ICCCUDA1")
while i >= 0 and struct.unpack_from("<II", b, i + 8)[0] != 3:
    i = b.find(b"ICCCUDA1", i + 1)
kernels = struct.unpack_from("<q", b, i + 64)[0]   # the kernel table's offset
b[i + kernels + 12] ^= 1                            # kernel 0's argument count
open(sys.argv[2], "wb").write(b)
PY
  }
  check "cuda: a damaged copy of the library" damaged_plan
  fails_cleanly "cuda: ... is refused at open" "damaged.so .*the CUDA plan has a checksum that does not match" \
    "$ICC" info "$T/damaged.so"
  # its run needs the CUDA driver, opened at context creation: none here (ICC_CUDA_DRIVER
  # names a library that does not exist, so that this holds on a GPU machine too)
  fails_cleanly "cuda: no driver is a clean error" "no CUDA driver \(/nonexistent/libcuda.so.1: cannot open" \
    env ICC_CUDA_DRIVER=/nonexistent/libcuda.so.1 "$ICC" run "$T/cuda.so" --input image="$X"
  # the stand-in driver (tests/cuda/fake_driver.c) runs the kernels' CUDA C on the CPU
  FAKE=$(dirname "$ICC")/tests/libfakecuda.so
  if [ -e "$FAKE" ]; then
    "$ICC" "$M" --target=cuda --shape=image:8x1x8x8 --emit=cuda >"$T/cuda.cu" &&
      c++ -x c++ -std=c++17 -O0 -w -shared -fPIC -include tests/cuda/emu.h -o "$T/emu.so" "$T/cuda.cu"
    "$ICC" "$M" --shape=image:8x1x8x8 -o "$T/cpu.so"
    cuda_matches_cpu() {
      mkdir -p "$T/gpu_out" "$T/cpu_out" &&
        env ICC_CUDA_DRIVER="$FAKE" ICC_FAKE_CUDA_EMU="$T/emu.so" ICC_FAKE_CUDA_LOG="$T/fake.log" \
          "$ICC" run "$T/cuda.so" --input image="$X" -o "$T/gpu_out" &&
        "$ICC" run "$T/cpu.so" --input image="$X" -o "$T/cpu_out" &&
        grep -q "^load cubin" "$T/fake.log" && grep -q "^launch" "$T/fake.log" &&
        python3 -c "import numpy as n,sys; a=n.load(sys.argv[1]); b=n.load(sys.argv[2]); sys.exit(not (a.shape==b.shape and n.allclose(a,b,rtol=1e-5,atol=1e-6)))" \
          "$T/gpu_out/probs.npy" "$T/cpu_out/probs.npy"
    }
    check "cuda: the library through the runtime and a stand-in driver matches the CPU library" cuda_matches_cpu
    cuda_ptx_fallback() {
      rm -f "$T/fake.log"
      env ICC_CUDA_DRIVER="$FAKE" ICC_FAKE_CUDA_EMU="$T/emu.so" ICC_FAKE_CUDA_NO_CUBIN=1 ICC_FAKE_CUDA_LOG="$T/fake.log" \
        "$ICC" run "$T/cuda.so" --input image="$X" >/dev/null && grep -q "^load ptx" "$T/fake.log"
    }
    check "cuda: a GPU the cubin is not for gets the PTX" cuda_ptx_fallback
    check "cuda: icc verify compares the CUDA library with the CPU's" sh -c \
      "ICC_CUDA_DRIVER='$FAKE' ICC_FAKE_CUDA_EMU='$T/emu.so' '$ICC' verify '$M' --shape=image:8x1x8x8 --target=cuda | grep -q 'probs: 80 elements, .*: ok'"
    # NAME.onnx's CUDA C built for the stand-in driver, then icc verify through it; its
    # report must match the pattern
    cuda_emu_verify() {
      "$ICC" "$T/$1.onnx" --target=cuda --emit=cuda >"$T/$1.cu" &&
        c++ -x c++ -std=c++17 -O0 -w -shared -fPIC -include tests/cuda/emu.h -o "$T/$1_emu.so" "$T/$1.cu" &&
        ICC_CUDA_DRIVER="$FAKE" ICC_FAKE_CUDA_EMU="$T/$1_emu.so" "$ICC" verify "$T/$1.onnx" --target=cuda >"$T/$1.v" &&
        grep -q "$2" "$T/$1.v"
    }
    # MatMul/Gemm on the GPU tiles (codegen/lower/matmul.c, lower_gpu): a
    # grid of thread blocks, shared memory, barriers (emu.h runs a block's
    # threads as pthreads, so a missing barrier shows)
    cuda_gpu_tiles() {
      python3 - "$T/gemm.onnx" <<'PY' || return 1
import sys
import numpy as np
from onnx import TensorProto, helper, save
r = np.random.default_rng(1)
g = helper.make_graph(
    [helper.make_node("Gemm", ["a", "b", "c"], ["t"], transA=1, transB=1, alpha=0.5, beta=2.0),
     helper.make_node("Relu", ["t"], ["y"])], "gemm",
    [helper.make_tensor_value_info("a", TensorProto.FLOAT, [48, 80])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [80, 100])],
    [helper.make_tensor("b", TensorProto.FLOAT, [100, 48], r.standard_normal(4800).astype(np.float32)),
     helper.make_tensor("c", TensorProto.FLOAT, [100], r.standard_normal(100).astype(np.float32))])
save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), sys.argv[1])
PY
      "$ICC" "$T/gemm.onnx" --target=cuda --emit=kernels >"$T/gemm.k" && grep -q '^  grid for' "$T/gemm.k" &&
        "$ICC" "$T/gemm.onnx" --target=cuda --emit=ptx >"$T/gemm.ptx" && grep -q 'bar.sync' "$T/gemm.ptx" &&
        cuda_emu_verify gemm 'y: 8000 elements, .*: ok'
    }
    check "cuda: a Gemm (transposes, bias, Relu) runs as shared-memory tiles with barriers, as the CPU computes it" cuda_gpu_tiles
    # f16 operands: the tensor cores (mma_sync, sm_80 on), emulated here lane by lane
    cuda_mma() {
      python3 - "$T/hmm.onnx" <<'PY' || return 1
import sys
from onnx import TensorProto, helper, save
H = TensorProto.FLOAT16
g = helper.make_graph([helper.make_node("MatMul", ["a", "b"], ["y"])], "hmm",
                      [helper.make_tensor_value_info("a", H, [70, 50]), helper.make_tensor_value_info("b", H, [50, 90])],
                      [helper.make_tensor_value_info("y", H, [70, 90])])
save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), sys.argv[1])
PY
      "$ICC" "$T/hmm.onnx" --target=cuda --emit=kernels >"$T/hmm.k" && grep -q 'mma_sync(1)' "$T/hmm.k" &&
        "$ICC" "$T/hmm.onnx" --target=cuda --emit=ptx >"$T/hmm.ptx" && grep -q 'mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32' "$T/hmm.ptx" &&
        "$ICC" "$T/hmm.onnx" --target=cuda --cuda-arch=sm_75 --emit=kernels >"$T/hmm75.k" && ! grep -q 'mma_sync' "$T/hmm75.k" &&
        cuda_emu_verify hmm 'y: 6300 elements, .*: ok'
    }
    check "cuda: an f16 MatMul takes the tensor cores (mma.sync from sm_80), as the CPU computes it" cuda_mma
    # rows of Softmax / LayerNormalization / RMSNormalization: a thread block per row, the
    # partials combined in shared memory (codegen/lower/reduce.c, red_outer_rows); 10 rows on
    # the emulation's 2 blocks, so a block's next row reuses the buffer
    cuda_rows() {
      python3 - "$T/rows.onnx" <<'PY' || return 1
import sys
import numpy as np
from onnx import TensorProto, helper, save
F = TensorProto.FLOAT
r = np.random.default_rng(2)
g = helper.make_graph(
    [helper.make_node("RMSNormalization", ["x", "g"], ["n"], axis=-1),
     helper.make_node("LayerNormalization", ["n", "g", "b"], ["l"], axis=-1),
     helper.make_node("Softmax", ["l"], ["y"], axis=-1)], "rows",
    [helper.make_tensor_value_info("x", F, [10, 96])], [helper.make_tensor_value_info("y", F, [10, 96])],
    [helper.make_tensor("g", F, [96], r.random(96).astype(np.float32)),
     helper.make_tensor("b", F, [96], r.random(96).astype(np.float32))])
save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 23)]), sys.argv[1])
PY
      "$ICC" "$T/rows.onnx" --target=cuda --emit=kernels >"$T/rows.k" && [ "$(grep -c '^  grid for' "$T/rows.k")" = 3 ] &&
        cuda_emu_verify rows 'y: 960 elements, .*: ok'
    }
    check "cuda: RMSNorm, LayerNorm and Softmax rows reduce over a thread block, as the CPU computes them" cuda_rows
    fails_cleanly "cuda: icc verify without a driver" "no CUDA driver" \
      env ICC_CUDA_DRIVER=/nonexistent/libcuda.so.1 "$ICC" verify "$M" --shape=image:8x1x8x8 --target=cuda
    fails_cleanly "cuda: icc verify takes no --per-node" "--target=cuda compares the CUDA library with the CPU one" \
      "$ICC" verify "$M" --shape=image:8x1x8x8 --target=cuda --per-node
    fails_cleanly "cuda: no device is a clean error" "no CUDA device" \
      env ICC_CUDA_DRIVER="$FAKE" ICC_FAKE_CUDA_DEVICES=0 "$ICC" run "$T/cuda.so" --input image="$X"
    fails_cleanly "cuda: a device ordinal past the last" "no CUDA device 3 \(ICC_CUDA_DEVICE; this machine has 1\)" \
      env ICC_CUDA_DRIVER="$FAKE" ICC_CUDA_DEVICE=3 "$ICC" run "$T/cuda.so" --input image="$X"
    fails_cleanly "cuda: a driver without the entry points" "lacks cuInit" \
      env ICC_CUDA_DRIVER="$T/emu.so" "$ICC" run "$T/cuda.so" --input image="$X"
  fi
  fails_cleanly "cuda: LLVM's emit kinds" "unknown --emit kind 'llvm' for --target=cuda" "$ICC" "$M" --target=cuda --emit=llvm
  fails_cleanly "cuda: run takes the library" "--target=cuda is for compiling .*'icc run M.so' then runs" "$ICC" run "$M" --target=cuda --input image="$X"
else
  fails_cleanly "cuda: a build without NVRTC says so" "built without the CUDA backend" "$ICC" "$M" --target=cuda --emit=cuda
fi
fails_cleanly "cuda: --cuda-arch needs --target=cuda" "--cuda-arch is for --target=cuda" "$ICC" "$M" --cuda-arch=sm_90 --emit=kernels
fails_cleanly "cuda: -march is the CPU's" "-march is for the CPU target" "$ICC" "$M" --target=cuda -march=znver3 --emit=cuda
fails_cleanly "an unknown --target" "--target=tpu: expected cpu or cuda" "$ICC" "$M" --target=tpu --emit=cuda
fails_cleanly "--emit=cuda without --target=cuda" "unknown --emit kind 'cuda' .*cuda and ptx with --target=cuda" "$ICC" "$M" --emit=cuda

echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
