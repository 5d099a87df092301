#!/usr/bin/env bash
# Runs icc on every malformed model of the bad-input corpus and checks that
# each is rejected cleanly:
#   - exit status exactly 1 (not 0, not a signal, not a timeout)
#   - stderr is one line, "icc: error: ", naming the file, carrying the
#     case's expected error (cases.tsv), no longer than the case allows,
#     with no control characters and no sanitizer report
#   - nothing on stdout, and `icc FILE --emit=ir -o OUT` leaves no OUT
# Usage: tests/bad/run.sh ICC_BINARY [CASE_SUBSTRING]
# The corpus is generated into a temporary folder by make_corpus.py.
# KEEP=1 keeps that folder (its path is printed) for debugging.
set -uo pipefail

if [ $# -lt 1 ] || [ ! -x "$1" ]; then
    echo "usage: $0 ICC_BINARY [CASE_SUBSTRING]" >&2
    exit 2
fi
ICC=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
FILTER=${2:-}
HERE=$(cd "$(dirname "$0")" && pwd)
TIMEOUT=${ICC_BAD_TIMEOUT:-60}
# Sanitizer builds: report leaks and stop at the first UB (no-ops otherwise).
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

TMP=$(mktemp -d "${TMPDIR:-/tmp}/icc-bad.XXXXXX")
if [ "${KEEP:-0}" = 1 ]; then
    echo "corpus kept in $TMP"
else
    trap 'rm -rf "$TMP"' EXIT
fi
CORPUS=$TMP/corpus
OUT=$TMP/out
mkdir -p "$CORPUS" "$OUT"
if ! python3 "$HERE/make_corpus.py" "$CORPUS"; then
    echo "bad inputs: make_corpus.py failed (python3 with the onnx package is needed)" >&2
    exit 1
fi

pass=0
fail=0

# check NAME FILE EXPECT MAXLEN RC STDOUT STDERR: prints why a run is wrong,
# nothing if it is right.
check() {
    local name=$1 file=$2 expect=$3 maxlen=$4 rc=$5 out=$6 err=$7
    if grep -qE 'AddressSanitizer|LeakSanitizer|UndefinedBehaviorSanitizer|runtime error:|MemorySanitizer' "$err"; then
        echo "sanitizer report: $(grep -m1 -E 'ERROR|runtime error' "$err" | cut -c1-200)"
        return
    fi
    case $rc in
        1) ;;
        0) echo "exit status 0 (the model was accepted)"; return ;;
        124) echo "timed out after ${TIMEOUT}s"; return ;;
        *) if [ "$rc" -gt 128 ]; then echo "killed by signal $((rc - 128))"
           else echo "exit status $rc, expected 1"; fi
           return ;;
    esac
    if [ -s "$out" ]; then
        echo "wrote to stdout: $(head -c 120 "$out" | tr -c '[:print:]' '?')"
        return
    fi
    local lines bytes
    lines=$(wc -l < "$err")
    bytes=$(wc -c < "$err")
    if [ "$lines" -ne 1 ] || [ "$(tail -c1 "$err" | od -An -c | tr -d ' ')" != '\n' ]; then
        echo "stderr is $lines lines, expected one: $(head -c 200 "$err" | tr -c '[:print:]' '?')"
        return
    fi
    if LC_ALL=C grep -q '[[:cntrl:]]' <(head -c $((bytes - 1)) "$err"); then
        echo "control characters in the message: $(head -c 200 "$err" | tr -c '[:print:]' '?')"
        return
    fi
    local msg
    msg=$(cat "$err")
    if [ "${msg#icc: error: }" = "$msg" ]; then
        echo "message does not start with 'icc: error: ': $(echo "$msg" | cut -c1-200)"
        return
    fi
    if ! grep -qF -- "$file" "$err"; then
        echo "message does not name the file: $(echo "$msg" | cut -c1-200)"
        return
    fi
    if [ "$bytes" -gt "$maxlen" ]; then
        echo "message is $bytes bytes (at most $maxlen): $(echo "$msg" | cut -c1-200)..."
        return
    fi
    # Case names echo their expected errors: match without the file's path.
    if ! printf '%s\n' "${msg//"$file"/}" | LC_ALL=C grep -qiE -- "$expect"; then
        echo "expected /$expect/, got: $(echo "$msg" | cut -c1-300)"
        return
    fi
}

while IFS=$'\t' read -r name expect maxlen; do
    case $name in ''|'#'*) continue ;; esac
    [ -n "$FILTER" ] && [[ $name != *"$FILTER"* ]] && continue
    file=$CORPUS/$name
    why=""

    timeout "$TIMEOUT" "$ICC" info "$file" > "$TMP/stdout" 2> "$TMP/stderr" < /dev/null
    rc=$?
    why=$(check "$name" "$file" "$expect" "$maxlen" "$rc" "$TMP/stdout" "$TMP/stderr")
    msg=$(head -c 300 "$TMP/stderr" | head -n1)

    if [ -z "$why" ]; then
        dest=$OUT/${name//\//_}.icc
        timeout "$TIMEOUT" "$ICC" "$file" --emit=ir -o "$dest" > "$TMP/stdout" 2> "$TMP/stderr" < /dev/null
        rc=$?
        why=$(check "$name" "$file" "$expect" "$maxlen" "$rc" "$TMP/stdout" "$TMP/stderr")
        [ -n "$why" ] && why="--emit=ir: $why"
        if [ -z "$why" ] && [ -n "$(ls -A "$OUT")" ]; then
            why="--emit=ir left output behind: $(ls -A "$OUT" | head -3 | tr '\n' ' ')"
        fi
        rm -rf "${OUT:?}"/* "${OUT:?}"/.[!.]* 2>/dev/null
    fi

    if [ -z "$why" ]; then
        pass=$((pass + 1))
        msg=${msg#icc: error: }
        msg=${msg#"$file"}
        echo "ok   $name: ${msg#: }" | cut -c1-200
    else
        fail=$((fail + 1))
        echo "FAIL $name: $why" | cut -c1-400
        if [ -s "$TMP/stderr" ] && grep -qE 'Sanitizer|runtime error:' "$TMP/stderr"; then
            sed 's/^/     | /' "$TMP/stderr" | head -40
        fi
    fi
done < "$CORPUS/cases.tsv"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ] && [ "$pass" -gt 0 ]
