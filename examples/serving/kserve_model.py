"""Serving a model compiled by icc with KServe's model server, speaking the
Open Inference Protocol (V2) over REST.

    icc model.onnx -o model.so
    python3 examples/serving/kserve_model.py --model_path=model.so --model_name=mlp [--http_port=8080]
    curl localhost:8080/v2/models/mlp/ready
    curl -d '{"inputs": [{"name": "x", "shape": [1, 784], "datatype": "FP32", "data": [...]}]}' \
         localhost:8080/v2/models/mlp/infer

load() opens the .so once (icc.load) and runs it on zeros before saying it is
ready; predict() turns each V2 input into a numpy array of the model's
dtype, runs the model (on KServe's worker threads, each with its own icc
context; icc releases the GIL) and answers one V2 output per model output.
A request the model refuses (wrong shape, missing input) is answered 400
with icc's message. In a cluster the same file runs in the container of a
KServe InferenceService (docs/serving.md).
"""
import argparse
import uuid

import numpy as np
from kserve import InferOutput, InferRequest, InferResponse, Model, ModelServer, model_server
from kserve.errors import InvalidInput
from kserve.utils.utils import from_np_dtype

import icc


class IccModel(Model):
    def __init__(self, name, so_path, threads=1):
        super().__init__(name)
        self.so_path, self.threads = so_path, threads
        self.model = None
        self.load()

    def load(self):
        self.model = icc.load(self.so_path, threads=self.threads)
        zeros = {t.name: np.zeros(tuple(d if isinstance(d, int) else 1 for d in t.shape), t.dtype)
                 for t in self.model.inputs}
        self.model.run(zeros)  # the readiness check: it runs
        self.ready = True
        return self.ready

    def predict(self, payload, headers=None, response_headers=None):
        if not isinstance(payload, InferRequest):
            raise InvalidInput("send the Open Inference Protocol (V2): POST /v2/models/%s/infer" % self.name)
        feeds = {}
        for inp in payload.inputs:
            try:
                feeds[inp.name] = inp.as_numpy()
            except Exception as e:  # a datatype V2 knows and numpy does not
                raise InvalidInput("input '%s': %s" % (inp.name, e))
        try:
            outs = self.model.run(feeds)
        except ValueError as e:
            raise InvalidInput(str(e))
        res = []
        for t, o in zip(self.model.outputs, outs):
            out = InferOutput(name=t.name, shape=list(o.shape), datatype=from_np_dtype(o.dtype))
            out.set_data_from_numpy(o, binary_data=False)
            res.append(out)
        return InferResponse(response_id=payload.id or str(uuid.uuid4()), model_name=self.name, infer_outputs=res)


def main():
    ap = argparse.ArgumentParser(parents=[model_server.parser], description=__doc__.splitlines()[0])
    ap.add_argument("--model_path", required=True, help="a model.so compiled by icc")
    ap.add_argument("--threads", type=int, default=1, help="icc threads per run")
    a, _ = ap.parse_known_args()
    ModelServer(http_port=a.http_port, grpc_port=a.grpc_port, enable_grpc=a.enable_grpc,
                workers=1).start([IccModel(a.model_name, a.model_path, a.threads)])


if __name__ == "__main__":
    main()
