"""Docstring coverage of kltui's public API, and docs/ARCHITECTURE.md naming every file and
folder of kltui/ (issue 20: docs as a habit)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3] / "kltui"

# The share of public functions, classes and methods that must carry a docstring. Raised as
# docstrings are added; never above what main has.
FLOOR = 0.99


def _public(name: str) -> bool:
    return not name.startswith("_")


def public_definitions(path: Path) -> list[tuple[str, bool]]:
    """Every public definition of one module as (qualified name, has a docstring)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: list[tuple[str, bool]] = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and _public(node.name):
            found.append((node.name, ast.get_docstring(node) is not None))
        elif isinstance(node, ast.ClassDef) and _public(node.name):
            found.append((node.name, ast.get_docstring(node) is not None))
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and _public(item.name):
                    found.append((f"{node.name}.{item.name}", ast.get_docstring(item) is not None))
    return found


def coverage() -> tuple[int, int, list[str]]:
    """(documented, public, names without a docstring) over kltui/ outside reference/."""
    documented = total = 0
    missing: list[str] = []
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT.parent)
        if rel.parts[1] == "reference":
            continue
        for name, has_doc in public_definitions(path):
            total += 1
            if has_doc:
                documented += 1
            else:
                missing.append(f"{rel.as_posix()}::{name}")
    return documented, total, missing


def test_checker_sees_functions_classes_and_methods_of_public_classes(tmp_path: Path) -> None:
    src = tmp_path / "m.py"
    src.write_text(
        "def f():\n    '''F.'''\n"
        "def g(): pass\n"
        "def _h(): pass\n"
        "class C:\n    '''C.'''\n    def m(self): pass\n    def _p(self): pass\n"
        "    def __init__(self): pass\n"
        "class _D:\n    def n(self): pass\n"
        "async def a(): pass\n"
    )
    assert public_definitions(src) == [
        ("f", True),
        ("g", False),
        ("C", True),
        ("C.m", False),
        ("a", False),
    ]


def test_public_docstring_coverage_stays_above_the_floor() -> None:
    documented, total, missing = coverage()
    share = documented / total
    print(f"docstrings: {documented}/{total} public definitions ({share:.1%})")
    shown = "\n".join(missing[:40])
    assert share >= FLOOR, f"docstring coverage {share:.1%} is below {FLOOR:.0%}; missing:\n{shown}"


ARCHITECTURE = ROOT.parent / "docs" / "ARCHITECTURE.md"
# folders named as a whole: their files are data, not code (the reference model's checkpoint)
DATA_FOLDERS = (ROOT / "reference" / "checkpoint",)


def unnamed_in_architecture() -> list[str]:
    """kltui/ files and folders that docs/ARCHITECTURE.md does not name (`kltui/x/y.py`, `kltui/x/`)."""
    doc = ARCHITECTURE.read_text(encoding="utf-8")
    missing = []
    for path in sorted(ROOT.rglob("*")):
        if "__pycache__" in path.parts or path.suffix == ".pyc":
            continue
        if path.is_file() and any(folder in path.parents for folder in DATA_FOLDERS):
            continue
        name = path.relative_to(ROOT.parent).as_posix() + ("/" if path.is_dir() else "")
        if f"`{name}`" not in doc:
            missing.append(name)
    return missing


def test_architecture_names_every_file_and_folder() -> None:
    missing = unnamed_in_architecture()
    assert not missing, "docs/ARCHITECTURE.md (File by file) does not name: " + ", ".join(missing)
