"""The one table of options: every word an explainer takes, who takes it, and when.

Each family's explainer (:class:`~fastcf.LinearExplainer`, :class:`~fastcf.LVQExplainer`,
:class:`~fastcf.TreeExplainer`, :class:`~fastcf.TabularExplainer`,
:class:`~fastcf.NetExplainer`) takes the same word for the same question; :data:`OPTIONS`
declares each word once: whether it is given when the explainer is built (``"build"``) or with
each query (``"query"``, to ``explain`` and ``enumerate``), and which families take it. The
front door (:func:`fastcf.counterfactual`) splits a user's options by it and names a misspelled
one with the closest valid word; a test holds the table against the explainers' own
signatures, so it cannot drift from the code.

This module imports nothing of fastcf: it is the bottom layer that every other may read.

Examples
--------
>>> sorted(families_of("exact"))
['linear', 'lvq', 'net', 'tabular', 'trees']
>>> split("linear", {"region": True, "metric": "manhattan"}, where="counterfactual")
({}, {'region': True, 'metric': 'manhattan'})
"""

from __future__ import annotations

import difflib
from typing import NamedTuple

__all__ = [
    "Option",
    "OPTIONS",
    "FAMILIES",
    "REFUSED",
    "families_of",
    "stage_of",
    "split",
    "table",
]

#: the families, by their explainer's name
FAMILIES = {
    "linear": "LinearExplainer",
    "lvq": "LVQExplainer",
    "trees": "TreeExplainer",
    "tabular": "TabularExplainer",
    "net": "NetExplainer",
}

_ALL = frozenset(FAMILIES)


class Option(NamedTuple):
    """One word of the vocabulary."""

    stage: str  # "build": the explainer's constructor; "query": explain and enumerate
    families: frozenset
    doc: str


def _o(stage, families, doc):
    return Option(stage, _ALL if families == "all" else frozenset(families.split()), doc)


#: every option, once (the query options of ``explain``; ``enumerate`` takes them too, with
#: ``k`` and ``max_nodes``)
OPTIONS = {
    # ---- the question
    "region": _o("query", "all", "the closest point classified as the target"),
    "proba": _o("query", "linear trees tabular net", "p_target(x) >= τ (probabilistic models)"),
    "lam": _o("query", "linear", "λ of problem (2): min λ/2‖x − x̄‖² − log p_target(x)"),
    "margin": _o("query", "linear lvq tabular net", "margin on the scores (logits, distances)"),
    # ---- the cost
    "metric": _o("query", "all", '"euclidean", "manhattan" (trees: "l0" too)'),
    "weights": _o("query", "linear lvq trees net", 'cost of a unit change per feature, or "mad"'),
    # ---- what may move
    "frozen": _o("query", "all", "features (columns) that keep their value"),
    "bounds": _o("query", "all", "a box: (lo, hi) arrays, or {column: (lo, hi)} (tabular)"),
    "max_changes": _o("query", "all", "at most this many features change (exact)"),
    "constraints": _o("query", "lvq", "linear constraints a·x <= c"),
    "allowed": _o("query", "tabular", "{column: categories} an answer may take"),
    "transitions": _o("query", "tabular", "{column: {from: [to, ...]}} moves allowed"),
    "missing": _o("query", "tabular", '"impute" or "keep": a missing cell'),
    "plausible": _o("query", "trees tabular", "only regions of the model with training rows"),
    # ---- how it is solved
    "exact": _o("query", "all", "False: a fast valid answer (info['exact'] says which)"),
    "time_limit": _o("query", "all", "seconds: the best valid answer and a bound by then"),
    "method": _o("query", "linear lvq trees", "the solver (each family's own list)"),
    "solver": _o("query", "lvq", "a cvxpy solver name"),
    "tol": _o("query", "linear lvq", "the solver's tolerance"),
    "max_iter": _o("query", "linear lvq", "the solver's iteration limit"),
    "verify": _o("query", "all", '"fold" or "model": who confirms a success'),
    "n_jobs": _o("query", "all", "threads of a batch: None (every core), k, or -1 (every core)"),
    # ---- the explainer (construction)
    "immutable": _o("build", "tabular", "columns that never change"),
    "increase_only": _o("build", "tabular", "columns that may only increase"),
    "decrease_only": _o("build", "tabular", "columns that may only decrease"),
    "integer": _o("build", "tabular", "integer columns (default: inferred)"),
    "categorical": _o("build", "tabular", "encoded columns (default: inferred)"),
    "resolution": _o("build", "tabular", "{column: grid step or None}"),
    "levels": _o("build", "tabular", "{column: values it may take}"),
    "feature_names": _o("build", "lvq", "the features' names"),
    "classes": _o("build", "net", "the labels of a PyTorch network's outputs"),
}
#: tabular's cost weights are given when it is built ({column: w}); the others' with each query
_BUILD_TOO = {"weights": frozenset({"tabular"})}
#: words a family's ``explain`` takes only to refuse them, naming the option and why (an LVQ
#: model has no probabilities: ``proba=``/``lam=`` are a ValueError that says so, never a
#: bare "unexpected keyword")
REFUSED = {"lvq": frozenset({"proba", "lam"})}


def families_of(name):
    """Return the families that take option ``name`` (at build or query time)."""
    opt = OPTIONS[name]
    return opt.families | _BUILD_TOO.get(name, frozenset())


def stage_of(name, family):
    """Return where ``family`` takes ``name``: "build", "query" or None."""
    if family in _BUILD_TOO.get(name, ()):
        return "build"
    opt = OPTIONS.get(name)
    return opt.stage if opt is not None and family in opt.families else None


def split(family, options, *, where):
    """Return ``(build, query)``: the options of ``family``'s constructor and of its queries.

    Parameters
    ----------
    family : str
        A key of :data:`FAMILIES`.
    options : dict
        The user's options.
    where : str
        The function the user called, for messages.

    Raises
    ------
    TypeError
        For an option the family does not take: naming it, and either the families that do
        take it or the closest word of the vocabulary. A word of :data:`REFUSED` goes to the
        queries, whose refusal says why (an LVQ model has no probabilities).
    """
    build, query = {}, {}
    for name, value in options.items():
        stage = stage_of(name, family)
        if stage == "build":
            build[name] = value
        elif stage == "query" or name in REFUSED.get(family, ()):
            query[name] = value  # (a refused word: the explainer's own message says why)
        else:
            raise TypeError(_unknown(name, family, where))
    return build, query


def _unknown(name, family, where):
    who = FAMILIES[family]
    if name in OPTIONS:
        fams = sorted(families_of(name))
        takers = ", ".join(FAMILIES[f] for f in fams)
        return (
            f"{where}: option {name!r} is not one {who} takes (the model is answered by {who}); "
            f"{takers} {'takes' if len(fams) == 1 else 'take'} it"
        )
    mine = [n for n in OPTIONS if stage_of(n, family) is not None]
    close = difflib.get_close_matches(name, mine, n=1) or difflib.get_close_matches(
        name, list(OPTIONS), n=1
    )
    hint = f"; did you mean {close[0]!r}?" if close else f"; {who} takes {sorted(mine)}"
    return f"{where}: unknown option {name!r}{hint}"


def table():
    """Return the option × family table as Markdown (the docs carry it)."""
    fams = list(FAMILIES)
    head = "| option | when | " + " | ".join(FAMILIES[f] for f in fams) + " | what |"
    rows = [head, "|" + " --- |" * (len(fams) + 3)]
    for name, opt in OPTIONS.items():
        marks = []
        for f in fams:
            st = stage_of(name, f)
            if st is None:
                marks.append("refused" if name in REFUSED.get(f, ()) else "—")
            else:
                marks.append("✓" if st == opt.stage else st)
        rows.append(f"| `{name}` | {opt.stage} | " + " | ".join(marks) + f" | {opt.doc} |")
    return "\n".join(rows)
