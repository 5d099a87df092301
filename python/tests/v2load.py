"""A load generator for the serving tests: N requests of the Open Inference
Protocol's JSON (V2) from C concurrent clients over keep-alive HTTP, every
answer checked against ONNX Runtime; returns p50/p99 latency and requests/s."""
import http.client
import json
import threading
import time

import numpy as np

from conftest import ort_run


def make_requests(onnx_path, n, seed=0, max_rows=3):
    """n (body, expected y) pairs: x of 1..max_rows rows, y by ONNX Runtime."""
    r = np.random.default_rng(seed)
    out = []
    for i in range(n):
        x = r.standard_normal((1 + i % max_rows, 784)).astype(np.float32)
        body = json.dumps({"inputs": [{"name": "x", "shape": list(x.shape), "datatype": "FP32",
                                       "data": x.ravel().tolist()}]})
        out.append((body, ort_run(onnx_path, {"x": x})[0]))
    return out


def post(conn, path, body):
    conn.request("POST", path, body=body, headers={"Content-Type": "application/json"})
    resp = conn.getresponse()
    return resp.status, resp.read()


def check(status, raw, want):
    assert status == 200, (status, raw[:300])
    doc = json.loads(raw)
    y, = [o for o in doc["outputs"] if o["name"] == "y"]
    assert y["datatype"] == "FP32" and y["shape"] == list(want.shape), y
    got = np.asarray(y["data"], np.float32).reshape(y["shape"])
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    return doc


def run_load(port, path, requests, clients=8):
    lat, errors, params, lock = [], [], [], threading.Lock()
    todo = iter(range(len(requests)))

    def client():
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        try:
            while True:
                with lock:
                    i = next(todo, None)
                if i is None:
                    return
                body, want = requests[i]
                t0 = time.perf_counter()
                status, raw = post(conn, path, body)
                dt = time.perf_counter() - t0
                doc = check(status, raw, want)
                with lock:
                    lat.append(dt)
                    params.append(doc.get("parameters") or {})
        except Exception as e:  # reported by the caller, with the others
            with lock:
                errors.append(repr(e))
        finally:
            conn.close()

    t0 = time.perf_counter()
    ts = [threading.Thread(target=client) for _ in range(clients)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    wall = time.perf_counter() - t0
    assert not errors, errors[:3]
    assert len(lat) == len(requests)
    lat_ms = np.sort(np.array(lat)) * 1e3
    return {"requests": len(lat), "clients": clients, "p50_ms": float(np.percentile(lat_ms, 50)),
            "p99_ms": float(np.percentile(lat_ms, 99)), "req_per_s": len(lat) / wall,
            "parameters": params}


def wait_http(port, path, timeout, proc=None, method="GET"):
    """Polls until path answers 200 (or the server process exits)."""
    end = time.time() + timeout
    last = None
    while time.time() < end:
        if proc is not None and proc.poll() is not None:
            raise AssertionError("the server exited with status %d before it was ready" % proc.returncode)
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            conn.request(method, path)
            resp = conn.getresponse()
            body = resp.read()
            conn.close()
            if resp.status == 200:
                return body
            last = resp.status
        except OSError as e:
            last = e
        time.sleep(0.25)
    raise AssertionError("%s not ready after %d s (last: %r)" % (path, timeout, last))


def free_port():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
