"""A cross-server pair's JSON entry: the words' entry (`words/cross_server.pair_json`) with the
typed reading it says, so a consumer (and a test) reads the kind and not the sentence: the
pair's `kind`, each `suspects` entry's kind and server, and each uncompared helper's `missing`
kinds per side (schema kltui/schemas, docs/JSON.md)."""

from __future__ import annotations

from typing import Any

from kltui.readings.cross_server import ServerPair
from kltui.words.cross_server import pair_json


def pair_entry(pair: ServerPair) -> dict[str, Any]:
    """The JSON result's `cross_server` entry of `pair`: its words and its kinds."""
    r = pair.reading
    return pair_json(pair) | {
        "kind": r.kind.value,
        "suspects": [
            {"helper": s.helper, "kind": s.kind.value, "server": s.server} for s in r.suspects
        ],
        "missing": {
            h: [{"kind": m.kind.value, "side": m.label} for m in ms]
            for h, ms in pair.uncompared.items()
        },
    }
