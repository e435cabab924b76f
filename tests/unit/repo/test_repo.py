"""The README's two opening commands are the contract with newcomers and with CI."""

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text()
    block = re.search(r"```bash\n(.*?)```", text, re.S).group(1)
    return [ln for ln in block.splitlines() if ln.strip() and not ln.startswith("#")]


def test_readme_opens_with_demo_and_test_commands():
    demo, tests = readme_commands()[:2]
    assert demo.endswith("kltui demo")
    assert "pytest" in tests


def test_ci_runs_exactly_the_readme_test_command():
    test_cmd = readme_commands()[1].split("&&")[-1].strip()
    ci_lines = [ln.strip() for ln in (ROOT / ".ci" / "run").read_text().splitlines()]
    assert test_cmd in ci_lines


def test_help_does_not_import_torch_or_textual():
    code = (
        "import sys, io, contextlib\n"
        "from kltui.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    try:\n        main(['--help'])\n    except SystemExit:\n        pass\n"
        "bad = [m for m in ('torch', 'textual', 'httpx') if m in sys.modules]\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_readme_lists_every_dashboard_key_and_where_to_find_them():
    from kltui.tui.app import KltuiApp
    from kltui.tui.widgets.heatmap import Heatmap
    from kltui.tui.widgets.samples import SampleTable

    text = " ".join((ROOT / "README.md").read_text().split())
    keys = text[text.index("Keys (") : text.index("`q` quit.") + len("`q` quit.")]
    bindings = [*KltuiApp.BINDINGS, *Heatmap.BINDINGS, *SampleTable.BINDINGS]
    named = [(b.key_display or b.key, b) for b in bindings]
    missing = [d for d, b in named if (len(d) == 1 or d == "enter") and f"`{d}`" not in keys]
    assert not missing, f"README's keys paragraph does not list {missing}"
    assert "`e` problems" in keys
    if any(not b.show for b in bindings):  # then the footer cannot be where they all are
        assert "all shown in the footer" not in keys and "`?` lists them all" in keys


def test_no_module_of_kltui_is_over_500_lines():
    # one concept a file (issue 42): a module that grows past this is split by concept
    long = {
        str(p.relative_to(ROOT)): n
        for p in (ROOT / "kltui").rglob("*.py")
        if (n := len(p.read_text().splitlines())) > 500
    }
    assert not long, long
