#!/usr/bin/env python3
"""Compiled models against each other on a noisy machine: each round runs every
library once (`icc bench LIB --threads=T --runs=N --time=0.01 --warmup=0.1
--json`), so a slow stretch of the host hits them all alike, and the summary
per library is the minimum of the rounds' minimums, the best p50 and the median
p50 (docs/performance.md uses the minimums where neighbours make the host 2-3x
slow for stretches).

    python3 bench/ab.py [--icc build/icc] [--threads 1] [--rounds 6] [--runs 200] A.so B.so ...

`icc bench A.so B.so` takes turns run by run instead and reports each library's median ratio
to the first in the same round, which holds where a slow stretch of the host lasts less than
one of these rounds (docs/performance.md, "Two builds side by side").
"""
import argparse
import json
import statistics
import subprocess
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    ap.add_argument("libs", nargs="+")
    ap.add_argument("--icc", default="build/icc")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--runs", type=int, default=200)
    a = ap.parse_args()
    got = {lib: [] for lib in a.libs}
    for r in range(a.rounds):
        for lib in a.libs:
            out = subprocess.run([a.icc, "bench", lib, "--threads=%d" % a.threads, "--runs=%d" % a.runs,
                                  "--time=0.01", "--warmup=0.1", "--json"], capture_output=True, text=True)
            if out.returncode != 0:
                print("%s: %s" % (lib, (out.stderr or out.stdout).strip()), file=sys.stderr)
                return 1
            res = json.loads(out.stdout)["results"][0]
            got[lib].append((res["min_ms"], res["p50_ms"]))
            print("round %d %s: min %.3f ms, p50 %.3f ms" % (r, lib, res["min_ms"], res["p50_ms"]), file=sys.stderr)
    print("threads %d, %d rounds of %d runs" % (a.threads, a.rounds, a.runs))
    for lib, v in got.items():
        print("%s: min %.3f ms, best p50 %.3f, median p50 %.3f"
              % (lib, min(m for m, _ in v), min(p for _, p in v), statistics.median(p for _, p in v)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
