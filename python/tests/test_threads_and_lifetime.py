"""One model, many threads; contexts made per thread and freed; no leak over
1,000 load/run/close cycles."""
import gc
import os
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

import icc


def test_eight_threads_bit_identical(models):
    m = icc.load(models.cnn[1], threads=1)
    assert m.threads == 1
    r = np.random.default_rng(11)
    xs = [r.standard_normal((2, 3, 16, 16)).astype(np.float32) for _ in range(8)]
    want = [m(x=x) for x in xs]  # this thread, one at a time
    barrier = threading.Barrier(8)

    def work(k):
        barrier.wait()
        got = [m(x=xs[(k + i) % 8]) for i in range(40)]
        return k, got, m._local.ctx.handle

    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(work, range(8)))
    for k, got, _ in results:
        for i, y in enumerate(got):
            assert np.array_equal(y, want[(k + i) % 8]), (k, i)
    handles = {h for _, _, h in results}
    assert len(handles) == 8  # a context per thread
    assert m._local.ctx.handle not in handles


def test_context_freed_when_thread_ends(models):
    m = icc.load(models.mlp[1])
    m(x=np.zeros((1, 784), np.float32))
    assert len(m._core.live) == 1
    ts = [threading.Thread(target=lambda: m(x=np.zeros((1, 784), np.float32))) for _ in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    gc.collect()
    assert len(m._core.live) == 1  # the four threads' contexts went with them
    m.close()
    assert len(m._core.live) == 0


def rss_kib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS in /proc/self/status")


def test_no_leak_over_1000_load_run_close(models):
    so = models.mlp[1]
    x = np.random.default_rng(2).standard_normal((4, 784)).astype(np.float32)
    want = icc.load(so)(x=x)

    def cycle():
        m = icc.load(so)
        y = m(x=x)
        m.close()
        return y

    for _ in range(50):  # allocator and caches settle
        cycle()
    gc.collect()
    before = rss_kib()
    for i in range(1000):
        y = cycle()
        if i % 250 == 0:
            assert np.array_equal(y, want)
    gc.collect()
    grown = rss_kib() - before
    # a leaked model (1.2 MB of mapped weights) or context per cycle would be
    # hundreds of MB; a leaked byte buffer per run several MB
    assert grown < 8 * 1024, "RSS grew by %d KiB over 1000 cycles" % grown


def test_no_leak_dropping_models_unclosed(models):
    """A Model dropped without close() is closed by its finalizer."""
    so = models.mlp[1]
    x = np.zeros((1, 784), np.float32)
    for _ in range(50):
        icc.load(so)(x=x)
    gc.collect()
    before = rss_kib()
    for _ in range(300):
        icc.load(so)(x=x)
    gc.collect()
    assert rss_kib() - before < 8 * 1024
