"""Tests on kinds (issue 60): outside `tests/unit/words`, a test asserts a finding's kind and
figures, or that a words function's rendering is shown, not a sentence of its own. Each kind's
text is pinned once, by a golden test in `tests/unit/words`.

Counted here: asserts whose condition holds a string literal of 30+ characters with a space in
it (a sentence). Not counted: a failure message after `assert cond, "..."` (it is not asserted),
identifiers (no space), and code between two literals, which the issue's grep
(`assert .*["'][^"']{30,}["']`, per line) also reads as prose. What stays under the budget: error
messages that name a file, flag or URL, README examples, text with no reading behind it. The
budget only goes down: a new sentence to pin goes to a words golden test.
"""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parents[2]
WORDS = TESTS / "unit" / "words"
BUDGET = 109


def _is_sentence(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and len(node.value) >= 30
        and " " in node.value.strip()
    )


def prose_asserts(source: str) -> list[int]:
    """The lines of the asserts in `source` whose condition holds a sentence."""
    return [
        node.lineno
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Assert) and any(_is_sentence(n) for n in ast.walk(node.test))
    ]


def test_prose_asserts_stay_under_the_budget():
    found = [
        f"{path.relative_to(TESTS.parent)}:{line}"
        for path in sorted(TESTS.rglob("*.py"))
        if WORDS not in path.parents and path != Path(__file__).resolve()  # its own examples
        for line in prose_asserts(path.read_text())
    ]
    assert len(found) <= BUDGET, (
        f"{len(found)} asserts on a sentence outside tests/unit/words (budget {BUDGET}): assert "
        "the kind and figures, and pin the words once in a golden test\n" + "\n".join(found)
    )


def test_the_count_reads_conditions_not_messages():
    sentence = "the server restarted during the run"
    assert prose_asserts(f"assert x == {sentence!r}\n") == [1]
    assert prose_asserts(f"assert {sentence!r} in text\n") == [1]
    assert prose_asserts(f"assert x, {sentence!r}\n") == []  # a failure message
    assert prose_asserts("assert m == 'kltui_last_good_probe_timestamp_seconds'\n") == []
    assert prose_asserts("assert f(a, 'x', b='y') == 1  # code between two literals\n") == []
