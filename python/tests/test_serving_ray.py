"""examples/serving/ray_serve.py for real: a local Ray instance started here,
two replicas behind Serve's HTTP proxy on loopback, 200 V2 requests from 8
clients (1 to 3 rows each, batched by @serve.batch), each answer against
ONNX Runtime; then an autoscaling app; then everything shut down."""
import importlib.util
import json
import os

import numpy as np
import pytest

from conftest import ROOT
from v2load import check, free_port, make_requests, post, run_load, wait_http


def load_example():
    path = os.path.join(ROOT, "examples", "serving", "ray_serve.py")
    spec = importlib.util.spec_from_file_location("icc_ray_serve_example", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def serve_up(models):
    import ray
    from ray import serve
    ex = load_example()
    port = free_port()
    pkg = os.path.join(ROOT, "python")
    env = {"PYTHONPATH": os.pathsep.join([pkg] + [p for p in [os.environ.get("PYTHONPATH")] if p])}
    ray.init(num_cpus=4, include_dashboard=False, log_to_driver=False,
             runtime_env={"env_vars": env})
    try:
        serve.start(http_options={"host": "127.0.0.1", "port": port})
        yield ex, serve, port, models.mlp
    finally:
        serve.shutdown()
        ray.shutdown()


def test_ray_serve_batched_replicas(serve_up, capsys):
    ex, serve, port, (onnx_path, so) = serve_up
    serve.run(ex.app(so, replicas=2, max_batch=8, batch_wait_ms=5), name="mlp", route_prefix="/mlp")
    # ready: serve.run returned with both replicas healthy; the proxy agrees
    wait_http(port, "/-/healthz", 60)
    routes = json.loads(wait_http(port, "/-/routes", 60))
    assert "/mlp" in routes
    stats = run_load(port, "/mlp", make_requests(onnx_path, 200, seed=1))
    batched = [p["batched_requests"] for p in stats["parameters"]]
    stats["mean_batch"] = np.mean(batched)
    with capsys.disabled():
        print("\nRay Serve, 2 replicas, @serve.batch(8), MLP 784-256-256-10, %(requests)d requests "
              "(1-3 rows), %(clients)d clients: p50 %(p50_ms).2f ms, p99 %(p99_ms).2f ms, "
              "%(req_per_s).0f requests/s, %(mean_batch).1f requests per run" % stats)
    # 8 clients on 2 replicas: runs served several requests at once
    assert max(batched) > 1 and max(batched) <= 8, batched
    import http.client
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    bad = json.dumps({"inputs": [{"name": "x", "shape": [1, 783], "datatype": "FP32", "data": [0.0] * 783}]})
    status, raw = post(conn, "/mlp", bad)
    assert status == 400 and b"input 'x'" in raw, (status, raw)
    body, want = make_requests(onnx_path, 1, seed=9)[0]
    check(*post(conn, "/mlp", body), want)
    conn.close()
    serve.delete("mlp")


def test_ray_serve_autoscaling(serve_up):
    ex, serve, port, (onnx_path, so) = serve_up
    # through the builder `serve run ray_serve:build` and config files use
    serve.run(ex.build({"model": so, "autoscale": "1,2"}), name="mlp-auto", route_prefix="/auto")
    wait_http(port, "/-/healthz", 60)
    st = serve.status().applications["mlp-auto"]
    assert str(st.status).endswith("RUNNING"), st
    dep = st.deployments["IccDeployment"]
    assert dep.replica_states.get("RUNNING", 0) >= 1
    stats = run_load(port, "/auto", make_requests(onnx_path, 40, seed=2))
    assert stats["requests"] == 40
    serve.delete("mlp-auto")


def test_batch_needs_a_symbolic_batch(models):
    """The deployment refuses a model with a fixed first dim, saying why."""
    import icc
    ex = load_example()
    m = icc.load(models.transformer[1])
    with pytest.raises(ValueError, match="same symbolic dim"):
        ex.batch_symbol(m)
