"""Alignment probes. Each is an async generator of events (see kltui.session.events)."""

from kltui.helpers.cache_hit import decode_cache_hit, prefill_cache_hit
from kltui.helpers.context import HelperContext
from kltui.helpers.match import match

HELPERS = {
    "match": match,
    "prefill_cache_hit": prefill_cache_hit,
    "decode_cache_hit": decode_cache_hit,
}
SGLANG_HELPERS = tuple(HELPERS)

__all__ = ["HELPERS", "SGLANG_HELPERS", "HelperContext"]
