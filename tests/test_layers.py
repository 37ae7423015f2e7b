"""Layers that only point down (issue 53, items 4 and 6): the package's own imports, read from
its source (those inside functions too), hold no circle of more than two files, the bottom
modules import nothing of fastcf, and nothing below the router imports it."""

import ast
from pathlib import Path

PKG = Path(__file__).resolve().parents[1] / "fastcf"

#: the bottom layer: read by every other, importing nothing of fastcf
BOTTOM = {"fastcf._catalog", "fastcf._options", "fastcf._status", "fastcf._threads"}
#: the top: the front door and what drives it, imported by nothing but each other and the
#: package's lazy exports
TOP = {"fastcf.dispatch", "fastcf.__main__", "fastcf.bench", "fastcf._warmup"}


def _module(path):
    rel = path.relative_to(PKG.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _imports():
    """Return {module: {fastcf modules it imports}} (absolute and relative, at any depth)."""
    mods = {_module(p): p for p in PKG.rglob("*.py")}
    graph = {}
    for name, path in mods.items():
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        out = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")
                    base = base[: len(base) - node.level + 1]
                    root = ".".join(base + ([node.module] if node.module else []))
                else:
                    root = node.module or ""
                targets = [root] + [f"{root}.{a.name}" for a in node.names]
            else:
                continue
            for t in targets:
                while t and t not in mods:  # the module a dotted name lives in
                    t = t.rpartition(".")[0]
                if t and t != name and t.startswith("fastcf"):
                    out.add(t)
        graph[name] = out
    return graph


def _circles(graph):
    """Return the strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = set()
            while True:
                w = stack.pop()
                on.discard(w)
                comp.add(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(comp)

    for v in graph:
        if v not in index:
            visit(v)
    return out


def test_no_import_circle_of_more_than_two_modules():
    graph = {k: {v for v in vs if v != "fastcf"} for k, vs in _imports().items()}
    big = [sorted(c) for c in _circles(graph) if len(c) > 2]
    assert not big, f"import circles: {big}"


def test_the_bottom_imports_nothing_of_fastcf():
    graph = _imports()
    for name in BOTTOM:
        assert not graph[name], (name, graph[name])


def test_nothing_below_the_top_imports_it():
    graph = _imports()
    for name, deps in graph.items():
        if name in TOP or name.startswith(("fastcf.bench", "fastcf.__init__")) or name == "fastcf":
            continue
        up = {d for d in deps if d in TOP or d.startswith("fastcf.bench")}
        assert not up, f"{name} imports {sorted(up)}, a layer above it"


def test_the_scanner_sees_imports():
    """The scanner is not blind: the router's known imports are seen."""
    graph = _imports()
    assert {"fastcf._catalog", "fastcf._options"} <= graph["fastcf.dispatch"]
    assert "fastcf.linear" in graph["fastcf.dispatch"]  # (an import inside a function)
    assert "fastcf._catalog" in graph["fastcf.adapters"]
