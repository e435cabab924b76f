"""The drill-down's heading and detail line in words (`words/screen_drill.py`): the row in
full (cut and not), the separate request's note, each fetch note, the token-id line and the
own-noise band; the TUI tests assert these functions' output is what the drill-down shows."""

from __future__ import annotations

from kltui.words.screen_drill import (
    FetchNote,
    band_note,
    band_note_line,
    extras_note,
    extras_note_line,
    fetch_note,
    id_mismatch_line,
    row_in_full,
    row_in_full_line,
)


def test_the_row_in_full():
    assert row_in_full(3, 517, cut=True) == ("pos 3", " in full (↑/↓ another row)", " · token 517")
    assert row_in_full_line(3, 517, cut=True) == "pos 3 in full (↑/↓ another row) · token 517"
    assert row_in_full_line(12, 9, cut=False) == "pos 12 · token 9"


def test_the_separate_request():
    assert extras_note([(4, 9)], 5, 6) == (
        "top-k and token text: ",
        "separate request after the gate",
        ", positions 4–9; its logprob equals lp A bit for bit at 5/6",
    )
    assert extras_note_line([(0, 15), (30, 33)], 20, 20) == (
        "top-k and token text: separate request after the gate, positions 0–15, 30–33; its "
        "logprob equals lp A bit for bit at 20/20"
    )


FETCH = {
    FetchNote.REPLAY: "replay: top-k and token text only as recorded; x asks the recorded server "
    "(if it still answers with the same model and prompts)",
    FetchNote.READ_ONLY: "read-only view: top-k and token text are not fetched from here",
    FetchNote.RUNNING: "top-k and token text are fetched once the run has finished (never during "
    "the gate): open this sample again then",
    FetchNote.TOP_K_OFF: "--top-k 0: no top-k or token text is fetched",
    FetchNote.FETCHING: "fetching top-k and token text: one request to http://h:30000 …",
}


def test_every_fetch_note():
    assert set(FETCH) == set(FetchNote)
    for kind, words in FETCH.items():
        assert fetch_note(kind, "http://h:30000") == words, kind


def test_the_token_id_line():
    assert id_mismatch_line(1) == (
        "at 1 position(s) the server reported another token id than the one scored (scored "
        "anyway, as SGLang's helpers do)"
    )


def test_the_own_noise_band():
    assert band_note(1e-4, 0.0, 5, 8) == (
        "own noise",
        " (scored again one at a time): max |Δ| SGLang ",
        "1.000e-04",
        " · vLLM ",
        "0",
        " · |A−B| beyond both at 5 of 8 positions",
    )
    assert band_note_line(2.5e-3, 1.25e-5, 0, 16) == (
        "own noise (scored again one at a time): max |Δ| SGLang 2.500e-03 · vLLM 1.250e-05 · "
        "|A−B| beyond both at 0 of 16 positions"
    )
