"""The README's two set-up commands, .ci/run, and the public namespace of shared/API.md."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def readme_command(marker):
    text = (ROOT / "README.md").read_text()
    m = re.search(rf"<!-- fastcf:{marker} -->\s*```bash\n(.+?)\n```", text)
    assert m, f"README.md has no {marker} block"
    return m.group(1).strip()


def test_readme_commands_and_ci_agree():
    demo = readme_command("demo-command")
    test = readme_command("test-command")
    assert demo.startswith("pip install") and "python -m fastcf demo" in demo
    assert test.startswith("pip install") and "pytest" in test
    ci = (ROOT / ".ci" / "run").read_text()
    # .ci/run reads both commands from the README instead of repeating them
    assert "fastcf:test-command" in ci and "fastcf:demo-command" in ci


def test_public_names():
    import fastcf

    for name in [
        "LinearExplainer",
        "Counterfactual",
        "CounterfactualBatch",
        "CounterfactualPath",
        "check_gradient",
        "counterfactual",
    ]:
        assert hasattr(fastcf, name), name
    assert set(fastcf.__all__) >= {"LinearExplainer", "check_gradient", "counterfactual"}
    with pytest.raises(AttributeError):
        fastcf.does_not_exist  # noqa: B018


def test_import_does_not_load_cvxpy_or_sklearn():
    code = "import sys, fastcf; print('cvxpy' in sys.modules, 'sklearn' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]
