"""The README's two set-up commands, .ci/run, and the public namespace of shared/API.md."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def readme_command(marker):
    text = (ROOT / "README.md").read_text()
    m = re.search(rf"<!-- fastcf:{marker} -->\s*```bash\n(.+?)\n```", text)
    assert m, f"README.md has no {marker} block"
    return m.group(1).strip()


def test_readme_commands_and_ci_agree():
    demo = readme_command("demo-command")
    test = readme_command("test-command")
    assert demo.startswith("pip install") and "python -m fastcf demo" in demo
    assert test.startswith("pip install") and "pytest" in test
    ci = (ROOT / ".ci" / "run").read_text()
    # .ci/run reads both commands from the README instead of repeating them
    assert "fastcf:test-command" in ci and "fastcf:demo-command" in ci


def test_lowest_versions_are_the_declared_bounds():
    # .ci/run's "lowest" stage installs .ci/lowest.txt: each pin must be a lower bound that
    # pyproject.toml declares, and every runtime dependency must be pinned there
    import re

    tomllib = pytest.importorskip("tomllib")  # Python >= 3.11

    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared = {}
    for req in meta["dependencies"] + meta["optional-dependencies"]["test"]:
        m = re.fullmatch(r"([A-Za-z0-9_.-]+)(\[[^\]]*\])?>=([0-9.]+)", req.replace(" ", ""))
        assert m, req
        declared[m.group(1).lower()] = m.group(3)
    pins = {}
    for line in (ROOT / ".ci" / "lowest.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, version = line.split("==")
            pins[name.lower()] = version.removesuffix(".*")
    for name, version in pins.items():
        assert declared.get(name) == version, (name, version, declared.get(name))
    runtime = {re.split(r"[<>=\[]", r)[0].lower() for r in meta["dependencies"]}
    assert runtime <= set(pins), runtime - set(pins)


def test_public_names():
    import fastcf

    for name in [
        "LinearExplainer",
        "Counterfactual",
        "CounterfactualBatch",
        "CounterfactualPath",
        "check_gradient",
        "counterfactual",
    ]:
        assert hasattr(fastcf, name), name
    assert set(fastcf.__all__) >= {"LinearExplainer", "check_gradient", "counterfactual"}
    with pytest.raises(AttributeError):
        fastcf.does_not_exist  # noqa: B018


def test_documented_names_are_reachable_from_import_fastcf():
    # every name the API reference documents (docs/api/*.md, "::: fastcf.module.Name") exists:
    # its longest module prefix imports, and the rest are attributes of that module (imported
    # here, not left to what the tests before this one happened to import)
    import importlib

    import fastcf

    paths = set()
    for page in (ROOT / "docs" / "api").glob("*.md"):
        for line in page.read_text().splitlines():
            if line.startswith("::: fastcf."):
                paths.add(line.split()[1])
    assert "fastcf.dispatch.explainer_for" in paths
    for path in sorted(paths):
        parts = path.split(".")
        for k in range(len(parts), 0, -1):
            name = ".".join(parts[:k])
            try:
                obj = importlib.import_module(name)
                break
            except ModuleNotFoundError as exc:
                if not f"{name}.".startswith(f"{exc.name}."):  # (not a module's own failure)
                    raise
        for part in parts[k:]:
            obj = getattr(obj, part)  # AttributeError names the missing part
    for name in fastcf.__all__:
        assert getattr(fastcf, name) is not None, name
    assert fastcf.explainer_for is fastcf.dispatch.explainer_for


def test_import_does_not_load_cvxpy_or_sklearn():
    code = "import sys, fastcf; print('cvxpy' in sys.modules, 'sklearn' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


def test_warmup_command_runs_the_given_families(capsys):
    from fastcf.__main__ import main
    from fastcf._warmup import FAMILIES, warmup

    assert main(["warmup", "gradcheck"]) == 0
    out = capsys.readouterr().out
    assert "gradcheck" in out and "done in" in out
    assert set(FAMILIES) == {"logistic", "softmax", "lvq", "svm", "trees", "net", "gradcheck"}
    with pytest.raises(ValueError, match="families must be among"):
        warmup(["nope"])


def test_warmup_runs_families_and_their_parts_in_processes_of_their_own(capsys):
    # `python -m fastcf warmup` on several cores: one process per family (softmax and logistic
    # in parts), costliest first, into the same cache
    from fastcf.__main__ import main
    from fastcf._warmup import _BY_COST, _PARTS, FAMILIES, warmup_processes

    assert sorted(_BY_COST) == sorted(FAMILIES) and set(_PARTS) <= set(FAMILIES)
    assert main(["warmup", "--jobs", "2", "gradcheck", "svm"]) == 0
    out = capsys.readouterr().out
    assert "(2 processes)" in out and "svm" in out and "gradcheck" in out
    assert set(warmup_processes(["gradcheck", "logistic"], jobs=2)) == {
        "gradcheck", "logistic:manhattan", "logistic:euclidean",
    }  # fmt: skip
    with pytest.raises(ValueError, match="families must be among"):
        warmup_processes(["nope"])
    with pytest.raises(ValueError, match="jobs"):
        warmup_processes(["svm"], jobs=0)


@pytest.mark.needs_jit
def test_warmup_trees_compiles_the_tree_kernels():
    # the kernels an ensemble's query calls (grep `_kernels` in fastcf/_trees), each with the
    # one specialisation every query uses
    from fastcf._kernels.tree_beam import beam_moves, beam_next, np_sum
    from fastcf._kernels.tree_moves import miss_bits, single_moves_bits
    from fastcf._kernels.tree_reduce import reduce_rounds
    from fastcf._kernels.tree_search import search
    from fastcf._kernels.tree_walk import leaf_sums, walk
    from fastcf._warmup import warmup

    assert list(warmup(["trees"])) == ["trees"]
    assert len(single_moves_bits.signatures) == 1 and len(reduce_rounds.signatures) == 1
    assert len(miss_bits.signatures) == 1
    assert len(walk.signatures) == 1 and len(search.signatures) == 1
    assert len(beam_moves.signatures) == 1 and len(beam_next.signatures) == 1
    assert len(leaf_sums.signatures) == 1
    # np_sum is called only from inside the beam's kernels: when those load from a kernel cache
    # that an earlier process filled (the README's demo, before the tests), it is never compiled
    # in this process, so it has no signature or the one every query uses, never two
    assert len(np_sum.signatures) <= 1


@pytest.mark.needs_jit
def test_tabular_queries_need_no_family_of_their_own():
    """``TabularExplainer`` runs no kernel of its own: after ``warmup(["trees"])`` the queries
    of a tree pipeline (one row, a batch, ``max_changes``, ``proba``, ``enumerate``) and of a
    linear pipeline add no specialisation to any kernel (so warmup has no tabular family)."""
    import gc
    import warnings

    import numpy as np
    import pandas as pd
    from numba.core.registry import CPUDispatcher
    from sklearn.compose import make_column_transformer
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    import fastcf
    from fastcf._warmup import warmup

    warmup(["trees"])

    def dispatcher(d):
        try:
            return isinstance(d, CPUDispatcher)
        except ReferenceError:  # a dead weak proxy (another test's dropped kernel)
            return False

    def compiled():
        # (every object of the process is looked at: some of other libraries warn when touched,
        # e.g. PyTorch's deprecated torch.distributed.reduce_op)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return {id(d): len(d.signatures) for d in gc.get_objects() if dispatcher(d)}

    rng = np.random.default_rng(0)
    X = pd.DataFrame(
        {
            "a": rng.integers(0, 9, 120),
            "b": rng.normal(size=120).round(1),
            "c": rng.choice(list("xyz"), 120),
        }
    )
    y = ((X.a > 4) ^ (X.c == "y")).astype(int)
    before = compiled()
    for clf in (RandomForestClassifier(4, max_depth=3, random_state=0), LogisticRegression()):
        pre = make_column_transformer((StandardScaler(), ["a", "b"]), (OneHotEncoder(), ["c"]))
        model = make_pipeline(pre, clf).fit(X, y)
        tx = fastcf.TabularExplainer(model, X)
        rows = X[model.predict(X) == 0].iloc[:3]
        tx.explain(rows.iloc[[0]], 1)
        tx.explain(rows, 1)
        tx.explain(rows.iloc[[1]], 1, max_changes=1, proba=0.6)
        list(tx.enumerate(rows.iloc[[0]], 1, k=2))
    after = compiled()
    assert {k: n for k, n in after.items() if n != before.get(k, 0)} == {}
