#!/usr/bin/env bash
# Tests of what a user of an installed icc sees: `cmake --install` into a
# fresh prefix, then (1) the CMake consumer project (find_package(icc),
# icc_add_model, the digits app, the generic runner), (2) the generic
# runner built through pkg-config, (3) the digits app linked by hand
# against a model compiled with --weights=external. Each app's output is
# checked: the digits app must classify the held-out images as train.py
# measured (97.50%). Usage: tests/install/run.sh BUILD_DIR
set -uo pipefail
B=$(realpath "$1")
cd "$(dirname "$0")/../.."
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
pass=0 fail=0
check() { # name, then a command that must succeed
  local name=$1; shift
  if "$@" >"$T/out" 2>"$T/err"; then pass=$((pass + 1)); echo "ok   $name"
  else fail=$((fail + 1)); echo "FAIL $name"; tail -n 5 "$T/out" "$T/err"; fi
}

check "cmake --install into a fresh prefix" cmake --install "$B" --prefix "$T/inst"

consumer() {
  cmake -S examples/cmake_consumer -B "$T/app" -DCMAKE_PREFIX_PATH="$T/inst" >/dev/null &&
    cmake --build "$T/app" >/dev/null &&
    "$T/app/digits_app" examples/digits | tee "$T/app.txt" &&
    grep -q "^accuracy: 351/360 = 97.50%" "$T/app.txt" &&
    "$T/app/icc_runner" "$T/app/digits.so" --name=digits --runs=3 | grep -q "probs: 80 elements, sum 8"
}
check "CMake consumer: icc_add_model, the digits app, the generic runner" consumer

pkgconfig_runner() {
  local flags
  flags=$(PKG_CONFIG_PATH="$T/inst/lib/pkgconfig" pkg-config --static --cflags --libs icc) || return 1
  # shellcheck disable=SC2086
  cc -O2 examples/runner/icc_runner.c $flags -o "$T/runner" &&
    "$T/inst/bin/icc" examples/digits/digits.onnx --shape=image:8x1x8x8 -o "$T/d.so" &&
    "$T/runner" "$T/d.so" --runs=3 | grep -q "probs: 80 elements, sum 8"
}
check "pkg-config builds the generic runner, which loads a model by path" pkgconfig_runner

external_weights() {
  mkdir -p "$T/ext" &&
    "$T/inst/bin/icc" examples/digits/digits.onnx --shape=image:8x1x8x8 --name=digits --weights=external \
      -o "$T/ext/digits.so" && [ -s "$T/ext/digits.weights" ] &&
    cc -O2 -I"$T/inst/include" -I"$T/ext" examples/digits/app.c "$T/ext/digits.so" -Wl,-rpath,"$T/ext" \
      -o "$T/ext/app" &&
    "$T/ext/app" examples/digits | grep -q "^accuracy: 351/360 = 97.50%" &&
    mv "$T/ext/digits.weights" "$T/ext/w" && ! "$T/ext/app" examples/digits 2>"$T/ext/err" &&
    grep -q "digits.weights: cannot open the model's weights" "$T/ext/err"
}
check "--weights=external: the app maps digits.weights, and says so when it is missing" external_weights

two_models() {
  # two models with different --name link into one program
  "$T/inst/bin/icc" examples/digits/digits.onnx --shape=image:8x1x8x8 --name=first -o "$T/first.so" &&
    "$T/inst/bin/icc" examples/digits/digits.onnx --shape=image:8x1x8x8 --name=second -o "$T/second.so" &&
    cat >"$T/two.c" <<'C' &&
#include <stdio.h>
#include "first.h"
#include "second.h"
int main(void)
{
    static float x[8 * 64], p1[80], p2[80];
    for (int i = 0; i < 8 * 64; i++)
        x[i] = (float)(i % 17) / 16;
    icc_model *a, *b;
    icc_context *ca, *cb;
    if (icc_model_from_desc(&first_model, &a) || icc_model_from_desc(&second_model, &b) ||
        icc_context_create(a, NULL, &ca) || icc_context_create(b, NULL, &cb) ||
        first_run(ca, x, p1) || second_run(cb, x, p2))
        return 1;
    for (int i = 0; i < 80; i++)
        if (p1[i] != p2[i])
            return 1;
    printf("two models agree\n");
    return 0;
}
C
    cc -O2 -I"$T/inst/include" -I"$T" "$T/two.c" "$T/first.so" "$T/second.so" -Wl,-rpath,"$T" -o "$T/two" &&
    "$T/two" | grep -q "two models agree"
}
check "two models with different --name link into one program" two_models

echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
