"""asv benchmarks of fastcf.

They time compiled code: a kernel compiles before its first call (``FASTCF_TIERED=0``), never
runs as Python while it compiles (see ``fastcf._kernels._tier``). The cold-start benchmarks in
``bench_reliability.py`` set the variable themselves in the processes they start.
"""

import os

os.environ.setdefault("FASTCF_TIERED", "0")
