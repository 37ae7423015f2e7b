"""Programs built in stages against a deadline: the finished ones cached, a stopped one resumed.

A tree program's one-time construction (:class:`~fastcf._trees.structure.Structure`) runs in
stages, and a query's ``time_limit`` may stop it between two (:meth:`Structure.advance`).
Every place that builds such programs keeps them in a :class:`Builds`: the explainer's own
program (:func:`fastcf._trees.answer.program`), a NaN pattern's
(:class:`~fastcf._trees.missing.Patterns`) and a tabular category order's
(:class:`~fastcf._tabular.treeprog.TreeProgram`). A finished program is cached (the most
recent ``size``); a stopped one is kept apart and the next query of its key goes on from
there; a half-built program is never handed out. The caller holds its own lock.
"""

from __future__ import annotations

import math
from collections import OrderedDict

__all__ = ["Builds"]


class Builds:
    """The programs of a set of keys, built in stages (see the module docstring).

    Parameters
    ----------
    size : int
        How many finished programs are kept (the most recently used), and how many stopped ones.

    Examples
    --------
    >>> class Two:  # a construction of two stages, one per call
    ...     def __init__(self, deadline):
    ...         self.stages = 1
    ...     built = property(lambda self: self.stages == 2)
    ...     def advance(self, deadline=math.inf):
    ...         self.stages = 2
    ...         return self.built
    >>> b = Builds(4)
    >>> b.get("k", Two) is None  # stopped after its first stage
    True
    >>> b.part("k").stages
    1
    >>> b.get("k", Two).stages, b.part("k")  # resumed, finished, cached
    (2, None)
    """

    __slots__ = ("size", "done", "parts")

    def __init__(self, size):
        self.size = int(size)
        self.done = OrderedDict()  # key -> a finished program
        self.parts = OrderedDict()  # key -> a construction a deadline stopped

    def get(self, key, make, deadline=math.inf):
        """Return the finished program of ``key``, or None: ``deadline`` stopped its construction.

        ``make(deadline)`` starts a construction: an object whose ``built`` says whether it is
        finished (an object without ``built`` is) and whose ``advance(deadline)`` runs its next
        stages.
        """
        hit = self.done.get(key)
        if hit is not None:
            self.done.move_to_end(key)
            return hit
        hit = self.parts.pop(key, None)
        if hit is None:
            hit = make(deadline)
        else:
            hit.advance(deadline)
        if not getattr(hit, "built", True):
            self.parts[key] = hit
            _trim(self.parts, self.size)
            return None
        self.done[key] = hit
        _trim(self.done, self.size)
        return hit

    def part(self, key):
        """Return the construction a deadline stopped for ``key`` (None: none)."""
        return self.parts.get(key)


def _trim(d, size):
    while len(d) > size:
        d.popitem(last=False)
