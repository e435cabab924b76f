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

    # the keys paragraph moved with "Using it" to docs/USING.md (issue 46); the README links it
    assert "](docs/USING.md#the-dashboard)" in (ROOT / "README.md").read_text()
    text = " ".join((ROOT / "docs" / "USING.md").read_text().split())
    keys = text[text.index("Keys (") : text.index("`q` quit.") + len("`q` quit.")]
    bindings = [*KltuiApp.BINDINGS, *Heatmap.BINDINGS, *SampleTable.BINDINGS]
    named = [(b.key_display or b.key, b) for b in bindings]
    missing = [d for d, b in named if (len(d) == 1 or d == "enter") and f"`{d}`" not in keys]
    assert not missing, f"docs/USING.md's keys paragraph does not list {missing}"
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


def _slug(heading: str) -> str:
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_relative_links_in_readme_and_docs_resolve():
    # issue 46: the README's sections moved into docs/; a link moved with them must still point
    # at a file (and a heading, for `#anchor`) from where it now is
    def headings(path: Path) -> set[str]:
        text = re.sub(r"```.*?```", "", path.read_text(), flags=re.S)
        return {_slug(h) for h in re.findall(r"^#+ (.*)$", text, re.M)}

    broken = []
    for doc in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        text = re.sub(r"```.*?```", "", doc.read_text(), flags=re.S)
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+:", target):
                continue
            path, _, anchor = target.partition("#")
            dest = (doc.parent / path) if path else doc
            if not dest.exists() or (
                anchor and dest.suffix == ".md" and anchor not in headings(dest)
            ):
                broken.append(f"{doc.relative_to(ROOT)}: {target}")
    assert not broken, broken


def test_the_readme_counts_no_tests_that_go_stale():
    # issue 59: "~1460 tests" and "2 skipped" went stale as tests were added; pytest counts them
    text = (ROOT / "README.md").read_text()
    assert not re.search(r"~\s*\d[\d,]* tests", text)
    assert "pytest's last line counts them" in text


def test_check_imports_only_what_its_run_needs():
    # issue 59: a check's start spent ~0.5 s importing; what a plain run against one SGLang
    # server never uses loads only with the option that needs it (a config file: YAML; a vLLM
    # or HF baseline: their clients), so a CI gate or a monitor probe does not pay for it
    code = (
        "import sys, io, contextlib, socket\n"
        "from kltui.cli import main\n"
        "with socket.socket() as s:\n"
        "    s.bind(('127.0.0.1', 0)); port = s.getsockname()[1]\n"
        "with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):\n"
        "    code = main(['check', '--server', f'http://127.0.0.1:{port}'])\n"
        "lazy = ('torch', 'textual', 'yaml', 'kltui.engines.hf', 'kltui.engines.vllm',\n"
        "        'kltui.run.hf_judge', 'kltui.tui')\n"
        "print(code, ','.join(m for m in lazy if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["3"], out.stdout  # the server is down: exit 3, nothing lazy
