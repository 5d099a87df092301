#!/usr/bin/env bash
# Runs every libFuzzer target of a fuzz build for SECONDS each, starting
# from a copy of its seeds (tests/fuzz/seeds/<onnx|text|diff>/) in a temporary
# folder, and fails if any finds a crash, leak, timeout or memory blow-up,
# or if a target with a source here (tests/fuzz/fuzz_*.c) was not built.
# Inputs that break a fuzzer are kept in BUILD_DIR/fuzz-artifacts/ and
# their paths printed; replay one with `BUILD_DIR/tests/fuzz/fuzz_X FILE`.
# Usage: tests/fuzz/run.sh BUILD_DIR SECONDS
set -uo pipefail

if [ $# -ne 2 ]; then
    echo "usage: $0 BUILD_DIR SECONDS" >&2
    exit 2
fi
BUILD=$(cd "$1" && pwd) || exit 2
SECONDS_EACH=$2
HERE=$(cd "$(dirname "$0")" && pwd)
ART=$BUILD/fuzz-artifacts
TMP=$(mktemp -d "${TMPDIR:-/tmp}/icc-fuzz.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
mkdir -p "$ART"

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

# Dictionaries from the op registry, so mutations try real op and attribute
# names: raw, and (ONNX) as encoded NodeProto.op_type / AttributeProto.name.
ROOT=$(cd "$HERE/../.." && pwd)
OPS=$(grep -oE '^OP\([A-Z0-9_]+, *"[A-Za-z0-9]+"' "$ROOT/ir/ops.def" | sed -E 's/.*"(.*)"/\1/')
ATTRS=$(grep -E '^OP\(' "$ROOT/ir/ops.def" | awk -F'"' '{print $6}' | tr ' ' '\n' |
        sed -E 's/:.*//' | sort -u)
{
    for o in $OPS; do printf '"%s"\n"\\x22\\x%02x%s"\n' "$o" ${#o} "$o"; done
    for a in $ATTRS; do printf '"\\x0a\\x%02x%s"\n' ${#a} "$a"; done
    for dom in ai.onnx com.microsoft; do printf '"\\x3a\\x%02x%s"\n' ${#dom} "$dom"; done
} > "$TMP/onnx.dict"
{
    for o in $OPS $ATTRS graph const data hex f32 f16 bf16 f64 i8 u8 i16 u16 i32 u64 i64 u32 bool \
             inf nan true false '->' '%' '@' '[*]' '?[' '\\x'; do
        printf '"%s"\n' "$o"
    done
} > "$TMP/text.dict"

found=0
failed=0
# Every target with a source here must have been built: one left out of
# the build (CMake's list, a failed link) fails the run, not skips it.
missing=0
for src in "$HERE"/fuzz_*.c; do
    name=$(basename "$src" .c)
    if [ ! -x "$BUILD/tests/fuzz/$name" ] || [ ! -f "$BUILD/tests/fuzz/$name" ]; then
        echo "FAIL $name: $BUILD/tests/fuzz/$name was not built (its source is $src)" >&2
        missing=$((missing + 1))
    fi
done
for fuzzer in "$BUILD"/tests/fuzz/fuzz_*; do
    [ -x "$fuzzer" ] && [ -f "$fuzzer" ] || continue
    name=$(basename "$fuzzer")
    kind=${name#fuzz_}
    found=$((found + 1))
    corpus=$TMP/$name
    mkdir -p "$corpus" "$ART/$name"
    if [ -d "$HERE/seeds/$kind" ]; then
        cp -r "$HERE/seeds/$kind/." "$corpus/"
    fi
    before=$(ls "$ART/$name" | wc -l)
    echo "== $name: ${SECONDS_EACH}s from $(ls "$corpus" | wc -l) seeds"
    dict=()
    [ -s "$TMP/$kind.dict" ] && dict=(-dict="$TMP/$kind.dict")
    "$fuzzer" -max_total_time="$SECONDS_EACH" -rss_limit_mb=2048 -timeout=10 "${dict[@]}" \
        -artifact_prefix="$ART/$name/" -print_final_stats=1 "$corpus" > "$TMP/$name.log" 2>&1
    rc=$?
    grep -E '^#[0-9]+ +DONE|stat::number_of_executed_units|stat::peak_rss_mb' "$TMP/$name.log" |
        sed 's/^/   /'
    after=$(ls "$ART/$name" | wc -l)
    if [ "$rc" -ne 0 ] || [ "$after" -gt "$before" ]; then
        failed=$((failed + 1))
        echo "FAIL $name (exit $rc)"
        grep -E 'ERROR|SUMMARY|runtime error|fuzz_[a-z]+: |Test unit written to' "$TMP/$name.log" |
            head -20 | sed 's/^/   /'
        cp "$TMP/$name.log" "$ART/$name/last-failure.log"
        echo "   full log: $ART/$name/last-failure.log"
    else
        echo "ok   $name"
    fi
done

if [ "$found" -eq 0 ]; then
    echo "no fuzzers in $BUILD/tests/fuzz (configure with -DICC_FUZZ=ON)" >&2
    exit 1
fi
echo "$((found - failed)) fuzzers clean, $failed found failures, $missing missing"
[ "$failed" -eq 0 ] && [ "$missing" -eq 0 ]
