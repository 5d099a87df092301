"""Driving the icc executable: icc.compile, icc.bench, and where icc is.

icc is found by the first of: the ICC environment variable (a path to the
executable); `icc` on PATH; build/icc in the source tree this package sits
in (python/icc/ -> ../../build/icc: a checkout used with PYTHONPATH=python
or `pip install -e python`).
"""
import json
import os
import shutil
import subprocess

from ._errors import CompileError, Error


def find_icc():
    """The path of the icc executable, by the rule above; Error if none."""
    env = os.environ.get("ICC")
    if env:
        if not (os.path.isfile(env) and os.access(env, os.X_OK)):
            raise Error("ICC=%s: not an executable file" % env)
        return env
    found = shutil.which("icc")
    if found:
        return found
    here = os.path.dirname(os.path.abspath(__file__))
    tree = os.path.join(here, os.pardir, os.pardir, "build", "icc")
    if os.path.isfile(tree) and os.access(tree, os.X_OK):
        return os.path.normpath(tree)
    raise Error("icc not found: set ICC to the executable, put it on PATH, or build it in "
                "build/ beside python/")


def _one_line(stderr, rc):
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    errs = [ln for ln in lines if "error:" in ln]
    return (errs or lines or ["icc exited with status %d" % rc])[-1]


def compile(model, output, opt=2, shapes=None, precision=None, target="native",
            weights="embedded", name=None, args=()):
    """Compiles model (.onnx or .icc) to output (model.so, plus model.h beside it).

    opt: 0..3 (-O); shapes: {input: dims}, pinning symbolic dims (--shape);
    precision: None (fp32), "bf16", "fp16", "int8", "int8-dynamic";
    target: "native" (this machine) or an LLVM CPU name (-march);
    weights: "embedded", "external" (output less .so + .weights) or "auto";
    name: the symbol prefix (--name); args: more icc options, verbatim.
    Returns output. Raises CompileError with icc's one-line message."""
    cmd = [find_icc(), os.fspath(model), "-o", os.fspath(output), "-O%d" % int(opt)]
    for k, dims in (shapes or {}).items():
        cmd.append("--shape=%s:%s" % (k, "x".join(str(int(d)) for d in dims)))
    if precision:
        cmd.append("--precision=%s" % precision)
    if target and target != "native":
        cmd.append("-march=%s" % target)
    if weights:
        cmd.append("--weights=%s" % weights)
    if name:
        cmd.append("--name=%s" % name)
    cmd += list(args)
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        raise CompileError(_one_line(p.stderr, p.returncode))
    return os.fspath(output)


def bench(model, threads=None, batch=None, time=None, warmup=None, runs=None,
          scenario=None, dims=None, args=()):
    """Runs `icc bench MODEL --json` and returns its parsed report: {"model",
    "scenario", "results": [{"threads", "batch", "p50_ms", "p90_ms", "p99_ms",
    "mean_ms", "min_ms", "max_ms", "inferences_per_s", "items_per_s", ...}]}.

    model: an icc.Model, a .so, or an .onnx (compiled first; args go to the
    compiler too); threads, batch: an int or a list; time, warmup: seconds;
    dims: {symbol: value}."""
    path = getattr(model, "path", model)
    cmd = [find_icc(), "bench", os.fspath(path), "--json"]
    lists = lambda v: ",".join(str(int(x)) for x in (v if isinstance(v, (list, tuple)) else [v]))
    if threads is not None:
        cmd.append("--threads=" + lists(threads))
    if batch is not None:
        cmd.append("--batch=" + lists(batch))
    if time is not None:
        cmd.append("--time=%g" % time)
    if warmup is not None:
        cmd.append("--warmup=%g" % warmup)
    if runs is not None:
        cmd.append("--runs=%d" % runs)
    if scenario:
        cmd.append("--scenario=" + scenario)
    for k, v in (dims or {}).items():
        cmd.append("--dim=%s=%d" % (k, v))
    cmd += list(args)
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        raise Error(_one_line(p.stderr, p.returncode))
    try:
        return json.loads(p.stdout)
    except ValueError:
        raise Error("icc bench --json printed something that is not JSON: %r" % p.stdout[:200]) from None
