"""The options of a tabular query: rows, targets, bounds and allowed categories, checked.

Each function reads one user option against the :class:`~fastcf._tabular.columns.Schema` and
raises a ``ValueError``/``TypeError`` that names the column or the value at fault.
"""

from __future__ import annotations

import math

import numpy as np

from .columns import range_text, resolve_names
from .milp import Query

__all__ = ["read_rows", "resolve_box", "resolve_allowed", "make_query"]


def read_rows(schema, x):
    """Return (frame, single) of the query rows, in the model's columns."""
    import pandas as pd

    if isinstance(x, pd.Series):
        frame, single = x.to_frame().T, True
    elif isinstance(x, dict):
        frame, single = pd.DataFrame([x]), True
    elif isinstance(x, pd.DataFrame):
        frame, single = x, x.shape[0] == 1
    else:
        raise TypeError(
            f"x must be a DataFrame (rows), a Series or a dict (one row); got {type(x).__name__}"
        )
    cols = list(schema.columns)
    if list(frame.columns) != cols:
        missing = [str(c) for c in cols if c not in frame.columns]
        if missing:
            raise ValueError(f"x lacks the model's columns {missing}")
        frame = frame[cols]
    if frame.shape[0] == 0:
        raise ValueError("x has no rows")
    if not isinstance(x, pd.DataFrame):  # a Series or dict: back to the training dtypes
        frame = frame.copy()
        for c, dt in zip(cols, schema.dtypes, strict=True):
            if getattr(dt, "kind", "O") not in "iubf" and frame[c].map(_none).any():
                # None / pd.NA in a column of labels: a cast to a string dtype would make it
                # NaN, which the imputer fills; the model itself reads it as no category
                # (SimpleImputer matches NaN only), so read() refuses it, naming the cell
                continue
            try:
                cast = frame[c].astype(dt)
            except (TypeError, ValueError, OverflowError):
                continue  # a missing or unseen value: read() names it
            if not _wraps(frame[c], cast):  # a value the dtype cannot hold: read() names it
                frame[c] = cast
    return frame, single


def _none(v):
    """Tell whether a cell holds None or ``pd.NA`` (not NaN)."""
    import pandas as pd

    return v is None or v is pd.NA


def _wraps(before, after):
    """Return whether a cast to a numeric dtype changed a value (int8 wraps 200 to -56)."""
    import pandas as pd

    kind = getattr(after.dtype, "kind", "O")
    if kind not in "iubf":
        return False
    a = pd.to_numeric(before, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
    b = after.to_numpy(dtype=np.float64, na_value=np.nan)
    if kind == "f":  # float32 rounds, which is the dtype's own; overflow to inf is a wrap
        return bool(np.any(np.isfinite(a) & ~np.isfinite(b)))
    return bool(np.any((a != b) & ~(np.isnan(a) & np.isnan(b))))


def resolve_box(schema, bounds, x0):
    """Return (lo, hi) of the numeric columns and the ordinal allowed mask from bounds.

    Raises a ``ValueError`` naming the column when a column's bounds have ``lo > hi``, or lie
    outside the values its dtype holds (the program then keeps every answer within both).
    """
    s = schema
    lo = np.minimum(s.num_lo, x0)
    hi = np.maximum(s.num_hi, x0)
    rank_ok = np.ones(int(s.cat_start[-1]), dtype=bool)
    if bounds is None:
        return lo, hi, rank_ok
    if not isinstance(bounds, dict):
        raise TypeError(f"bounds must be a dict {{column: (lo, hi)}}; got {type(bounds)}")
    for c, (name, pair) in zip(
        resolve_names(list(bounds), s.columns, "bounds"), bounds.items(), strict=True
    ):
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            raise ValueError(f"bounds[{name!r}] must be a pair (lo, hi); got {pair!r}")
        kind = s.kind[c]
        if kind == "numeric":
            j = int(np.searchsorted(s.fold.numeric, c))
            for side, v in enumerate(pair):
                if v is None:
                    continue
                val = _bound_value(v, x0[j], name)
                if side == 0:
                    lo[j] = val
                else:
                    hi[j] = val
            dlo, dhi = s.num_dlo[j], s.num_dhi[j]
            if lo[j] > dhi or hi[j] < dlo:
                raise ValueError(
                    f"bounds[{name!r}] = ({lo[j]:g}, {hi[j]:g}){_defaults(pair)} lies outside "
                    f"the values of column {name!r}, of dtype "
                    f"{range_text(s.dtypes[c], dlo, dhi)}: no answer could be written in it"
                )
            if lo[j] > hi[j]:
                raise ValueError(
                    f"bounds[{name!r}] has lo > hi: {lo[j]:g} > {hi[j]:g}{_defaults(pair)}"
                )
        elif kind == "ordinal":
            j = int(np.searchsorted(s.cat_cols, c))
            sl = slice(s.cat_start[j], s.cat_start[j + 1])
            labels = list(s.fold.labels[c])
            r = s.cat_rank[sl]
            for side, v in enumerate(pair):
                if v is None:
                    continue
                if v not in labels:
                    raise ValueError(
                        f"bounds[{name!r}] must hold categories of the ordinal column; "
                        f"{v!r} is not one of {labels}"
                    )
                rv = r[labels.index(v)]
                rank_ok[sl] &= (r >= rv) if side == 0 else (r <= rv)
        else:
            raise ValueError(
                f"bounds[{name!r}]: column {name!r} is {kind}; bound numeric or ordinal "
                "columns, and give a categorical column's allowed categories with allowed="
            )
    return lo, hi, rank_ok


def _defaults(pair):
    """Return where a numeric bound's ends that the user left as None come from."""
    left = [side for side, v in zip(("lower", "upper"), pair, strict=True) if v is None]
    if not left:
        return ""
    ends = " and ".join(f"the {side} bound" for side in left)
    return (
        f" ({ends}, not given, {'is' if len(left) == 1 else 'are'} the training range widened "
        "to hold the row; give both ends to set them)"
    )


def resolve_allowed(schema, allowed, transitions=None):
    """Return (mask, given, moves) of the ``allowed=`` and ``transitions=`` options.

    ``mask``: the categories an answer may take; ``given``: the encoded columns whose allowed
    set the user gave; ``moves``: ``(j, slice, T)`` per column with transitions (j its block),
    ``T[a, b]`` true when a row in category a may move to category b (the diagonal is true:
    staying is free).
    """
    s = schema
    mask = s.cat_seen.copy()
    moves = _resolve_transitions(s, transitions)
    if allowed is None:
        return mask, np.zeros(len(s.cat_cols), dtype=bool), moves
    if not isinstance(allowed, dict):
        raise TypeError(f"allowed must be a dict {{column: [categories]}}; got {type(allowed)}")
    given = np.zeros(len(s.cat_cols), dtype=bool)
    for c, (name, cats) in zip(
        resolve_names(list(allowed), s.columns, "allowed"), allowed.items(), strict=True
    ):
        j, sl = _encoded_block(s, c, name, "allowed")
        if isinstance(cats, str) or not hasattr(cats, "__iter__"):
            cats = [cats]
        sub = np.zeros(sl.stop - sl.start, dtype=bool)
        for v in cats:
            sub[_category(s, c, j, v, f"allowed[{name!r}]", write=True)] = True
        mask[sl] = sub
        given[j] = True
    return mask, given, moves


def _encoded_block(s, c, name, option):
    """Return (block index, slice) of an encoded column, or raise naming the option."""
    if s.kind[c] not in ("categorical", "ordinal"):
        raise ValueError(
            f"{option}[{name!r}]: column {name!r} is not encoded (use bounds= for numbers)"
        )
    j = int(np.searchsorted(s.cat_cols, c))
    return j, slice(s.cat_start[j], s.cat_start[j + 1])


def _category(s, c, j, v, where, write=False):
    """Return the index of category ``v`` of block ``j``, or raise naming ``where``.

    ``write``: ``v`` is a category an answer may take, so the column's dtype must hold it.
    """
    k = s.cat_index[j].get(v.item() if hasattr(v, "item") else v)
    if k is None:
        raise ValueError(
            f"{where} names the category {v!r}, which the model does not know; "
            f"known: {list(s.fold.labels[c])}"
        )
    if write and not s.cat_writable[s.cat_start[j] + k]:
        raise ValueError(
            f"{where} names the category {v!r}, which column {s.columns[c]!r} (dtype "
            f"{s.dtypes[c]}) cannot hold"
        )
    return k


def _resolve_transitions(s, transitions):
    """Return [(j, slice, T)] of ``transitions={column: {from: [to, ...]}}`` (see make_query)."""
    if transitions is None:
        return []
    if not isinstance(transitions, dict):
        raise TypeError(
            "transitions must be a dict {column: {from_category: [to_categories]}}; "
            f"got {type(transitions).__name__}"
        )
    moves = []
    for c, (name, graph) in zip(
        resolve_names(list(transitions), s.columns, "transitions"),
        transitions.items(),
        strict=True,
    ):
        j, sl = _encoded_block(s, c, name, "transitions")
        if not isinstance(graph, dict):
            raise TypeError(
                f"transitions[{name!r}] must be a dict {{from_category: [to_categories]}}; "
                f"got {type(graph).__name__}"
            )
        n = sl.stop - sl.start
        T = np.eye(n, dtype=bool)
        for a, targets in graph.items():
            ka = _category(s, c, j, a, f"transitions[{name!r}]")
            if isinstance(targets, str) or not hasattr(targets, "__iter__"):
                targets = [targets]
            for b in targets:
                T[ka, _category(s, c, j, b, f"transitions[{name!r}][{a!r}]", write=True)] = True
        moves.append((j, sl, T))
    return moves


def make_query(
    schema, x0, k0, tidx, threshold, bounds, allowed, frozen, max_changes, tau=None,
    time_limit=None, plausible=False, row=None,
):  # fmt: skip
    """Return the :class:`Query` of one row (``allowed`` from :func:`resolve_allowed`).

    ``row``: the query's one-row DataFrame, for the tree program's model checks (optional).
    """
    lo, hi, rank_ok = resolve_box(schema, bounds, x0)
    mask, given, moves = allowed
    s = schema
    allow = mask & rank_ok
    own = s.cat_start[:-1] + k0
    # the row's own category stays allowed unless the user's allowed set leaves it out
    keep = ~given[np.arange(own.size)] & rank_ok[own]
    allow[own[keep]] = True
    for j, sl, T in moves:  # a column with transitions: only the moves from the row's category
        allow[sl] &= T[k0[j]]
    return Query(
        int(tidx), threshold, lo, hi, allow, frozen, max_changes, tau, time_limit, plausible, row
    )


def _bound_value(v, x0, name):
    """Return an absolute bound from a number or a relative string ("+500", "-10%")."""
    if isinstance(v, str):
        text = v.strip()
        if not text or text[0] not in "+-":
            raise ValueError(
                f"bounds[{name!r}]: a relative bound is a string starting with + or - "
                f'("+500", "-10%"); got {v!r}'
            )
        try:
            if text.endswith("%"):
                return x0 + abs(x0) * float(text[:-1]) / 100.0
            return x0 + float(text)
        except ValueError:
            raise ValueError(f"bounds[{name!r}]: cannot read the relative bound {v!r}") from None
    try:
        val = float(v)
    except (TypeError, ValueError):
        raise ValueError(
            f"bounds[{name!r}] must hold numbers, strings or None; got {v!r}"
        ) from None
    if math.isnan(val):
        raise ValueError(f"bounds[{name!r}] is NaN; use None (default) or ±inf")
    return val
