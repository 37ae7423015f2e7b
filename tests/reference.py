"""Slow, obviously-correct references for every fast path (NumPy / SciPy / cvxpy / brute force).

Each section belongs to one model family. Keep the references independent of fastcf's own code:
they may use fastcf only to read a model's arrays, never its solvers.
"""

import numpy as np

# =====================================================================================
# Linear models: logistic and softmax (paper 000)
# =====================================================================================

# (end of linear section)


# =====================================================================================
# LVQ models (paper 001)
# =====================================================================================

# (end of LVQ section)


# =====================================================================================
# SVM enumeration (paper 003)
# =====================================================================================

# (end of SVM section)
