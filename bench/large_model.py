#!/usr/bin/env python3
"""A model whose weights pass 2 GB: how much memory icc needs to compile it and to describe it.

Builds y = x @ W with W an external-data initializer of --k x --n f32 (default 8192 x 67000,
2.2 GB, written in chunks so this script never holds it), compiles it with
`icc --weights=external`, measures the peak RSS of `icc` and of `icc info` (getrusage of each
child, RUSAGE_CHILDREN, in a fresh process each so one does not mask the other), runs the .so
through `icc run` on a random x and checks y against numpy (W read back chunk by chunk from its
file), prints the numbers and removes every file it made.

    python3 bench/large_model.py [--icc build/icc] [--k 8192] [--n 67000] [--dir /tmp]

Not part of CI: it writes ~2 x the weight bytes to disk and needs about as much free memory.
"""
import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper


def peak_rss(cmd):
    """Runs cmd in a fresh Python child that reports its own child's peak RSS (bytes):
    RUSAGE_CHILDREN is the maximum over all children waited for, so measuring each
    command from its own process keeps the numbers apart."""
    probe = ("import resource, subprocess, sys\n"
             "r = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
             "sys.stderr.write(r.stdout + r.stderr)\n"
             "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
             "sys.exit(r.returncode)\n")
    r = subprocess.run([sys.executable, '-c', probe] + cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit('large_model: %s failed (exit %d):\n%s' % (' '.join(cmd), r.returncode, r.stderr))
    return int(r.stdout.strip().splitlines()[-1]) * 1024, r.stderr


def build_model(d, k, n, rng_seed):
    """model.onnx + w.bin in d; W rows are made 256 at a time from a seeded generator."""
    wpath = os.path.join(d, 'w.bin')
    rng = np.random.default_rng(rng_seed)
    with open(wpath, 'wb') as f:
        for r0 in range(0, k, 256):
            rows = min(256, k - r0)
            f.write(rng.standard_normal((rows, n), dtype=np.float32).tobytes())
    w = TensorProto()
    w.name = 'w'
    w.data_type = TensorProto.FLOAT
    w.dims.extend([k, n])
    w.data_location = TensorProto.EXTERNAL
    for key, val in (('location', 'w.bin'), ('offset', '0'), ('length', str(k * n * 4))):
        e = w.external_data.add()
        e.key, e.value = key, val
    g = helper.make_graph([helper.make_node('MatMul', ['x', 'w'], ['y'], name='mm')], 'large',
                          [helper.make_tensor_value_info('x', TensorProto.FLOAT, [1, k])],
                          [helper.make_tensor_value_info('y', TensorProto.FLOAT, [1, n])], [w])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid('', 17)])
    path = os.path.join(d, 'model.onnx')
    with open(path, 'wb') as f:
        f.write(m.SerializeToString())
    return path, wpath


def reference(wpath, x, k, n):
    """x @ W with W memory-mapped, 512 rows at a time, in f64."""
    w = np.memmap(wpath, dtype=np.float32, mode='r', shape=(k, n))
    y = np.zeros(n, dtype=np.float64)
    for r0 in range(0, k, 512):
        y += x[0, r0:r0 + 512].astype(np.float64) @ np.asarray(w[r0:r0 + 512], dtype=np.float64)
    del w
    return y


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--icc', default='build/icc')
    ap.add_argument('--k', type=int, default=8192)
    ap.add_argument('--n', type=int, default=67000)
    ap.add_argument('--dir', default=None, help='where the files go (default: $TMPDIR)')
    a = ap.parse_args()
    icc = os.path.abspath(a.icc)
    d = tempfile.mkdtemp(prefix='icc-large-', dir=a.dir)
    try:
        wbytes = a.k * a.n * 4
        print('weights: %d x %d f32 = %.2f GB (external data)' % (a.k, a.n, wbytes / 1e9))
        model, wpath = build_model(d, a.k, a.n, 7)
        so = os.path.join(d, 'model.so')
        rss_c, log = peak_rss([icc, model, '-o', so, '--weights=external'])
        rss_i, info = peak_rss([icc, 'info', model])
        weights_file = os.path.join(d, 'model.weights')
        x = np.random.default_rng(1).standard_normal((1, a.k)).astype(np.float32)
        np.save(os.path.join(d, 'x.npy'), x)
        out = os.path.join(d, 'out')
        r = subprocess.run([icc, 'run', so, '--input', 'x=' + os.path.join(d, 'x.npy'), '-o', out],
                           capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit('large_model: icc run failed: ' + r.stdout + r.stderr)
        y = np.load(os.path.join(out, 'y.npy')).astype(np.float64).reshape(-1)
        want = reference(wpath, x, a.k, a.n)
        err = np.max(np.abs(y - want) / (1.0 + np.abs(want)))
        print('icc compile: peak RSS %.2f GB = %.2fx the weights (limit 1.25x + 0.3 GB = %.2f GB)'
              % (rss_c / 1e9, rss_c / wbytes, (1.25 * wbytes + 3e8) / 1e9))
        print('icc info:    peak RSS %.3f GB' % (rss_i / 1e9))
        print('model.weights: %.2f GB; .so: %.1f MB' % (os.path.getsize(weights_file) / 1e9,
                                                       os.path.getsize(so) / 1e6))
        print('output vs numpy: max |y - ref| / (1 + |ref|) = %.2e' % err)
        ok = err < 1e-3
        print('large_model: %s' % ('ok' if ok else 'WRONG OUTPUT'))
        return 0 if ok else 1
    finally:
        shutil.rmtree(d, ignore_errors=True)


if __name__ == '__main__':
    sys.exit(main())
