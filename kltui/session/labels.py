"""Short server labels: the part of each URL that tells the servers of a run apart
(`:30000` and `:30001` on one host, `gpu-a:30000` and `gpu-b:30000` across hosts)."""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import urlsplit


def _parts(url: str) -> tuple[str, str, str]:
    """(host, port, rest) of a server URL; rest is whatever follows host:port."""
    u = urlsplit(url if "://" in url else f"http://{url}")
    try:
        port = str(u.port) if u.port is not None else ""
    except ValueError:  # not a number: keep the text as it was written
        port = u.netloc.rpartition(":")[2]
    rest = u.path.rstrip("/") + (f"?{u.query}" if u.query else "")
    return u.hostname or u.netloc, port, rest


def server_labels(urls: Iterable[str]) -> dict[str, str]:
    """Each URL's shortest label that still tells it from the others given."""
    urls = list(dict.fromkeys(urls))
    parts = {u: _parts(u) for u in urls}
    one_host = len({h for h, _, _ in parts.values()}) == 1
    candidates = (
        lambda h, p, r: f":{p}" if p and one_host else None,  # one host, several ports
        lambda h, p, r: f"{h}:{p}" if p else h,
        lambda h, p, r: (f"{h}:{p}" if p else h) + r,
    )
    for make in candidates:
        labels = {u: make(*parts[u]) for u in urls}
        if None not in labels.values() and len(set(labels.values())) == len(urls):
            return {u: str(v) for u, v in labels.items()}
    return {u: u for u in urls}  # they differ in the scheme only: the whole URL
