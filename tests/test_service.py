"""The example service (``docs/scripts/service.py``, issue 54 item 5): it starts, answers what
the explainer answers, refuses bad requests with a 400 that names the problem, and serves
concurrent clients the same answers as one. Its latency is measured by
``docs/scripts/service_load.py``, not here."""

import http.client
import importlib.util
import json
import threading
from pathlib import Path

import numpy as np
import pytest

_PATH = Path(__file__).resolve().parents[1] / "docs" / "scripts" / "service.py"
_SPEC = importlib.util.spec_from_file_location("fastcf_example_service", _PATH)
service = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(service)


@pytest.fixture(scope="module")
def running():
    explainers = service.build()
    server = service.serve(0, explainers, background=True)
    yield explainers, server.server_address[1]
    server.shutdown()
    server.server_close()


def _post(port, body):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    data = json.dumps(body).encode()
    conn.request("POST", "/explain", data, {"Content-Type": "application/json"})
    reply = conn.getresponse()
    out = reply.status, json.loads(reply.read())
    conn.close()
    return out


@pytest.mark.parametrize(
    ("name", "options"),
    [("cancer", {"proba": 0.9}), ("forest", {"metric": "manhattan", "weights": "mad"})],
)
def test_the_service_answers_what_the_explainer_answers(running, name, options):
    explainers, port = running
    ex, X = explainers[name]
    target = int(1 - ex.model.predict(X[3:4])[0])
    code, body = _post(port, {"model": name, "row": 3, "target": target, "options": options})
    assert code == 200, body
    ref = ex.explain(X[3], target, **options)
    assert body["success"] and body["status"] == int(ref.status)
    np.testing.assert_array_equal(np.asarray(body["x"]), ref.x)
    assert body["distance"] == float(ref.distance)
    assert body["changed"] == ref.changed_index.tolist()
    assert ex.model.predict(np.asarray(body["x"])[None])[0] == target
    # the same with the input itself
    code, same = _post(port, {"model": name, "x": X[3].tolist(), "target": target,
                              "options": options})  # fmt: skip
    assert code == 200 and same == body


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ({"model": "nope", "row": 0, "target": 1}, "model must be one of"),
        ({"model": "cancer", "target": 1}, "exactly one of 'x'"),
        ({"model": "cancer", "row": 10**6, "target": 1}, "row must be an int"),
        ({"model": "cancer", "row": 0, "target": 1, "options": {"proab": 0.9}}, "proab"),
        ({"model": "cancer", "row": 0, "target": 1, "options": {"proba": 2.0}}, "proba"),
        ({"model": "cancer", "x": [1.0, 2.0], "target": 1}, "x"),
        ({"model": "cancer", "row": 0, "target": 7}, "target"),
    ],
)
def test_a_bad_request_is_a_400_naming_the_problem(running, body, words):
    _, port = running
    code, reply = _post(port, body)
    assert code == 400 and words in reply["error"], reply


def test_concurrent_clients_get_the_answers_of_one(running):
    explainers, port = running
    ex, X = explainers["cancer"]
    T = 1 - ex.model.predict(X[:24])
    bodies = [
        {"model": "cancer", "row": i, "target": int(T[i]), "options": {"proba": 0.8}}
        for i in range(24)
    ]
    alone = [_post(port, b) for b in bodies]
    got = [None] * 24

    def ask(k):
        for i in range(k, 24, 4):
            got[i] = _post(port, bodies[i])

    threads = [threading.Thread(target=ask, args=(k,)) for k in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert got == alone
    assert all(code == 200 and body["success"] for code, body in alone)
