"""What the tests of packed kernels share (tests/models/bf16_pairs.py,
int8_packed.py): running icc, and compiling a model and running it on one
input through the compiled library."""
import os
import subprocess

import numpy as np


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
    got = os.path.join(tmp, tag + "_got")
    run([icc, model, "-o", so] + flags)
    run([icc, "run", so, "--input", inp + "=" + npy, "-o", got])
    return np.load(os.path.join(got, out + ".npy"))


def cpu_has(flag):
    """Whether /proc/cpuinfo lists flag (avx512_bf16, avx512_vnni...)."""
    try:
        with open("/proc/cpuinfo") as f:
            return any(flag in line.split() for line in f if line.startswith("flags"))
    except OSError:
        return False
