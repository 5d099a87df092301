"""examples/serving/kserve_model.py for real: KServe's model server on
loopback, 200 V2 requests from 8 clients, each answer against ONNX Runtime."""
import json
import os
import signal
import subprocess
import sys

import pytest

from conftest import ROOT
from v2load import check, free_port, make_requests, post, run_load, wait_http


@pytest.fixture(scope="module")
def server(models, workdir):
    onnx_path, so = models.mlp
    port = free_port()
    log = open(str(workdir / "kserve.log"), "w")  # a pipe nobody reads would fill and block it
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [os.path.join(ROOT, "python")] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
    proc = subprocess.Popen([sys.executable, os.path.join(ROOT, "examples", "serving", "kserve_model.py"),
                             "--model_path=" + so, "--model_name=mlp", "--http_port=%d" % port,
                             "--enable_grpc=false", "--enable_latency_logging=false", "--threads=1"],
                            stdout=log, stderr=subprocess.STDOUT, env=env)
    try:
        try:
            wait_http(port, "/v2/models/mlp/ready", 120, proc)
        except AssertionError as e:
            log.flush()
            raise AssertionError("%s; the server's log ends: %s" % (e, open(log.name).read()[-2000:]))
        yield port, onnx_path
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def test_kserve_v2_under_load(server, capsys):
    port, onnx_path = server
    meta = json.loads(wait_http(port, "/v2/models/mlp", 10))
    assert meta["name"] == "mlp"
    stats = run_load(port, "/v2/models/mlp/infer", make_requests(onnx_path, 200))
    with capsys.disabled():
        print("\nKServe V2 REST, MLP 784-256-256-10, %(requests)d requests, %(clients)d clients: "
              "p50 %(p50_ms).2f ms, p99 %(p99_ms).2f ms, %(req_per_s).0f requests/s" % stats)


def test_kserve_refuses_bad_shape(server):
    import http.client
    port, onnx_path = server
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    body = json.dumps({"inputs": [{"name": "x", "shape": [1, 783], "datatype": "FP32", "data": [0.0] * 783}]})
    status, raw = post(conn, "/v2/models/mlp/infer", body)
    assert status == 400, (status, raw)
    assert b"input 'x' dim 1 is 783, the model wants 784" in raw
    # and still answers
    body, want = make_requests(onnx_path, 1, seed=5)[0]
    check(*post(conn, "/v2/models/mlp/infer", body), want)
    conn.close()
