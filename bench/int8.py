#!/usr/bin/env python3
"""INT8 contraction speed: icc's MatMulInteger / ConvInteger next to icc's
f32 MatMul / Conv of the same shape and onnxruntime's MatMulInteger /
ConvInteger, in one run, one thread (CPU time).

Each model has the activation as its input and the weights (and zero
points) as initializers, as quantized models do. Results are checked
against numpy (integers exactly). GOP/s counts 2 ops per multiply-add.

--weights 7bit draws the int8 weights from [-64, 63] (ONNX Runtime's
reduce_range, and icc's own quantization on targets without VNNI), where
icc's MatMulInteger runs on vpmaddubsw (docs/precision.md); full (the
default) from [-128, 127]. --base ICC adds the int8 column of a second icc
binary (e.g. a baseline build), run alternately with this one.

    bench/int8.py [--build build] [--seconds 1] [--march CPU] [--no-ort] [--only NAME]
                  [--weights full|7bit] [--base ICC] [--rounds 2]
"""
import argparse, os, subprocess, sys, tempfile, time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from matmul import HARNESS  # noqa: E402  (the runtime timing harness)


WLO, WHI = -128, 128  # the weights' range, [WLO, WHI) (--weights)


def mm_model(quant, M, K, N, rng):
    if quant:
        a = rng.integers(0, 256, (M, K)).astype(np.uint8)
        b = rng.integers(WLO, WHI, (K, N)).astype(np.int8)
        za = np.array(rng.integers(0, 256), dtype=np.uint8)
        zb = np.array(rng.integers(-128, 128), dtype=np.int8)
        inits = [numpy_helper.from_array(b, 'b'), numpy_helper.from_array(za, 'za'), numpy_helper.from_array(zb, 'zb')]
        node = helper.make_node('MatMulInteger', ['a', 'b', 'za', 'zb'], ['y'])
        ins = [helper.make_tensor_value_info('a', TensorProto.UINT8, [M, K])]
        out = helper.make_tensor_value_info('y', TensorProto.INT32, [M, N])
        ref = (a.astype(np.int64) - int(za)) @ (b.astype(np.int64) - int(zb))
        ref = ref.astype(np.int32)
    else:
        a = rng.standard_normal((M, K)).astype(np.float32)
        b = rng.standard_normal((K, N)).astype(np.float32)
        inits = [numpy_helper.from_array(b, 'b')]
        node = helper.make_node('MatMul', ['a', 'b'], ['y'])
        ins = [helper.make_tensor_value_info('a', TensorProto.FLOAT, [M, K])]
        out = helper.make_tensor_value_info('y', TensorProto.FLOAT, [M, N])
        ref = a.astype(np.float64) @ b.astype(np.float64)
    g = helper.make_graph([node], 'g', ins, [out], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid('', 13)])
    m.ir_version = 8
    return m, [a], ref, 2.0 * M * K * N


def conv_ref(x, w, pad, st=1):
    n, c, h, wd = x.shape
    m, _, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh, ow = (h + 2 * pad - kh) // st + 1, (wd + 2 * pad - kw) // st + 1
    y = np.zeros((n, m, oh, ow), dtype=np.float64 if x.dtype.kind == 'f' else np.int64)
    for i in range(kh):
        for j in range(kw):
            y += np.einsum('nchw,mc->nmhw', xp[:, :, i:i + st * oh:st, j:j + st * ow:st], w[:, :, i, j])
    return y


def conv_model(quant, C, M, H, Kk, pad, rng, st=1):
    if quant:
        x = rng.integers(0, 256, (1, C, H, H)).astype(np.uint8)
        w = rng.integers(WLO, WHI, (M, C, Kk, Kk)).astype(np.int8)
        zx = np.array(rng.integers(0, 256), dtype=np.uint8)
        inits = [numpy_helper.from_array(w, 'w'), numpy_helper.from_array(zx, 'zx')]
        node = helper.make_node('ConvInteger', ['x', 'w', 'zx'], ['y'], pads=[pad] * 4, strides=[st, st])
        ins = [helper.make_tensor_value_info('x', TensorProto.UINT8, [1, C, H, H])]
        out = helper.make_tensor_value_info('y', TensorProto.INT32, None)
        # ConvInteger pads with the zero point: (x - zx) is 0 there
        ref = conv_ref(x.astype(np.int64) - int(zx), w.astype(np.int64), pad, st).astype(np.int32)
    else:
        x = rng.standard_normal((1, C, H, H)).astype(np.float32)
        w = rng.standard_normal((M, C, Kk, Kk)).astype(np.float32)
        inits = [numpy_helper.from_array(w, 'w')]
        node = helper.make_node('Conv', ['x', 'w'], ['y'], pads=[pad] * 4, strides=[st, st])
        ins = [helper.make_tensor_value_info('x', TensorProto.FLOAT, [1, C, H, H])]
        out = helper.make_tensor_value_info('y', TensorProto.FLOAT, None)
        ref = conv_ref(x.astype(np.float64), w.astype(np.float64), pad, st)
    g = helper.make_graph([node], 'g', ins, [out], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid('', 13)])
    m.ir_version = 8
    oh = (H + 2 * pad - Kk) // st + 1
    return m, [x], ref, 2.0 * M * C * Kk * Kk * oh * oh


SHAPES = [
    ('mm 1024^3', lambda q, r: mm_model(q, 1024, 1024, 1024, r)),
    ('mm 128x768x3072', lambda q, r: mm_model(q, 128, 768, 3072, r)),
    ('mm 1x768x3072', lambda q, r: mm_model(q, 1, 768, 3072, r)),
    ('mm 1x768x768', lambda q, r: mm_model(q, 1, 768, 768, r)),
    ('conv 3x3 64->64 56x56', lambda q, r: conv_model(q, 64, 64, 56, 3, 1, r)),
    # more ResNet-50 convolutions
    ('conv 1x1 256->64 56x56', lambda q, r: conv_model(q, 256, 64, 56, 1, 0, r)),
    ('conv 3x3 s2 128 56->28', lambda q, r: conv_model(q, 128, 128, 56, 3, 1, r, 2)),
    ('conv 7x7 s2 3->64 224', lambda q, r: conv_model(q, 3, 64, 224, 7, 3, r, 2)),
    # the small CNN's (bench/precision.py) stride-2 conv, 30% of it before the row im2col
    ('conv 3x3 s2 64->128 24->12', lambda q, r: conv_model(q, 64, 128, 24, 3, 1, r, 2)),
]


def main():
    ap = argparse.ArgumentParser()
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap.add_argument('--build', default=os.path.join(here, 'build'))
    ap.add_argument('--seconds', type=float, default=1.0)
    ap.add_argument('--march', default=None)
    ap.add_argument('--no-ort', action='store_true')
    ap.add_argument('--only', default=None, help='cases whose label contains this')
    ap.add_argument('--weights', choices=('full', '7bit'), default='full')
    ap.add_argument('--base', default=None, help='a second icc binary: its int8 column, run alternately')
    ap.add_argument('--rounds', type=int, default=2, help='alternating rounds with --base (best of each)')
    args = ap.parse_args()
    global WLO, WHI
    if args.weights == '7bit':
        WLO, WHI = -64, 64
    icc = os.path.join(args.build, 'icc')
    tmp = tempfile.mkdtemp(prefix='icc-int8-')
    harness = os.path.join(tmp, 'harness')
    with open(harness + '.c', 'w') as f:
        f.write(HARNESS)
    r = subprocess.run(['cc', '-O2', '-o', harness, harness + '.c', '-I', os.path.join(here, 'include'),
                        os.path.join(args.build, 'libiccrt.a'), '-ldl', '-lpthread', '-lm'], capture_output=True, text=True)
    if r.returncode:
        sys.exit('cannot build the timing harness:\n' + r.stderr[:2000])
    rows, bad = [], 0
    for label, make in SHAPES:
        if args.only and args.only not in label:
            continue
        row = [label]
        for quant in (True, False):
            m, ins, ref, ops = make(quant, np.random.default_rng(0))
            mp = os.path.join(tmp, 'm.onnx')
            onnx.save(m, mp)
            engines = [icc] + ([args.base] if quant and args.base else [])
            sos, failed = [], False
            for ei, exe in enumerate(engines):
                so = os.path.join(tmp, f'm{ei}.so')
                r = subprocess.run([exe, mp, '-o', so] + ([f'-march={args.march}'] if args.march else []),
                                   capture_output=True, text=True)
                if r.returncode:
                    print(f'{label}: {exe} failed: {r.stderr.strip()}')
                    failed = True
                sos.append(so)
            if failed:
                bad += 1
                row += [float('nan')] * (2 if quant else 1)
                continue
            files = []
            for i, a in enumerate(ins):
                p = os.path.join(tmp, f'in{i}.bin')
                a.tofile(p)
                files.append(p)
            outp = os.path.join(tmp, 'out.bin')
            odt = np.int32 if quant else np.float32
            best = [float('inf')] * len(engines)
            for _ in range(args.rounds if len(engines) > 1 else 1):
                for ei, so in enumerate(sos):
                    r = subprocess.run([harness, so, '1', str(args.seconds), outp, str(ref.size * 4)] + files,
                                       capture_output=True, text=True)
                    if r.returncode:
                        print(f'{label}: run failed: {r.stderr.strip()}')
                        bad += 1
                        continue
                    y = np.fromfile(outp, dtype=odt).reshape(ref.shape)
                    ok = np.array_equal(y, ref) if quant else np.max(np.abs(y - ref)) <= 1e-3 * np.sqrt(ops) * 0.1
                    if not ok:
                        print(f'{label} ({"int8" if quant else "f32"}, {engines[ei]}): WRONG')
                        bad += 1
                    best[ei] = min(best[ei], float(r.stdout.split()[1]))
            row += [ops / t / 1e9 for t in best]
            if quant and not args.base:
                row.append(float('nan'))
            if quant and not args.no_ort:
                import onnxruntime as ort
                o = ort.SessionOptions()
                o.intra_op_num_threads = 1
                o.inter_op_num_threads = 1
                s = ort.InferenceSession(m.SerializeToString(), o, providers=['CPUExecutionProvider'])
                feed = {m.graph.input[0].name: ins[0]}
                s.run(None, feed)
                best, t0 = 1e30, time.perf_counter()
                while time.perf_counter() - t0 < args.seconds:
                    a0 = time.process_time()
                    s.run(None, feed)
                    best = min(best, time.process_time() - a0)
                ort_gops = ops / best / 1e9
        row.append(float('nan') if args.no_ort else ort_gops)
        rows.append(row)
    print(f'\nGOP/s, 1 thread (CPU time, best of repeated runs), {args.weights} weights')
    print(f'{"case":28s}{"icc int8":>10s}{"base int8":>10s}{"icc f32":>10s}{"ort int8":>10s}{"int8/f32":>10s}'
          f'{"int8/ort":>10s}{"int8/base":>10s}')
    for r in rows:
        print(f'{r[0]:28s}{r[1]:10.1f}{r[2]:10.1f}{r[3]:10.1f}{r[4]:10.1f}{r[1] / r[3]:10.2f}{r[1] / r[4]:10.2f}'
              f'{r[1] / r[2]:10.2f}')
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
