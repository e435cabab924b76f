"""multiturn's object in the JSON report (`helpers.<name>.multiturn`, docs/JSON.md): the branch
tree's turns, the divergent and short ones, the per-turn averages and the remainder test, as
readings/multiturn.py reads them (null for every other helper)."""

from __future__ import annotations

from kltui.engines.geometry import StateGeometry
from kltui.readings.multiturn import MultiturnReading, TurnRow, read_multiturn
from kltui.session.store import HelperState, SessionStore


def reading_of(store: SessionStore, st: HelperState) -> MultiturnReading | None:
    """The multiturn reading of one helper state, with its server's page size and, on a Mamba
    server, its track interval (the remainders the reading compares)."""
    identity = store.identity(st.server)
    grid = StateGeometry.of(identity.get("geometry")).track_grid()
    return read_multiturn(st, page_size=identity.page_size, track_interval=grid)


def _turn(r: TurnRow) -> dict:
    e = r.expected
    return {
        "sample": r.sample,
        "group": r.place.group,
        "branch": r.place.branch,
        "turn": r.place.turn,
        "history": r.place.history,
        "cached_tokens": r.place.cached_tokens,
        "rule": str(e.rule) if e else None,
        "expected": list(e.allowed) if e else None,
        "expected_low": e.low if e else None,
        "expected_high": e.high if e else None,
        "hit": str(r.hit),
        "hit_ok": r.hit == "as_asserted",
        "n_tokens": r.n_tokens,
        "mean_k3": r.mean_k3,
        "max_k3": r.max_k3,
        "first_divergence": r.first_divergence,
        "divergent": r.divergent,
    }


def multiturn_entry(reading: MultiturnReading | None) -> dict | None:
    """The JSON object of a multiturn reading (None: not a multiturn helper)."""
    if reading is None:
        return None
    rem = reading.remainders
    turns = [_turn(r) for r in reading.rows]
    return {
        "gate": reading.gate,
        "turns": turns,
        "divergent": [t for t in turns if t["divergent"]],
        "short_hits": [t for t in turns if t["hit"] in ("short", "off")],
        "turn_avg_kl_div": list(reading.turn_avg),
        "last_turn_avg_kl_div": reading.last_turn_avg,
        "remainders": {
            "kind": str(rem.kind),
            "moduli": list(rem.moduli),
            "found": [
                {
                    "quantity": str(f.quantity),
                    "modulus": f.modulus,
                    "divergent": list(f.divergent),
                    "clean": list(f.clean),
                }
                for f in rem.found
            ],
        },
    }
