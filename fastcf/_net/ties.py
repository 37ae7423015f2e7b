"""The ties of a network's output: answers the model's rule gives the target on a tie.

A binary logit of exactly 0 is class 0, and of equal logits the first wins: a target can be
reached more cheaply on a region of ties (every ReLU the output weighs off, an output bias of
0) than at the margin beyond the decision boundary. :mod:`.answer` looks for such answers
(``_tie_row`` for the mixed-integer programs, ``_euclid_tie`` for the Euclidean search); here
the tests and repairs they share: whether a region of ties can be (:func:`ties_can_be`),
whether a point lies on a flat one (:func:`is_flat`), its pattern with the neurons on their faces
taken off (:func:`tie_pattern`), and the point moved off those faces (:func:`on_the_tie`,
:func:`strict_tie`).
"""

from __future__ import annotations

import math

import numpy as np

from .euclid import pattern_qp
from .program import output_rows, solve_pattern

__all__ = ["TIE_GAIN", "is_flat", "on_the_tie", "strict_tie", "tie_pattern", "ties_can_be"]

#: a tie's answer replaces the margin's only where it costs less by this fraction of it
#: (:func:`.answer._tie_row`, HiGHS's cutoff): a point of the margin's sloped boundary gains ~the
#: margin's width, mostly less; a region of ties (every ReLU off, a logit exactly 0) a finite step
TIE_GAIN = 1e-6


def on_the_tie(net, prog, x, changed, G, g, flat=None):
    """Return ``x``, or the closest point of its pattern that stays on the tie, or None.

    ``x`` (the tie program's point of the network) meets the tie's rows ``G h ≥ g`` in exact
    arithmetic, on the face where an off neuron's z is 0; its rounding can leave z = +1e-17,
    whose leak through the ReLU, times weights of 10³, moves the logit off the tie (soak_net,
    seed 32, example 571). Then the neurons within their rounding of 0 are taken as off, and
    the pattern's linear program is solved with every off neuron ε beyond its rounding
    (:func:`~fastcf._net.program.solve_pattern`, ``strict``): its point costs ~ε more. Where
    that finds nothing, again with the neurons within the rounding of x itself of 0 taken off
    (:func:`tie_pattern`'s ``by_input``). None where no point is on the tie, as fastcf's
    float64 copy computes it.

    ``flat``: the margin's rows ``(G, g)``; then the point is kept only where each row it
    meets short of the margin is flat in the pattern (its gradient along the features free to
    move is 0 to rounding): a region of ties, which no margin reaches, and not a point of a
    sloped boundary, a margin's width from the margin program's answer and refused by the
    model's rounding about half the time.
    """
    if not net.relu:
        return x if bool(net.meets(x[None], G, g)[0]) else None
    pattern, near = tie_pattern(net, x)
    y = _tie_point(net, prog, x, changed, G, g, flat, pattern, near)
    if y is None:
        # the neurons within the rounding of x itself of 0 taken off too: on weights of 1e3…1e4
        # an ulp of a feature moves a neuron's z by more than the rounding of its sums, and the
        # program's point of the face z = 0 (none in float64) left a neuron the tie needs off at
        # z = +7e-10, which leaked 6e-8 into the logits (soak_net, seed 95, example 27: class 2
        # by the model, then a "numerical failure" where the tie's 1.771 exists)
        wide, _ = tie_pattern(net, x, by_input=True)
        if any(np.any(a != b) for a, b in zip(wide, pattern, strict=True)):
            y = _tie_point(net, prog, x, changed, G, g, flat, wide, True)
    return y


def _tie_point(net, prog, x, changed, G, g, flat, pattern, near):
    """Return :func:`on_the_tie`'s point in ``pattern`` (``near``: solved off the faces)."""
    lo, hi = prog.lo, prog.hi
    if flat is not None and not is_flat(net, x, pattern, lo, hi, changed, flat):
        return None
    if not near and bool(net.meets(x[None], G, g)[0]):
        return x
    y = solve_pattern(net, pattern, prog.x0, lo, hi, prog.w, G, g, prog.metric, changed, True)
    return y if y is not None and bool(net.meets(y[None], G, g)[0]) else None


def is_flat(net, x, pattern, lo, hi, changed, flat):
    """Return whether each margin row ``flat`` that ``x`` meets short of the margin is flat there.

    Flat in ``x``'s activation ``pattern``: the row's gradient along the features free to move
    (``lo < hi``, and ``changed`` where given) is 0 to its rounding — a region of ties, which no
    margin reaches, not a point of a sloped boundary (:func:`on_the_tie`).
    """
    free = lo < hi if changed is None else (lo < hi) & changed
    pre, _ = net.affine(pattern)
    M = pre[-1][0] * pattern[-1][:, None] if pre else np.eye(x.shape[0])
    Gm, gm = flat
    short = ~(net.last_hidden(x[None])[0] @ Gm.T >= gm)
    slope = np.abs(Gm[short] @ M[:, free])
    return not np.any(slope > 9e3 * net.unit * (np.abs(Gm[short]) @ np.abs(M[:, free])))


def ties_can_be(net, t, margin):
    """Return the tie's rows and the margin's, where a region of ties can lie, else None.

    An output row flat at a value short of its margin, where every last-layer neuron it weighs
    is 0 (off), is there at −g: only where some −g lies in [0, margin) (an output bias of
    exactly 0; rare in a trained network). A flat region at another value needs the weights to
    cancel exactly: not looked for.
    """
    G, g = output_rows(net, t, margin, ties=True)
    flat = output_rows(net, t, margin)
    if not np.any((flat[1] > g) & (-g >= 0.0) & (-g < flat[1] - g)):
        return None
    return (G, g), flat


def tie_pattern(net, x, by_input=False):
    """Return ``(pattern, near)``: x's activation pattern, a neuron within its rounding of 0 off.

    ``near``: some neuron lies within its rounding of 0 (on its face): fastcf's float64 and the
    model's own sums (another order) can put it on either side, and a neuron the tie needs off
    can leak through its ReLU in the model. A tie's answer is then solved again with the off
    neurons beyond their rounding (``strict``). ``by_input``: the rounding also that of x itself
    through the pattern's affine map (``|A| |x| + |c|``, as ``strict`` takes it: the face
    z = 0 may hold no point of float64 x).
    """
    h, pattern, near = x, [], False
    A, c = None, None  # (by_input: the map x ↦ z of the layer, in the pattern so far)
    for W, b, z in zip(net.W[:-1], net.b[:-1], net.hidden(x[None]), strict=True):
        z = z[0]
        terms = np.abs(W) @ np.abs(h) + np.abs(b)
        if by_input:
            A, c = (W, b) if A is None else (W @ A, W @ c + b)
            terms = np.maximum(terms, np.abs(A) @ np.abs(x) + np.abs(c))
        eps = 9e3 * net.unit * terms
        on = z > eps
        near = near or bool(np.any(~on & (z > -eps)))
        pattern.append(on)
        h = np.maximum(z, 0.0)
        if by_input:
            A, c = A * on[:, None], c * on
    return pattern, near


def strict_tie(net, x, x0, lo, hi, w, pattern, G, g, radius):
    """Return ``(y, d)``: a Euclidean tie answer ``x`` solved again off its neurons' faces.

    ``x``'s ``pattern`` (:func:`tie_pattern`) solved with its off neurons beyond their
    rounding and its unchanged features held (``max_changes``), kept where fastcf's float64
    puts it on the tie's rows ``G h ≥ g``; ``(None, inf)`` otherwise.
    """
    keep = x == x0
    plo, phi = np.where(keep, x0, lo), np.where(keep, x0, hi)
    y, dy = pattern_qp(net, pattern, x0, plo, phi, w, G, g, radius, strict=True)
    if y is None or not bool(net.meets(y[None], G, g)[0]):
        return None, math.inf
    return y, dy
