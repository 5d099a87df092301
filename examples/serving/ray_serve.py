"""Serving a model compiled by icc with Ray Serve: one icc.Model per replica,
requests batched dynamically over the model's symbolic batch dim.

    icc model.onnx -o model.so            # an input of shape [N, ...]
    python3 examples/serving/ray_serve.py model.so [--replicas=2 | --autoscale=1,4] [--port=8000]
    curl -d '{"inputs": [{"name": "x", "shape": [1, 784], "datatype": "FP32", "data": [...]}]}' \
         localhost:8000/model

Requests and answers are the JSON of the Open Inference Protocol (V2)
({"inputs": [{name, shape, datatype, data}]} -> {"outputs": [...]}), so the
same client speaks to this and to examples/serving/kserve_model.py. Each
replica loads the .so once (the path must exist on every node: shared
storage, or the same image); @serve.batch gathers up to --max-batch
concurrent requests (waiting at most --batch-wait-ms), concatenates them
along dim 0 and runs the model once (each answer's parameters say how many
requests that run served), on a worker thread (icc releases the
GIL and gives each thread its own context). check_health runs the model on
zeros, so a replica whose model cannot run is restarted; the app is ready
when serve.run returns, and GET /-/healthz on the proxy says so.
"""
import argparse
import asyncio
import os

import numpy as np
import ray
from ray import serve
from starlette.requests import Request
from starlette.responses import JSONResponse

import icc

V2_TYPES = {np.dtype(np.float32): "FP32", np.dtype(np.float64): "FP64", np.dtype(np.float16): "FP16",
            np.dtype(np.int8): "INT8", np.dtype(np.int16): "INT16", np.dtype(np.int32): "INT32",
            np.dtype(np.int64): "INT64", np.dtype(np.uint8): "UINT8", np.dtype(np.uint16): "UINT16",
            np.dtype(np.uint32): "UINT32", np.dtype(np.uint64): "UINT64", np.dtype(np.bool_): "BOOL"}


class BadRequest(ValueError):
    pass


def batch_symbol(model):
    """The symbol every input and output starts with (the batch), or an error."""
    syms = {t.shape[0] if t.shape and isinstance(t.shape[0], str) else None
            for t in model.inputs + model.outputs}
    if len(syms) != 1 or None in syms:
        raise ValueError("%s: dynamic batching needs every input and output to start with the "
                         "same symbolic dim (shapes: %s)" % (model.path, [t.shape for t in model.inputs + model.outputs]))
    return syms.pop()


@serve.deployment(ray_actor_options={"num_cpus": 1}, max_ongoing_requests=64,
                  health_check_period_s=10, health_check_timeout_s=30)
class IccDeployment:
    def __init__(self, so_path, max_batch=16, batch_wait_ms=2.0, threads=1):
        self.model = icc.load(so_path, threads=threads)
        self.sym = batch_symbol(self.model)
        self.infer.set_max_batch_size(max_batch)
        self.infer.set_batch_wait_timeout_s(batch_wait_ms / 1e3)
        self.check_health()

    def check_health(self):
        """Readiness and liveness: one row of zeros through the model."""
        feeds = {t.name: np.zeros((1,) + tuple(t.shape[1:]), t.dtype) for t in self.model.inputs}
        self.model.run(feeds)

    @serve.batch(max_batch_size=16, batch_wait_timeout_s=0.002)
    async def infer(self, requests):
        """requests: a list of feeds dicts; one run over their concatenation."""
        rows = [len(next(iter(f.values()))) for f in requests]
        feeds = {t.name: np.concatenate([f[t.name] for f in requests]) for t in self.model.inputs}
        try:
            outs = await asyncio.to_thread(self.model.run, feeds)
        except ValueError as e:  # one bad request spoils the batch: each is told why
            return [e] * len(requests)
        cuts = np.cumsum(rows)[:-1]
        return [(list(parts), len(requests)) for parts in zip(*[np.split(o, cuts) for o in outs])]

    def decode(self, body):
        if not isinstance(body, dict) or not isinstance(body.get("inputs"), list):
            raise BadRequest("the body must be {\"inputs\": [{name, shape, datatype, data}, ...]}")
        byname = {t.name: t for t in self.model.inputs}
        feeds, rows = {}, None
        for inp in body["inputs"]:
            t = byname.get(inp.get("name"))
            if t is None:
                raise BadRequest("unknown input %r" % inp.get("name"))
            a = np.asarray(inp.get("data"), t.dtype).reshape(inp.get("shape"))
            if a.ndim != len(t.shape) or (rows is not None and len(a) != rows):
                raise BadRequest("input '%s': shape %s does not fit %s" % (t.name, list(a.shape), list(t.shape)))
            rows = len(a)
            feeds[t.name] = a
        if set(feeds) != set(byname):
            raise BadRequest("missing inputs: %s" % ", ".join(sorted(set(byname) - set(feeds))))
        return feeds

    async def __call__(self, request: Request):
        try:
            feeds = self.decode(await request.json())
        except (BadRequest, ValueError, TypeError) as e:
            return JSONResponse({"error": str(e)}, status_code=400)
        res = await self.infer(feeds)
        if isinstance(res, Exception):
            return JSONResponse({"error": str(res)}, status_code=400)
        outs, batched = res
        return {"model_name": self.model.name, "parameters": {"batched_requests": batched}, "outputs": [
            {"name": t.name, "shape": list(o.shape), "datatype": V2_TYPES[o.dtype], "data": o.ravel().tolist()}
            for t, o in zip(self.model.outputs, outs)]}


def app(so_path, replicas=1, autoscale=None, max_batch=16, batch_wait_ms=2.0, threads=1):
    """The application: a fixed replica count, or autoscale=(min, max) replicas
    keeping about 8 requests in flight per replica."""
    if autoscale:
        opts = {"autoscaling_config": {"min_replicas": autoscale[0], "max_replicas": autoscale[1],
                                       "target_ongoing_requests": 8, "upscale_delay_s": 2,
                                       "downscale_delay_s": 30}, "num_replicas": "auto"}
    else:
        opts = {"num_replicas": replicas}
    return IccDeployment.options(**opts).bind(so_path, max_batch, batch_wait_ms, threads)


def build(args):
    """An application builder for `serve run` and Serve config files:
    `serve run ray_serve:build model=/models/mlp.so autoscale=1,8` (keys:
    model, replicas, autoscale, max_batch, batch_wait_ms, threads)."""
    scale = tuple(int(v) for v in str(args["autoscale"]).split(",")) if args.get("autoscale") else None
    return app(args["model"], int(args.get("replicas", 1)), scale, int(args.get("max_batch", 16)),
               float(args.get("batch_wait_ms", 2.0)), int(args.get("threads", 1)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model", help="a model.so compiled by icc")
    ap.add_argument("--replicas", type=int, default=1)
    ap.add_argument("--autoscale", help="MIN,MAX replicas (instead of --replicas)")
    ap.add_argument("--max-batch", type=int, default=16)
    ap.add_argument("--batch-wait-ms", type=float, default=2.0)
    ap.add_argument("--threads", type=int, default=1, help="icc threads per run")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=8000)
    ap.add_argument("--address", help="a running Ray cluster (e.g. auto); default: a local one")
    a = ap.parse_args()
    ray.init(address=a.address)
    serve.start(http_options={"host": a.host, "port": a.port})
    scale = tuple(int(v) for v in a.autoscale.split(",")) if a.autoscale else None
    serve.run(app(os.path.abspath(a.model), a.replicas, scale, a.max_batch, a.batch_wait_ms, a.threads),
              name="icc", route_prefix="/model", blocking=True)


if __name__ == "__main__":
    main()
