"""What the tests of packed kernels share (tests/models/bf16_pairs.py,
int8_packed.py): running icc, compiling a model and running it on one input
through the compiled library, and the loop over the cases (run_cases); and
the ok/FAIL line counter of the scripts that print one line per check
(Report). The control-flow tests run a library on several named inputs
(run_feed)."""
import os
import subprocess
import sys
import tempfile

import numpy as np


class Report:
    """report(ok, what) prints "ok   what" or "FAIL what" and counts the
    failures (report.failures)."""

    def __init__(self):
        self.failures = 0

    def __call__(self, ok, what):
        self.failures += not ok
        print(("ok   " if ok else "FAIL ") + what, flush=True)


def run(cmd):
    """cmd's stdout; RuntimeError naming the command and its error if it fails."""
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError("%s: %s" % (" ".join(os.path.basename(c) for c in cmd[:2]), (p.stderr or p.stdout).strip()))
    return p.stdout


def compile_and_run(icc, model, flags, inp, npy, out, tmp, tag):
    """Compiles model (.onnx or .icc) with flags into tmp/tag.so, runs it with
    input inp = the file npy, and returns output out as an array."""
    so = os.path.join(tmp, tag + ".so")
    run([icc, model, "-o", so] + flags)
    return run_lib(icc, so, inp, npy, out, tmp, tag)


def run_lib(icc, so, inp, npy, out, tmp, tag):
    """Runs the compiled library so with input inp = the file npy (its
    outputs in tmp/tag_got) and returns output out as an array."""
    got = os.path.join(tmp, tag + "_got")
    run([icc, "run", so, "--input", inp + "=" + npy, "-o", got])
    return np.load(os.path.join(got, out + ".npy"))


def run_feed(icc, lib, feed, t):
    """icc run lib (a library or a model) on feed, a dict of arrays saved
    as t/NAME.npy, outputs into t/out (emptied first): (returncode, stderr
    stripped, outputs by name)."""
    import glob
    for f in glob.glob(t + "/out/*.npy"):
        os.remove(f)
    args = [icc, "run", lib, "-o", t + "/out"]
    for k, v in feed.items():
        np.save("%s/%s.npy" % (t, k), v)
        args += ["--input", "%s=%s/%s.npy" % (k, t, k)]
    r = subprocess.run(args, capture_output=True, text=True, timeout=300)
    outs = {os.path.basename(f)[:-4]: np.load(f) for f in glob.glob(t + "/out/*.npy")}
    return r.returncode, r.stderr.strip(), outs


def cpu_has(flag):
    """Whether /proc/cpuinfo lists flag (avx512_bf16, avx512_vnni...)."""
    try:
        with open("/proc/cpuinfo") as f:
            return any(flag in line.split() for line in f if line.startswith("flags"))
    except OSError:
        return False


def interp_per_march(icc, tmp, name, path, inp, x, passes, flags):
    """want_for(march): interp_want's input file and output (as float64) for
    -march=march (None: the host), each computed once. bf16 graphs differ by
    target: the activations are rounded only where it multiplies bf16 pairs
    (bf16_pairs_host)."""
    wants = {}

    def want_for(march):
        if march not in wants:
            f = list(flags) + (["-march=" + march] if march else [])
            xp, w = interp_want(icc, tmp, name + (march or ""), path, inp, x, passes, f)
            wants[march] = xp, w.astype(np.float64)
        return wants[march]
    return want_for


def bf16_pairs_host(icc, model):
    """Whether icc compiles bf16 contractions for this host on vdpbf16ps (the
    pair kernel; cg_schedule_bf16_pairs): the host has avx512_bf16, and AMX-BF16
    or a measured vdpbf16ps rate ("bf16-dot=Rx-fma" on the target line of
    `icc info model`) of at least 0.75 of the FMA's. Where it has avx512_bf16
    and not the rate (Intel cores without AMX: 0.5), -march=cooperlake (a
    named CPU: nothing measured) compiles the pair kernel for it."""
    if not cpu_has("avx512_bf16"):
        return False
    if cpu_has("amx_bf16"):
        return True
    line = next((l for l in run([icc, "info", model]).splitlines() if l.startswith("target:")), "")
    rate = next((w for w in line.split() if w.startswith("bf16-dot=")), None)
    if rate is None:
        return True
    r = rate[len("bf16-dot="):].split("x")[0]
    # the compiles this process starts take the same rate, not one
    # measured again (on a loaded machine two measurements can fall on
    # either side of 0.75)
    os.environ.setdefault("ICC_BF16_DOT_RATE", r)
    return float(os.environ["ICC_BF16_DOT_RATE"]) >= 0.75


def run_cases(doc, cases, check, flag, kernel):
    """The main of a packed-kernel test: sys.argv is [script, icc] (else the
    usage line of doc, exit 2); prints whether the host has the cpuinfo flag
    that kernel (its name) needs; check(icc, tmp, name, kw) runs one case in
    the temporary folder tmp, prints a line per check and returns how many
    failed (a RuntimeError from run counts as one). Returns the exit code:
    1 if any check failed."""
    if len(sys.argv) != 2:
        print(doc.strip().splitlines()[-2].strip(), file=sys.stderr)
        return 2
    has = cpu_has(flag)
    print("host has %s: %s (%s is %s)" % (flag, has, kernel, "expected" if has else "not expected"))
    failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        for name, kw in cases:
            try:
                failed += check(sys.argv[1], tmp, name, kw)
            except RuntimeError as e:
                print("FAIL %s: %s" % (name, e), flush=True)
                failed += 1
    if failed:
        print("%d check(s) failed" % failed)
    return 1 if failed else 0


def interp_want(icc, tmp, name, path, inp, x, passes, flags=()):
    """Saves input inp's value x as tmp/<name>_<inp>.npy and runs model path
    through the interpreter after the pipeline passes (with flags, e.g.
    --precision=bf16): the input file's path and output y."""
    xp = os.path.join(tmp, "%s_%s.npy" % (name, inp))
    np.save(xp, x)
    run([icc, "run", path, "--passes=" + passes, "--input", inp + "=" + xp,
         "-o", os.path.join(tmp, name + "_want")] + list(flags))
    return xp, np.load(os.path.join(tmp, name + "_want", "y.npy"))
