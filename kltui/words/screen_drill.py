"""The drill-down's heading and detail line in words (`tui/screens/drilldown.py`,
`tui/screens/noise_band.py` style the parts): the row under the cursor in full, where a
sample's top-k and text came from and how far that request agreed with the gate, where
fetching them stands, the positions whose token id the server reported otherwise, and
cross_engine's own-noise band."""

from __future__ import annotations

from enum import StrEnum

from kltui import fmt


def row_in_full(position: int, token_id: int, *, cut: bool) -> tuple[str, str, str]:
    """The detail line's start, as parts: the position, "in full" when the table's top-k
    columns cut entries (`cut`), the token id (the token's text and top-k follow)."""
    return f"pos {position}", " in full (↑/↓ another row)" if cut else "", f" · token {token_id}"


def row_in_full_line(position: int, token_id: int, *, cut: bool) -> str:
    """`row_in_full` as one string."""
    return "".join(row_in_full(position, token_id, cut=cut))


def extras_note(spans: list[tuple[int, int]], same: int, total: int) -> tuple[str, str, str]:
    """Where the top-k and text come from, as parts: the label, the source, then the positions
    (first–last of each request) and at how many of `total` positions its logprob equals the
    gate's lp A bit for bit (`same`)."""
    where = ", ".join(f"{first}–{last}" for first, last in spans)
    return (
        "top-k and token text: ",
        "separate request after the gate",
        f", positions {where}; its logprob equals lp A bit for bit at {same}/{total}",
    )


def extras_note_line(spans: list[tuple[int, int]], same: int, total: int) -> str:
    """`extras_note` as one string."""
    return "".join(extras_note(spans, same, total))


class FetchNote(StrEnum):
    """Where fetching an opened sample's top-k and text stands."""

    REPLAY = "replay"  # a replay asks its recorded server only on x
    READ_ONLY = "read_only"  # a read-only view fetches nothing
    RUNNING = "running"  # never during the gate
    TOP_K_OFF = "top_k_off"  # --top-k 0
    FETCHING = "fetching"  # one request on its way


def fetch_note(kind: FetchNote, where: str = "") -> str:
    """The heading's line on fetching top-k and text; `where` (FETCHING): the server asked."""
    return {
        FetchNote.REPLAY: "replay: top-k and token text only as recorded; x asks the recorded "
        "server (if it still answers with the same model and prompts)",
        FetchNote.READ_ONLY: "read-only view: top-k and token text are not fetched from here",
        FetchNote.RUNNING: "top-k and token text are fetched once the run has finished (never "
        "during the gate): open this sample again then",
        FetchNote.TOP_K_OFF: "--top-k 0: no top-k or token text is fetched",
        FetchNote.FETCHING: f"fetching top-k and token text: one request to {where} …",
    }[kind]


def id_mismatch_line(positions: int) -> str:
    """At how many positions the server reported another token id than the one scored."""
    return (
        f"at {positions} position(s) the server reported another token id than the one scored "
        "(scored anyway, as SGLang's helpers do)"
    )


def band_note(max_a: float, max_b: float, beyond: int, positions: int) -> tuple[str, ...]:
    """cross_engine's own-noise line, as parts (label, then words and figures in turn): each
    engine's largest move from its own first answer, and at how many of `positions` the engines
    are further apart than both own moves together (`beyond`)."""
    return (
        "own noise",
        " (scored again one at a time): max |Δ| SGLang ",
        fmt.sci(max_a),
        " · vLLM ",
        fmt.sci(max_b),
        f" · |A−B| beyond both at {beyond} of {positions} positions",
    )


def band_note_line(max_a: float, max_b: float, beyond: int, positions: int) -> str:
    """`band_note` as one string."""
    return "".join(band_note(max_a, max_b, beyond, positions))
