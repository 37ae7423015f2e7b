"""fastcf inside a threaded HTTP service: one warm explainer per model, JSON in and out.

A minimal, runnable example of embedding (the standard library only: ``http.server``'s
``ThreadingHTTPServer``, one thread per connection). Each model's explainer is built once when
the service starts and warmed with one query (its kernels load from Numba's on-disk cache, or
compile then, never during a request), then shared by every request thread: fastcf's
explainers are safe to call from several threads at once (``tests/test_reliability.py::
test_threads_bit_identical``).

Run it::

    python docs/scripts/service.py --port 8000

and ask it::

    curl -s localhost:8000/explain \
        -d '{"model": "cancer", "row": 0, "target": 1, "options": {"proba": 0.9}}'

A request is JSON: ``model`` (a name of :data:`MODELS`), either ``x`` (the input, a list of
numbers) or ``row`` (an index into the model's data set, for trying it), ``target`` (a class
label), and ``options`` (``explain``'s keyword arguments, the words of the one vocabulary:
``proba``, ``metric``, ``bounds``, ``frozen``, ``max_changes``, ``time_limit``, ...). The reply:
``success``, ``status``, ``message``, ``distance``, ``x``, ``changed`` (the feature indices that
moved). A bad request (an unknown model or option, a malformed input) is a 400 whose body names
the problem, as fastcf's own ``ValueError``/``TypeError`` does.

``docs/scripts/service_load.py`` measures it at 1, 2 and 8 concurrent clients.
"""

from __future__ import annotations

import argparse
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np

#: the models the service answers for, built by :func:`build`
MODELS = ("cancer", "forest")


def build():
    """Return ``{name: (explainer, X)}``: each model fitted, its explainer built and warmed."""
    from sklearn.datasets import load_breast_cancer
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    import fastcf

    X, y = load_breast_cancer(return_X_y=True)
    cancer = make_pipeline(StandardScaler(), LogisticRegression(max_iter=5000)).fit(X, y)
    forest = RandomForestClassifier(30, max_depth=4, random_state=0).fit(X, y)
    out = {
        "cancer": (fastcf.LinearExplainer(cancer), X),
        "forest": (fastcf.TreeExplainer(forest).fit_mad(X), X),
    }
    for ex, data in out.values():  # warm: kernels loaded (or compiled) now, not in a request
        ex.explain(data[0], 1 - ex.model.predict(data[:1])[0])
    return out


def answer(explainers, request):
    """Return the reply (a dict) to one request (a dict); raise ValueError/TypeError if bad."""
    if not isinstance(request, dict):
        raise TypeError("the request must be a JSON object")
    name = request.get("model")
    if name not in explainers:
        raise ValueError(f"model must be one of {sorted(explainers)}; got {name!r}")
    ex, data = explainers[name]
    if ("x" in request) == ("row" in request):
        raise ValueError("give exactly one of 'x' (the input) and 'row' (a row of the data)")
    if "row" in request:
        row = request["row"]
        if isinstance(row, bool) or not isinstance(row, int) or not 0 <= row < data.shape[0]:
            raise ValueError(f"row must be an int in [0, {data.shape[0]}); got {row!r}")
        x = data[row]
    else:
        x = np.asarray(request["x"], dtype=np.float64)
    options = request.get("options", {})
    if not isinstance(options, dict):
        raise TypeError("options must be a JSON object of explain's keyword arguments")
    res = ex.explain(x, request.get("target"), **options)
    return {
        "success": bool(res.success),
        "status": int(res.status),
        "message": res.message,
        "distance": float(res.distance) if np.isfinite(res.distance) else None,
        "x": res.x.tolist(),
        "changed": [int(i) for i in res.changed_index],
    }


def handler(explainers):
    """Return the request handler class of a service answering with ``explainers``."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # (keep-alive: a client reuses its connection)
        # (TCP_NODELAY: with Nagle's algorithm a reply's last segment waited for the client's
        # delayed ACK, 40 ms a request)
        disable_nagle_algorithm = True

        def do_POST(self):  # noqa: N802 - http.server's name
            if self.path != "/explain":
                return self._reply(404, {"error": f"no such path {self.path!r}; POST /explain"})
            try:
                size = int(self.headers.get("Content-Length", 0))
                request = json.loads(self.rfile.read(size) or b"null")
                body = answer(explainers, request)
            except (ValueError, TypeError) as exc:  # (json's errors are ValueErrors too)
                return self._reply(400, {"error": str(exc)})
            return self._reply(200, body)

        def _reply(self, code, body):
            data = json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):  # (quiet: a load test makes thousands of requests)
            pass

    return Handler


def serve(port=8000, explainers=None, background=False):
    """Start the service on ``port`` (0: a free one); return the server.

    ``background``: serve from a daemon thread and return at once (tests, the load
    benchmark); else serve until interrupted.
    """
    explainers = build() if explainers is None else explainers
    server = ThreadingHTTPServer(("127.0.0.1", port), handler(explainers))
    server.daemon_threads = True
    if background:
        threading.Thread(target=server.serve_forever, daemon=True).start()
        return server
    print(f"fastcf service on http://127.0.0.1:{server.server_address[1]}/explain")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return server


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8000)
    serve(parser.parse_args().port)
