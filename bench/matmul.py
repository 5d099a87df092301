#!/usr/bin/env python3
"""MatMul/Gemm speed: icc-compiled kernels next to onnxruntime, same shapes.

Builds one-node ONNX models, compiles each with `icc`, checks the result
against numpy, times icc (through the runtime API, by a small C harness
compiled here against libiccrt.a) and onnxruntime at 1 and 2 threads, and
prints GFLOP/s side by side.

    bench/matmul.py [--build build] [--icc PATH] [--threads 1,2] [--quick] [--check-only]
"""
import argparse, os, subprocess, sys, tempfile, time

import numpy as np
import onnx
from onnx import TensorProto, helper

HARNESS = r'''
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "icc/runtime.h"
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
static double cpu(void) { struct timespec t; clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
static void *slurp(const char *p, size_t *n) {
    FILE *f = fopen(p, "rb"); if (!f) return NULL;
    fseek(f, 0, SEEK_END); *n = (size_t)ftell(f); fseek(f, 0, SEEK_SET);
    void *b = malloc(*n ? *n : 1); if (fread(b, 1, *n, f) != *n) { fclose(f); return NULL; }
    fclose(f); return b;
}
/* argv: model.so threads seconds out.bin outbytes in0.bin [in1.bin ...] */
int main(int argc, char **argv) {
    icc_model *m; icc_context *c;
    if (argc < 6 || icc_model_open(argv[1], NULL, &m) || icc_context_create(m, NULL, &c)) {
        fprintf(stderr, "harness: %s\n", icc_last_error()); return 1; }
    icc_context_set_threads(c, atoi(argv[2]));
    double secs = atof(argv[3]);
    size_t ob = (size_t)atoll(argv[5]);
    int nin = argc - 6;
    const void *ins[16]; void *outs[1] = {malloc(ob)};
    for (int i = 0; i < nin; i++) { size_t n; ins[i] = slurp(argv[6 + i], &n); if (!ins[i]) return 1; }
    if (icc_run(c, ins, NULL, outs)) { fprintf(stderr, "harness: %s\n", icc_context_error(c)); return 1; }
    FILE *f = fopen(argv[4], "wb"); fwrite(outs[0], 1, ob, f); fclose(f);
    double best = 1e30, bestcpu = 1e30, t0 = now();
    int reps = 0;
    while (now() - t0 < secs || reps < 3) {
        double a = now(), ac = cpu(); icc_run(c, ins, NULL, outs); double b = now() - a, bc = cpu() - ac;
        if (b < best) best = b;
        if (bc < bestcpu) bestcpu = bc;
        reps++;
    }
    printf("%.9f %.9f\n", best, bestcpu);
    return 0;
}
'''


def model(kind, shapes, dtype=TensorProto.FLOAT, **attrs):
    (a_shape, b_shape) = shapes[:2]
    ins = [helper.make_tensor_value_info('a', dtype, a_shape), helper.make_tensor_value_info('b', dtype, b_shape)]
    names = ['a', 'b']
    if len(shapes) > 2:
        ins.append(helper.make_tensor_value_info('c', dtype, shapes[2]))
        names.append('c')
    node = helper.make_node(kind, names, ['y'], **attrs)
    g = helper.make_graph([node], 'g', ins, [helper.make_tensor_value_info('y', dtype, None)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid('', 17)])
    m.ir_version = 8
    return m


def reference(kind, arrs, attrs):
    a, b = arrs[0], arrs[1]
    if kind == 'MatMul':
        return np.matmul(a.astype(np.float64) if a.dtype.kind == 'f' else a, b.astype(np.float64) if b.dtype.kind == 'f' else b)
    a = a.T if attrs.get('transA') else a
    b = b.T if attrs.get('transB') else b
    y = attrs.get('alpha', 1.0) * (a.astype(np.float64) @ b.astype(np.float64))
    if len(arrs) > 2:
        y = y + attrs.get('beta', 1.0) * arrs[2]
    return y


def main():
    ap = argparse.ArgumentParser()
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap.add_argument('--build', default=os.path.join(here, 'build'))
    ap.add_argument('--icc', default=None)
    ap.add_argument('--threads', default='1,2')
    ap.add_argument('--seconds', type=float, default=1.0)
    ap.add_argument('--quick', action='store_true', help='small shapes only')
    ap.add_argument('--check-only', action='store_true', help='correctness cases, no timing')
    ap.add_argument('--no-ort', action='store_true')
    ap.add_argument('--march', default=None, help='compile for this CPU (icc -march=)')
    ap.add_argument('--shape', action='append', default=[], metavar='MxKxN',
                    help='time these f32 MatMul shapes instead of the default ones')
    args = ap.parse_args()
    icc = args.icc or os.path.join(args.build, 'icc')
    threads = [int(t) for t in args.threads.split(',')]
    tmp = tempfile.mkdtemp(prefix='icc-bench-')
    harness = os.path.join(tmp, 'harness')
    with open(harness + '.c', 'w') as f:
        f.write(HARNESS)
    r = subprocess.run(['cc', '-O2', '-o', harness, harness + '.c', '-I', os.path.join(here, 'include'),
                        os.path.join(args.build, 'libiccrt.a'), '-ldl', '-lpthread', '-lm'],
                       capture_output=True, text=True)
    if r.returncode:
        sys.exit('cannot build the timing harness:\n' + r.stderr[:2000])
    f32 = TensorProto.FLOAT
    checks = [  # (label, kind, shapes, dtype, attrs): odd sizes hit every tail
        ('mm 7x5x37', 'MatMul', [[7, 5], [5, 37]], f32, {}),
        ('mm 13x300x50', 'MatMul', [[13, 300], [300, 50]], f32, {}),
        ('mm batch 2x3x9x40', 'MatMul', [[2, 3, 9, 20], [3, 20, 40]], f32, {}),
        ('mm bcast 1x70', 'MatMul', [[4, 11, 70], [1, 70, 33]], f32, {}),
        ('mm 103x70x1100', 'MatMul', [[103, 70], [70, 1100]], f32, {}),
        ('mm batch 3x40x300x150', 'MatMul', [[3, 40, 300], [3, 300, 150]], f32, {}),
        ('mm f64 9x17x21', 'MatMul', [[9, 17], [17, 21]], TensorProto.DOUBLE, {}),
        ('mm i32 5x6x40', 'MatMul', [[5, 6], [6, 40]], TensorProto.INT32, {}),
        ('mm i64 5x6x40', 'MatMul', [[5, 6], [6, 40]], TensorProto.INT64, {}),
        ('mm vec 300 x 300x40', 'MatMul', [[300], [300, 40]], f32, {}),
        ('gemm 10x520x33 tA tB', 'Gemm', [[520, 10], [33, 520], [33]], f32, dict(transA=1, transB=1, alpha=0.5, beta=2.0)),
        ('gemm 13x70x37 tB', 'Gemm', [[13, 70], [37, 70], [37]], f32, dict(transB=1)),
        ('gemm 100x300x90 tB', 'Gemm', [[100, 300], [90, 300], [100, 90]], f32, dict(transB=1, alpha=0.7, beta=-1.0)),
        ('gemm 40x300x70 tA', 'Gemm', [[300, 40], [300, 70], [1, 70]], f32, dict(transA=1)),
        ('gemm 10x520x33 C2', 'Gemm', [[10, 520], [520, 33], [10, 33]], f32, dict(alpha=1.5, beta=0.25)),
        ('gemm 10x520x33 C1', 'Gemm', [[10, 520], [520, 33], [10, 1]], f32, {}),
    ]
    perf = [
        ('mm 512^3', 'MatMul', [[512, 512], [512, 512]], f32, {}),
        ('mm 1024^3', 'MatMul', [[1024, 1024], [1024, 1024]], f32, {}),
        ('mm 128x768x3072', 'MatMul', [[128, 768], [768, 3072]], f32, {}),
        ('gemm 128x768x3072 tB', 'Gemm', [[128, 768], [3072, 768], [3072]], f32, dict(transB=1)),
    ]
    if args.shape:
        perf = []
        for sh in args.shape:
            m_, k_, n_ = (int(v) for v in sh.split('x'))
            perf.append((f'mm {sh}', 'MatMul', [[m_, k_], [k_, n_]], f32, {}))
    if args.quick:
        perf = [('mm 256^3', 'MatMul', [[256, 256], [256, 256]], f32, {})]
    cases = checks if args.check_only else perf if args.shape else checks + perf
    rng = np.random.default_rng(0)
    bad = 0
    rows = []
    for label, kind, shapes, dt, attrs in cases:
        npdt = helper.tensor_dtype_to_np_dtype(dt)
        if npdt.kind == 'f':
            arrs = [rng.standard_normal(s).astype(npdt) for s in shapes]
        else:
            arrs = [rng.integers(-50, 50, s).astype(npdt) for s in shapes]
        m = model(kind, shapes, dt, **attrs)
        mp = os.path.join(tmp, 'm.onnx')
        so = os.path.join(tmp, 'm.so')
        onnx.save(m, mp)
        r = subprocess.run([icc, mp, '-o', so] + ([f'-march={args.march}'] if args.march else []),
                           capture_output=True, text=True)
        if r.returncode:
            print(f'{label}: icc failed: {r.stderr.strip()}')
            bad += 1
            continue
        ref = reference(kind, arrs, attrs)
        inf = []
        for i, a in enumerate(arrs):
            p = os.path.join(tmp, f'in{i}.bin')
            a.tofile(p)
            inf.append(p)
        outp = os.path.join(tmp, 'out.bin')
        timed = (label, kind, shapes, dt, attrs) in perf
        res = {}
        for t in (threads if timed else [1]):
            r = subprocess.run([harness, so, str(t), str(args.seconds if timed else 0), outp, str(ref.size * npdt.itemsize)] + inf,
                               capture_output=True, text=True)
            if r.returncode:
                print(f'{label}: run failed: {r.stderr.strip()}')
                bad += 1
                break
            wall, cputime = (float(v) for v in r.stdout.split())
            # one thread: CPU time, which a machine shared with other jobs does not inflate
            res[t] = cputime if t == 1 else wall
        else:
            y = np.fromfile(outp, dtype=npdt).reshape(ref.shape)
            if npdt.kind == 'f':
                tol = 1e-3 * np.sqrt(shapes[0][-1]) if npdt == np.float32 else 1e-9
                err = np.max(np.abs(y - ref)) if ref.size else 0.0
                ok = err <= tol * max(1.0, np.max(np.abs(ref)) / 10)
            else:
                ok = np.array_equal(y, ref.astype(npdt))
                err = 0 if ok else 1
            if not ok:
                print(f'{label}: WRONG (max error {err})')
                bad += 1
            if not timed:
                print(f'{label}: ok' if ok else '', end='\n' if ok else '')
                continue
            flops = 2.0 * ref.size * (shapes[1][-2] if not attrs.get('transB') else shapes[1][-1])
            row = [label] + [flops / res[t] / 1e9 for t in threads]
            if not args.no_ort:
                import onnxruntime as ort
                for t in threads:
                    so_opt = ort.SessionOptions()
                    so_opt.intra_op_num_threads = t
                    so_opt.inter_op_num_threads = 1
                    s = ort.InferenceSession(m.SerializeToString(), so_opt, providers=['CPUExecutionProvider'])
                    feed = {n: a for n, a in zip(['a', 'b', 'c'], arrs)}
                    s.run(None, feed)
                    clock = time.process_time if t == 1 else time.perf_counter
                    best, t0 = 1e30, time.perf_counter()
                    while time.perf_counter() - t0 < args.seconds:
                        a0 = clock()
                        s.run(None, feed)
                        best = min(best, clock() - a0)
                    row.append(flops / best / 1e9)
            rows.append(row)
    if rows:
        hdr = ['case'] + [f'icc {t}T' for t in threads] + ([] if args.no_ort else [f'ort {t}T' for t in threads])
        print('\nGFLOP/s (best of repeated runs; 1 thread: CPU time, more threads: wall time)')
        print(f'{hdr[0]:24s}' + ''.join(f'{h:>10s}' for h in hdr[1:]))
        for r in rows:
            print(f'{r[0]:24s}' + ''.join(f'{v:10.1f}' for v in r[1:]))
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
