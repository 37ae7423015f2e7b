"""PyTorch networks: an ``nn.Sequential`` of ``Linear`` and ``ReLU`` layers read as a :class:`Net`.

PyTorch is an optional dependency: it is imported here only when a model whose class comes
from it is given (:func:`is_torch`), never by ``import fastcf``.

The layers are read into float64 (:func:`read_torch`); the model's own forward pass, on the CPU,
in its own dtype (float32, usually) and under ``torch.no_grad()``, is the judge of every answer
(:class:`TorchJudge`, the ``predict``/``predict_proba`` of the stage's checks). The user's model is
never changed: no ``eval()``, no ``train()``, no change of dtype, device or thread count.

The classes: a model with one output logit is binary, class 1 iff its logit is > 0 (class 0 on
a tie); with K ≥ 2 outputs, the first largest logit wins (``argmax``, which gives ties to the
first index, as NumPy's). The labels are 0 … K−1 (0, 1 for one logit) unless ``classes=``
names them.

Examples
--------
>>> import numpy as np, torch
>>> torch.manual_seed(0)  # doctest: +ELLIPSIS
<torch._C.Generator object at ...>
>>> model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 1))
>>> net, judge = read_torch(model)
>>> [W.shape for W in net.W], net.binary, judge.classes_.tolist()
([(4, 3), (1, 4)], True, [0, 1])
>>> X = np.random.default_rng(0).normal(size=(5, 3))
>>> bool(np.allclose(net.logits(X), judge.logits(X), atol=1e-5))
True
"""

from __future__ import annotations

import numpy as np

from .model import Net

__all__ = ["is_torch", "read_torch", "TorchJudge"]


def is_torch(model):
    """Return whether ``model`` is a PyTorch module (without importing PyTorch)."""
    return any(c.__module__.split(".")[0] == "torch" for c in type(model).__mro__) and hasattr(
        model, "parameters"
    )


def _layers(module, nn):
    """Yield the layers of a (possibly nested) ``nn.Sequential``."""
    for layer in module:
        if isinstance(layer, nn.Sequential):
            yield from _layers(layer, nn)
        else:
            yield layer


def read_torch(model, classes=None):
    """Return ``(net, judge)``: the float64 :class:`Net` of ``model`` and its :class:`TorchJudge`.

    Parameters
    ----------
    model : torch.nn.Sequential
        ``Linear`` layers with ``ReLU`` between them, ending in a ``Linear`` layer of logits
        (``Identity``, ``Flatten`` of rows, nested ``Sequential`` and ``Dropout`` in eval mode
        are read as what they are on a row: nothing). Two ``Linear`` layers in a row are
        composed into one (in float64; the judge keeps the model's own arithmetic).
    classes : array_like, optional
        The labels of the outputs (K of them; two for one logit): 0 … K−1 by default.

    Raises
    ------
    TypeError
        ``model`` is not an ``nn.Sequential``, or holds a layer other than those above (named).
    ValueError
        It has no ``Linear`` layer, does not end in one (no logits), begins with ``ReLU``, is in
        training mode with ``Dropout``, has parameters off the CPU, non-finite or of mixed
        dtypes; ``classes`` has the wrong length or repeats a label.
    """
    import torch
    from torch import nn

    if not isinstance(model, nn.Sequential):
        raise TypeError(
            f"NetExplainer takes a PyTorch nn.Sequential of Linear and ReLU layers ending in "
            f"logits; got {type(model).__name__}, whose forward fastcf cannot read (put its "
            "layers in an nn.Sequential)"
        )
    params = list(model.parameters())
    if not params:
        raise ValueError("the nn.Sequential has no Linear layer: no network to explain")
    dtypes = {p.dtype for p in params}
    devices = {p.device.type for p in params}
    if len(dtypes) > 1 or not next(iter(dtypes)).is_floating_point:
        raise ValueError(f"the network's parameters must share one floating dtype; got {dtypes}")
    if devices != {"cpu"}:
        raise ValueError(
            f"the network's parameters are on {sorted(devices)}: fastcf judges answers with the "
            "model's forward pass on the CPU; pass a CPU copy (copy.deepcopy(model).cpu())"
        )
    W, b = [], []
    last = None  # "linear" or "relu": the last layer read
    for i, layer in enumerate(_layers(model, nn)):
        if isinstance(layer, nn.Linear):
            with torch.no_grad():
                Wl = layer.weight.detach().to(torch.float64).numpy().copy()
                bl = (
                    np.zeros(Wl.shape[0])
                    if layer.bias is None
                    else layer.bias.detach().to(torch.float64).numpy().copy()
                )
            if last == "linear":  # two affine maps in a row: one
                W[-1], b[-1] = Wl @ W[-1], Wl @ b[-1] + bl
            else:
                W.append(Wl)
                b.append(bl)
            last = "linear"
        elif isinstance(layer, nn.ReLU):
            if last is None:
                raise ValueError(
                    "the nn.Sequential begins with ReLU: fastcf takes inputs through a Linear "
                    "layer first (clip the inputs with bounds= instead)"
                )
            last = "relu"
        elif isinstance(layer, nn.Dropout):
            if model.training:
                raise ValueError(
                    "the network is in training mode and holds Dropout, so its forward pass is "
                    "random: call model.eval() before explaining it"
                )
        elif isinstance(layer, nn.Flatten) and layer.start_dim in (1, -1):
            pass  # a row of features stays a row
        elif not isinstance(layer, nn.Identity):
            raise TypeError(
                f"layer {i} of the nn.Sequential is {type(layer).__name__}: NetExplainer takes "
                "Linear and ReLU layers (Identity, Dropout in eval mode) ending in a Linear layer "
                "of logits; other activations are not piecewise linear, or not yet answered"
            )
    if last != "linear":
        raise ValueError(
            "the nn.Sequential ends in ReLU: its last layer must be Linear (the logits; "
            "fastcf applies the sigmoid or softmax itself for proba=)"
        )
    if not all(np.isfinite(w).all() for w in W) or not all(np.isfinite(v).all() for v in b):
        raise ValueError("the network's weights are not finite")
    K = W[-1].shape[0]
    n = 2 if K == 1 else K
    classes = np.arange(n) if classes is None else np.asarray(classes)
    if classes.ndim != 1 or classes.shape[0] != n or np.unique(classes).shape[0] != n:
        raise ValueError(
            f"classes must be {n} distinct labels (one per {'class' if K == 1 else 'logit'} of "
            f"a model with {K} output{'s' if K > 1 else ''}); got {classes.tolist()!r}"
        )
    dtype = next(iter(dtypes))
    net = Net(tuple(W), tuple(b), True, K == 1, float(torch.finfo(dtype).eps) / 2)
    return net, TorchJudge(model, classes, dtype, K == 1)


class TorchJudge:
    """A PyTorch model's own verdicts, as a scikit-learn classifier gives them.

    ``logits``, ``predict`` and ``predict_proba`` run the model's forward pass on the rows cast
    to its dtype, under ``torch.no_grad()``; the decisions are taken on the model's own outputs
    (one logit: class 1 iff > 0; else the first largest), the probabilities are PyTorch's
    ``sigmoid``/``softmax`` of them in the same dtype.
    """

    def __init__(self, model, classes, dtype, binary):
        self.model, self.classes_, self.dtype, self.binary = model, classes, dtype, binary

    def _outputs(self, X):
        import torch

        X = np.ascontiguousarray(X, dtype=np.float64)
        with torch.no_grad():
            return self.model(torch.from_numpy(X).to(self.dtype))

    def logits(self, X):
        """Return the model's logits at the rows of ``X`` (in its dtype)."""
        return self._outputs(X).numpy()

    def predict(self, X):
        """Return the model's class of each row of ``X``."""
        z = self.logits(X)
        k = (z[:, 0] > 0).astype(np.intp) if self.binary else np.argmax(z, axis=1)
        return self.classes_[k]

    def predict_proba(self, X):
        """Return the model's class probabilities at the rows of ``X`` (float64 of its own)."""
        import torch

        z = self._outputs(X)
        if self.binary:
            z = z[:, :1]
            return torch.sigmoid(torch.cat([-z, z], dim=1)).numpy().astype(np.float64)
        return torch.softmax(z, dim=1).numpy().astype(np.float64)
