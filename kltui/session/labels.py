"""Short server labels: the part of each URL that tells the servers of a run apart
(`:30000` and `:30001` on one host, `gpu-a:30000` and `gpu-b:30000` across hosts)."""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import urlsplit

# Past this many servers (a fleet), the dashboard's panels stop giving every server its own
# lines: the servers panel lists each distinct set of settings once, the helpers panel only the
# selected server's helpers.
MANY_SERVERS = 4


def _parts(url: str) -> tuple[str, str, str]:
    """(host, port, rest) of a server URL; rest is whatever follows host:port."""
    u = urlsplit(url if "://" in url else f"http://{url}")
    try:
        port = str(u.port) if u.port is not None else ""
    except ValueError:  # not a number: keep the text as it was written
        port = u.netloc.rpartition(":")[2]
    rest = u.path.rstrip("/") + (f"?{u.query}" if u.query else "")
    return u.hostname or u.netloc, port, rest


def _without_common_domain(hosts: set[str]) -> dict[str, str]:
    """Host names less the domain they all share (`gpu-17.dc.example` -> `gpu-17`); addresses
    and lone names stay whole."""
    names = [h.split(".") for h in hosts]
    if len(hosts) < 2 or any(h.replace(".", "").isdigit() or ":" in h for h in hosts):
        return {h: h for h in hosts}
    shared = 0
    while all(len(n) > shared + 1 for n in names) and len({n[-1 - shared] for n in names}) == 1:
        shared += 1
    return {h: ".".join(h.split(".")[: len(h.split(".")) - shared]) for h in hosts}


def server_labels(urls: Iterable[str]) -> dict[str, str]:
    """Each URL's shortest label that still tells it from the others given."""
    urls = list(dict.fromkeys(urls))
    parts = {u: _parts(u) for u in urls}
    hosts = {h for h, _, _ in parts.values()}
    one_host = len(hosts) == 1
    short = _without_common_domain(hosts)
    candidates = (
        lambda h, p, r: f":{p}" if p and one_host else None,  # one host, several ports
        lambda h, p, r: f"{short[h]}:{p}" if p else short[h],  # gpu-17:30000, not gpu-17.dc.ex…
        lambda h, p, r: f"{h}:{p}" if p else h,
        lambda h, p, r: (f"{h}:{p}" if p else h) + r,
    )
    for make in candidates:
        labels = {u: make(*parts[u]) for u in urls}
        if None not in labels.values() and len(set(labels.values())) == len(urls):
            return {u: str(v) for u, v in labels.items()}
    return {u: u for u in urls}  # they differ in the scheme only: the whole URL
