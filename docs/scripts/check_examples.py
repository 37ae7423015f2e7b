"""Run the Python examples of the documentation pages, so that they cannot rot.

Every fenced block marked ```python in ``docs/*.md`` and ``docs/*/*.md`` is executed; the blocks
of one page share a namespace, in page order. Blocks fenced as ```py are sketches (signatures,
placeholders) and are not run. matplotlib uses the Agg backend and files that examples save go
to a temporary directory.

Run from the repository root:  python docs/scripts/check_examples.py [page.md ...]
"""

import os
import re
import sys
import tempfile
import time
import traceback
from pathlib import Path

DOCS = Path(__file__).resolve().parents[1]
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


def main(argv):
    os.environ.setdefault("MPLBACKEND", "Agg")
    pages = [Path(p).resolve() for p in argv] or sorted([*DOCS.glob("*.md"), *DOCS.glob("*/*.md")])
    failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        cwd = os.getcwd()
        os.chdir(tmp)
        try:
            for page in pages:
                blocks = BLOCK.findall(page.read_text())
                if not blocks:
                    continue
                ns = {"__name__": "__docs__"}
                t = time.perf_counter()
                try:
                    for i, code in enumerate(blocks, start=1):
                        exec(compile(code, f"{page.name}[block {i}]", "exec"), ns)
                except Exception:
                    failed += 1
                    print(f"FAIL {page.relative_to(DOCS)}")
                    traceback.print_exc()
                    continue
                dt = time.perf_counter() - t
                print(f"ok   {page.relative_to(DOCS)}: {len(blocks)} block(s) in {dt:.1f} s")
        finally:
            os.chdir(cwd)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
