"""A cache helper's "vacuous" reason names deterministic inference as a possible cause only on a
server that runs with it (issue 44: radix-cache=off read "(deterministic inference forces this
on some attention backends)" when the flag itself had turned the cache off)."""

from __future__ import annotations

from types import SimpleNamespace

from kltui.helpers.cache_hit import _vacuous


def reason(info: dict) -> str | None:
    ctx = SimpleNamespace(server="http://127.0.0.1:1", server_info=info)
    p = _vacuous(ctx, SimpleNamespace(helper="prefill_cache_hit"))  # type: ignore[arg-type]
    return None if p is None else p.message


def test_the_vacuous_reason_names_only_causes_the_server_reports():
    assert reason({"disable_radix_cache": False}) is None
    plain = reason({"disable_radix_cache": True, "enable_deterministic_inference": False})
    assert plain == (
        "prefill_cache_hit is vacuous: the server runs with disable_radix_cache=true, so no "
        "cache hit can happen"
    )
    det = reason({"disable_radix_cache": True, "enable_deterministic_inference": True})
    assert det is not None and "or deterministic inference, which it runs with" in det
