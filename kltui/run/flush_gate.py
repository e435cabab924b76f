"""Whether to ask before the first flush of a server.

Every helper flushes the radix cache (`/flush_cache`), which empties it for every client of that
server, not only for kltui. A server on a loopback address with no request running is almost
certainly the user's own; any other server may be shared, so the TUI asks first. Why it asks
is a typed reason (`AskReason`: a kind and the load behind it); `words/flush.py` says it.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from enum import StrEnum
from urllib.parse import urlsplit

from kltui.engines.errors import EngineError

LOAD_TIMEOUT_S = 10.0
# SGLang 0.5.23 answers /v1/loads (`loads[].num_running_reqs`, `num_waiting_reqs`); earlier
# releases answered /get_load, a list per DP rank whose `num_reqs` counts running + waiting.
LOAD_ROUTES = (
    ("/v1/loads?include=core", ("num_running_reqs", "num_waiting_reqs")),
    ("/get_load", ("num_reqs",)),
)

LoopbackCheck = Callable[[str], Awaitable[bool]]


def _is_loopback_ip(text: str) -> bool:
    ip = ipaddress.ip_address(text.split("%", 1)[0])  # fe80::1%eth0: the zone is not the address
    mapped = getattr(ip, "ipv4_mapped", None)
    return (mapped or ip).is_loopback


async def is_loopback(url: str) -> bool:
    """True when every address the server's host resolves to is a loopback one (127.0.0.0/8,
    ::1). A name that does not resolve counts as not loopback: kltui asks rather than assume."""
    host = urlsplit(url).hostname or ""
    try:
        return _is_loopback_ip(host)
    except ValueError:
        pass  # a name, not an address literal
    try:
        infos = await asyncio.get_running_loop().getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        return False
    addrs = {str(info[4][0]) for info in infos}
    try:
        return bool(addrs) and all(_is_loopback_ip(a) for a in addrs)
    except ValueError:
        return False


@dataclass(frozen=True)
class Load:
    """The requests a server is busy with, and the route that said so."""

    requests: int  # running + waiting, over every DP rank
    route: str


async def server_load(client) -> Load | None:
    """Requests the server is running or queueing now, or None when it does not say."""
    for route, keys in LOAD_ROUTES:
        try:
            data = await client.request_json(
                "GET", route, timeout=min(LOAD_TIMEOUT_S, client.timeout)
            )
        except EngineError as e:
            if e.kind in ("http-404", "http-405"):
                continue  # not this release's route
            return None  # no answer (or refused): unknown, and the next route would wait too
        loads = data.get("loads") if isinstance(data, dict) else data
        if not isinstance(loads, list):
            continue
        total = 0
        for rank in loads:
            if not isinstance(rank, dict):
                continue
            for k in keys:
                v = rank.get(k)
                if isinstance(v, int) and not isinstance(v, bool) and v > 0:
                    total += v
        return Load(total, route.split("?", 1)[0])
    return None


class AskKind(StrEnum):
    """Why a flush needs the user's yes."""

    SHARED_HOST = "shared-host"  # not on a loopback address: other clients may use it
    BUSY = "busy"  # it reports requests running or waiting: another client uses it now


@dataclass(frozen=True)
class AskReason:
    """One reason to ask, with the load it rests on (BUSY only: running + waiting, and the
    route that said so)."""

    kind: AskKind
    requests: int = 0
    route: str = ""


async def reasons_to_ask(client, loopback: LoopbackCheck = is_loopback) -> tuple[AskReason, ...]:
    """Why flushing `client`'s server needs the user's yes; () when it does not."""
    reasons = []
    if not await loopback(client.url):
        reasons.append(AskReason(AskKind.SHARED_HOST))
    load = await server_load(client)
    if load is not None and load.requests > 0:
        reasons.append(AskReason(AskKind.BUSY, load.requests, load.route))
    return tuple(reasons)
