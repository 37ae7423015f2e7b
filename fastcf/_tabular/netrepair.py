"""The tabular network program's repairs: an answer off the network, and a cheaper tie.

:class:`~fastcf._tabular.netprog.NetProgram` solves one mixed-integer program per row; its
answer meets the ReLUs' rows only within HiGHS's tolerances, and the margin it aims at can miss
a cheaper point on a tie the model gives the target. :func:`repair` finds the cheapest true
answer where the program's is none of the network's points; :func:`tie` looks below the
margin's answer on a region of ties. Both take the program ``p`` (its ``_milp_net``,
``_pattern`` and ``_point``) and are the tabular copies of :func:`fastcf._net.program.network_point`
and :func:`fastcf._net.answer._tie_row`.
"""

from __future__ import annotations

import math
import time

import numpy as np

from .._net.program import REPAIRS
from .._net.ties import TIE_GAIN
from .._status import Status
from .milp import RowAnswer

__all__ = ["meets", "repair", "tie"]


def meets(rnet, u, G, g, accept=None):
    """Tell whether the network's input ``u`` meets the target's rows ``G h ≥ g`` in float64.

    To the rounding of their terms (~9000 unit roundoffs of ``|G| |h| + |g|``, as
    :func:`fastcf._net.program.network_point`): a miss within it is the pattern's polytope
    missed by rounding, not a false answer. ``accept``: other rows ``(G, g)`` that do as well
    (the ties the model's rule gives the target).
    """
    h = rnet.last_hidden(u[None])[0]
    for Gr, gr in ((G, g),) if accept is None else ((G, g), accept):
        tol = 9e3 * rnet.unit * (np.abs(Gr) @ np.abs(h) + np.abs(gr))
        if bool(np.all(Gr @ h - gr >= -tol)):
            return True
    return False


def tie(p, x0, k0, q, prep, rnet, lo, hi, bounds, G, g, accept, ans):
    """Return a cheaper answer than ``ans`` on a region of ties, or None.

    ``ans`` is the margin's answer, or its "infeasible" (cost inf: the tie's program then has
    no cutoff, as NetExplainer's where nothing lies beyond the margin).

    The tabular copy of :func:`fastcf._net.answer._tie_row`: where the model's rule gives
    a tie to the target and some output row's value with its last-layer neurons off
    (−g of the tie's rows ``accept``) lies in [0, margin) (an output bias of 0), the
    cheapest answer can lie where those neurons are all off and the logits tie exactly,
    which no point at the margin reaches (``soak_tabular_net.py --wild``, seed 8095: 1.87
    on the tie, 3.07 at the margin, called optimal). The tie's program is solved below
    ``ans``'s cost less :data:`~fastcf._net.ties.TIE_GAIN`; its answer is kept only
    where every last-layer neuron that a row short of the margin weighs is off beyond its
    rounding (its output exactly 0 in any order of the model's sums: the tie holds as the
    pipeline computes it). Such a point on the boundary of that region (a continuous
    column moved to it) is not taken: the margin's answer stays.
    """
    Gt, gt = accept
    if not rnet.relu or not np.any((g > gt) & (-gt >= 0.0) & (-gt < g - gt)):
        return None
    cutoff = ans.cost * (1.0 - TIE_GAIN)
    t0 = time.perf_counter()
    r = p._milp_net(x0, k0, q, prep, rnet, bounds, Gt, gt, cutoff=cutoff)
    if isinstance(r, RowAnswer) or r[1] != "optimal":
        return None
    v, _, info, a = r
    u = p._pattern(rnet, v, lo, hi, Gt, gt)
    if a.size and not meets(rnet, u, Gt, gt):
        # the tie program's answer is no point of the network (a big-M leak through an "off"
        # neuron: soak_tabular_net.py --wild, seed 9360, x̄ itself at cost 0 with a last-layer
        # neuron at z = 4.1, where the tie costs 1.5): repaired as the margin's answers are
        r = repair(p, x0, k0, q, prep, rnet, lo, hi, bounds, Gt, gt, a, info, t0,
                   cutoff=cutoff)  # fmt: skip
        if isinstance(r, RowAnswer) or r[1] != "optimal":
            return None
        u, _, info = r
    zs = [z[0] for z in rnet.hidden(u[None])]
    if not zs:
        return None
    below = np.maximum(zs[-2], 0.0) if len(zs) > 1 else u  # (the last layer's input)
    z = zs[-1]
    h = np.maximum(z, 0.0)
    short = ~(G @ h - g >= 0.0)
    # off beyond their rounding (~9000 unit roundoffs of their terms), so that the
    # pipeline's own arithmetic has them off too, whatever the order of its sums
    eps = 9e3 * rnet.unit * (np.abs(rnet.W[-2]) @ np.abs(below) + np.abs(rnet.b[-2]))
    weighed = np.any(G[short] != 0.0, axis=0)
    if not np.all(-gt[short] >= 0.0) or np.any(weighed & (z > -eps)):
        return None
    x, k, cost = p._point(x0, k0, u)
    if not cost < cutoff:
        return None
    info = {**info, "nodes": ans.info.get("nodes", 0) + info["nodes"], "tie": True}
    msg = "exact (MILP over the network's neurons, on a tie the model gives the target; HiGHS)"
    return RowAnswer(x, k, cost, int(Status.OK), msg, info)


def repair(p, x0, k0, q, prep, rnet, lo, hi, bounds, G, g, a, info, t0, accept=None,
           cutoff=math.inf):  # fmt: skip
    """Return ``(u, status, info)``: the cheapest true answer, where the program's is none.

    The program's answer meets the ReLUs' rows within HiGHS's tolerances only: a binary a
    within 1e-6 of 0 lets ``u a`` through an "off" neuron, and with weights of 10³ (big-M
    bounds of 1e7) that moved a logit by more than 1 (``soak_tabular_net.py --wild``, seed
    7020: x̄ itself returned at cost 0, refused by the pipeline at every margin, a false
    failure). As :func:`fastcf._net.program.network_point`: the program's activation pattern
    is solved exactly — the program with its binaries a fixed, the grid moves and categories
    still integers, then ``p._pattern`` — and kept if it is the cheapest true answer so far;
    the pattern is excluded by a no-good row over the a (0/1 even where the grid moves are
    general integers: exact, every point of the network in that pattern was just solved),
    and the program is solved again below the best cost, until it has nothing cheaper (the
    best is optimal), runs out of time, or :data:`~fastcf._net.program.REPAIRS` rounds. A
    :class:`RowAnswer` where no true answer was found (infeasible where that is proven).
    ``t0``: when the first program started (``q.time_limit`` holds for them all);
    ``accept``: as ``p._attempt``'s (a point on a tie given to the target is a true answer:
    ``soak_tabular_net.py --wild``, seeds 7020 and 7035, where the repairs without it said
    "infeasible"); ``cutoff``: only answers cheaper than this are looked for (:func:`tie`'s).
    """
    best, best_cost, cuts, exact, last = None, math.inf, [], True, None
    nodes = info["nodes"]

    def left():  # (the row's seconds left for HiGHS: None, none set)
        if q.time_limit is None:
            return None
        return max(float(q.time_limit) - (time.perf_counter() - t0), 1e-3)

    for _ in range(REPAIRS):
        if q.time_limit is not None and time.perf_counter() - t0 >= float(q.time_limit):
            exact = False
            break
        sub = q._replace(time_limit=left())
        r = p._milp_net(x0, k0, sub, prep, rnet, bounds, G, g, fix=a)
        if isinstance(r, RowAnswer):
            exact &= r.status == int(Status.INFEASIBLE)
        else:
            exact &= r[1] == "optimal"
            nodes += r[2]["nodes"]
            uf = p._pattern(rnet, r[0], lo, hi, G, g)
            if meets(rnet, uf, G, g, accept):
                cost = p._point(x0, k0, uf.copy())[2]
                if cost < best_cost:
                    best, best_cost = uf, cost
        cuts.append(a)
        sub = q._replace(time_limit=left())
        last = p._milp_net(x0, k0, sub, prep, rnet, bounds, G, g, nogoods=cuts,
                              cutoff=min(best_cost, cutoff))  # fmt: skip
        if isinstance(last, RowAnswer):
            exact &= last.status == int(Status.INFEASIBLE)  # (nothing cheaper: proven)
            break
        nodes += last[2]["nodes"]
        a = last[3]
    else:
        exact = False
    if best is None:
        if isinstance(last, RowAnswer) and (exact or last.status != int(Status.INFEASIBLE)):
            return last
        return RowAnswer(x0.copy(), k0.copy(), math.inf, int(Status.MAXITER),
                         "no answer that is a point of the network was found (the "
                         "program's answers were none, within HiGHS's tolerances)",
                         {**info, "nodes": nodes})  # fmt: skip
    info = {**info, "nodes": nodes, "repairs": len(cuts)}
    info["bound"] = best_cost if exact else min(info["bound"], best_cost)
    return best, "optimal" if exact else "stopped", info
