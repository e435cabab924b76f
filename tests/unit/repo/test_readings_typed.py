"""Readings decide, words say (issue 60): no function in `kltui/readings/` is annotated to return
text (`str`, `str | None`, `Optional[str]`); a reading returns a kind and its figures, and
`kltui/words/` renders them. The import-linter contract keeps readings from importing words;
this test keeps them from writing words of their own.

`list[str]` is allowed: the readings that return one return identifiers (helper names, server
URLs), data a kind and its figures are made of, not sentences.
"""

from __future__ import annotations

import ast
from pathlib import Path

READINGS = Path(__file__).resolve().parents[3] / "kltui" / "readings"


def _is_str(node: ast.expr | None) -> bool:
    match node:
        case ast.Name(id="str") | ast.Constant(value="str"):
            return True
        case ast.BinOp(op=ast.BitOr(), left=a, right=b):
            sides = [a, b]
            nones = [s for s in sides if isinstance(s, ast.Constant) and s.value is None]
            return len(nones) == 1 and _is_str(next(s for s in sides if s not in nones))
        case ast.Subscript(value=ast.Name(id="Optional"), slice=inner):
            return _is_str(inner)
        case ast.Constant(value=str() as text) if text != "str":
            return _is_str(ast.parse(text, mode="eval").body)  # a quoted annotation
    return False


def text_returning() -> dict[tuple[str, str], int]:
    """Every function of kltui/readings annotated to return str or str | None, with its line."""
    out = {}
    for path in sorted(READINGS.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and _is_str(node.returns):
                out[(path.stem, node.name)] = node.lineno
    return out


def test_no_reading_returns_text():
    found = [f"kltui/readings/{m}.py:{line} {f}" for (m, f), line in text_returning().items()]
    assert not found, "readings return kinds and figures, words/ says them:\n" + "\n".join(found)


def test_the_check_sees_each_spelling_of_text():
    def returns(src: str) -> bool:
        fn = ast.parse(src).body[0]
        assert isinstance(fn, ast.FunctionDef)
        return _is_str(fn.returns)

    for src in (
        "def f() -> str: ...",
        "def f() -> str | None: ...",
        "def f() -> None | str: ...",
        "def f() -> Optional[str]: ...",
        "def f() -> 'str | None': ...",
    ):
        assert returns(src), src
    for src in (
        "def f() -> list[str]: ...",
        "def f() -> Kind: ...",
        "def f() -> int | None: ...",
        "def f(): ...",
    ):
        assert not returns(src), src
