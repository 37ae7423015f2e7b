"""Load the example service (``docs/scripts/service.py``) with 1, 2 and 8 concurrent clients.

Each client is a thread with its own keep-alive connection, sending requests one after
another (each for a row of the model's data set asked for the other class) for a fixed
time; the script prints, per model and number of clients, the latency percentiles p50 / p99
of a request and the service's throughput (requests per second). The baseline, in the same
run: the same queries answered by ``explain`` in-process on one thread, without HTTP.

``python docs/scripts/service_load.py [seconds per point]`` (default 5). On 2 cores, 8 clients
only queue: the figures show what a request costs once the cores are busy.
"""

from __future__ import annotations

import http.client
import json
import sys
import threading
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import service  # noqa: E402 - the example, beside this script

CLIENTS = (1, 2, 8)
#: each model's options: the forest's exact programs on these 30 continuous features take
#: 5 ms to 0.4 s, so its requests carry a time limit (the answer found by then, with its gap)
OPTIONS = {
    "cancer": {"proba": 0.9},
    "forest": {"metric": "manhattan", "weights": "mad", "time_limit": 0.25},
}


def requests_of(explainers, name, n=64):
    """Return n requests (dicts) of model ``name``: rows asked for the other class."""
    ex, X = explainers[name]
    rows = np.arange(n) % X.shape[0]
    other = 1 - ex.model.predict(X[rows])
    return [
        {"model": name, "row": int(r), "target": int(t), "options": OPTIONS[name]}
        for r, t in zip(rows, other, strict=True)
    ]


def client(port, requests, stop, lat):
    """Send ``requests`` round and round until ``stop`` is set; append each latency (s)."""
    conn = http.client.HTTPConnection("127.0.0.1", port)
    i = 0
    while not stop.is_set():
        body = json.dumps(requests[i % len(requests)]).encode()  # (bytes: one send)
        t0 = time.perf_counter()
        conn.request("POST", "/explain", body, {"Content-Type": "application/json"})
        reply = conn.getresponse()
        data = reply.read()
        lat.append(time.perf_counter() - t0)
        if reply.status != 200:
            raise RuntimeError(data.decode())
        i += 1
    conn.close()


def load(port, requests, n_clients, seconds):
    """Return (latencies, requests/s) of ``n_clients`` clients for ``seconds``."""
    stop = threading.Event()
    lats = [[] for _ in range(n_clients)]
    threads = [
        threading.Thread(target=client, args=(port, requests, stop, lats[c]))
        for c in range(n_clients)
    ]
    t0 = time.perf_counter()
    for th in threads:
        th.start()
    time.sleep(seconds)
    stop.set()
    for th in threads:
        th.join()
    took = time.perf_counter() - t0
    lat = np.concatenate([np.asarray(v) for v in lats])
    return lat, lat.size / took


def direct(explainers, requests, seconds):
    """The baseline: the same requests answered in-process (no HTTP), one thread."""
    lat, t_end = [], time.perf_counter() + seconds
    i = 0
    while time.perf_counter() < t_end:
        t0 = time.perf_counter()
        service.answer(explainers, requests[i % len(requests)])
        lat.append(time.perf_counter() - t0)
        i += 1
    lat = np.asarray(lat)
    return lat, lat.size / lat.sum()


def main(seconds=5.0):
    explainers = service.build()
    server = service.serve(0, explainers, background=True)
    port = server.server_address[1]
    print("| model | clients | p50 (ms) | p99 (ms) | requests/s |")
    print("| --- | --- | --- | --- | --- |")
    for name in service.MODELS:
        reqs = requests_of(explainers, name)
        lat, qps = direct(explainers, reqs, seconds)
        p50, p99 = np.percentile(lat, [50, 99]) * 1e3
        print(f"| {name} | in-process, 1 thread | {p50:.3f} | {p99:.3f} | {qps:,.0f} |")
        for n in CLIENTS:
            lat, qps = load(port, reqs, n, seconds)
            p50, p99 = np.percentile(lat, [50, 99]) * 1e3
            print(f"| {name} | {n} | {p50:.3f} | {p99:.3f} | {qps:,.0f} |", flush=True)
    server.shutdown()
    server.server_close()


if __name__ == "__main__":
    main(float(sys.argv[1]) if len(sys.argv) > 1 else 5.0)
