"""pytest's root configuration: the doctests of optional dependencies run only where they are."""

import importlib.util

# fastcf._net.pytorch's examples build PyTorch networks (PyTorch is an optional extra)
collect_ignore = [] if importlib.util.find_spec("torch") else ["fastcf/_net/pytorch.py"]
