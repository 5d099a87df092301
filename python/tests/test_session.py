"""icc.InferenceSession against onnxruntime.InferenceSession, and icc.bench."""
import os

import numpy as np
import onnxruntime as ort
import pytest

import icc


@pytest.fixture
def cache(tmp_path, monkeypatch):
    d = tmp_path / "cache"
    monkeypatch.setenv("ICC_CACHE_DIR", str(d))
    return d


def test_session_like_onnxruntime(models, cache):
    onnx_path = models.two[0]
    s = icc.InferenceSession(onnx_path)
    o = ort.InferenceSession(onnx_path, providers=["CPUExecutionProvider"])
    for mine, theirs in [(s.get_inputs(), o.get_inputs()), (s.get_outputs(), o.get_outputs())]:
        assert [(a.name, a.shape, a.type) for a in mine] == [(a.name, a.shape, a.type) for a in theirs]
    r = np.random.default_rng(9)
    feeds = {"a": r.standard_normal((6, 4)).astype(np.float32),
             "b": r.standard_normal((6, 4)).astype(np.float32)}
    got, want = s.run(None, feeds), o.run(None, feeds)
    assert len(got) == 2
    for g, w in zip(got, want):
        assert g.dtype == w.dtype
        np.testing.assert_array_equal(g, w)
    z, = s.run(["z"], feeds)
    np.testing.assert_array_equal(z, want[1])
    zy = s.run(["z", "y"], feeds)
    np.testing.assert_array_equal(zy[1], want[0])
    with pytest.raises(ValueError, match="unknown output 'q'"):
        s.run(["q"], feeds)
    with pytest.raises(ValueError, match="missing input 'b'"):
        s.run(None, {"a": feeds["a"]})


def test_session_cnn_vs_onnxruntime(models, cache):
    onnx_path = models.cnn[0]
    x = np.random.default_rng(1).standard_normal((3, 3, 16, 16)).astype(np.float32)
    got = icc.InferenceSession(onnx_path).run(None, {"x": x})[0]
    want = ort.InferenceSession(onnx_path, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_session_caches_the_compiled_model(models, cache):
    onnx_path = models.mlp[0]
    icc.InferenceSession(onnx_path)
    files = sorted(os.listdir(cache))
    sos = [f for f in files if f.endswith(".so")]
    assert len(sos) == 1 and sos[0].startswith("mlp-")
    st = os.stat(cache / sos[0])
    s2 = icc.InferenceSession(onnx_path)  # found, not compiled again
    assert os.stat(cache / sos[0]).st_mtime_ns == st.st_mtime_ns
    assert s2.model.path == str(cache / sos[0])
    icc.InferenceSession(onnx_path, opt=3)  # other options: another entry
    assert len([f for f in os.listdir(cache) if f.endswith(".so")]) == 2


def test_session_from_so_and_compile_error(models, cache, tmp_path):
    s = icc.InferenceSession(models.mlp[1])
    assert s.model.path == models.mlp[1]
    assert not cache.exists()  # nothing compiled
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"nope")
    with pytest.raises(icc.CompileError):
        icc.InferenceSession(str(bad))


def test_bench(models):
    m = icc.load(models.mlp[1])
    rep = icc.bench(m, threads=1, batch=[1, 4], time=0.1, warmup=0.05, runs=5)
    assert rep["model"] == m.path
    rows = rep["results"]
    assert [(r["threads"], r["batch"]) for r in rows] == [(1, 1), (1, 4)]
    for r in rows:
        assert r["runs"] >= 5
        assert 0 < r["min_ms"] <= r["p50_ms"] <= r["p99_ms"] <= r["max_ms"]
        assert r["items_per_s"] == pytest.approx(r["inferences_per_s"] * r["batch"], rel=1e-3)
    with pytest.raises(icc.Error) as e:
        icc.bench(models.mlp[1], scenario="sideways")
    assert "sideways" in str(e.value) and "\n" not in str(e.value)
