"""The weights a server loads, hashed on this machine: "same model" must mean the same tensors,
and a folder name says nothing about its bytes (a 1% perturbation keeps the name).

SGLang reports no weights hash, only a `weight_version` label that is "default" unless someone
set it. So for a server on this machine (a loopback URL) whose model_path is a folder here,
kltui hashes what decides the numbers: `config.json` and every `*.safetensors` (not the
tokenizer files, which the token-id comparison already checks). Each file is streamed through
SHA-256 once and remembered by (path, mtime, size), in memory and in
`$XDG_CACHE_HOME/kltui/weights-sha256.json`, so a 100 GB checkpoint is read once, not on every
run. A loopback URL is taken to be this machine: behind an SSH tunnel, model_path names a
folder on the other machine, and the hash is only right when both see the same files.
"""

from __future__ import annotations

import contextlib
import hashlib
import ipaddress
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

CHUNK = 8 * 2**20
CACHE_NAME = "weights-sha256.json"
# one entry per file; far more than any set of checkpoints one machine holds
CACHE_LIMIT = 4096

_memory: dict[str, str] = {}  # cache key -> sha256 of one file


@dataclass(frozen=True)
class LocalWeights:
    """The hash of a server's weights folder on this machine, or why there is none."""

    sha256: str | None  # over the names and SHA-256s of config.json and *.safetensors
    files: int = 0  # the files hashed
    note: str | None = None  # why not hashed (None when sha256 is set)

    def record(self) -> dict[str, str | None]:
        """The identity keys RunStarted.servers records for it."""
        return {"local_weights_sha256": self.sha256, "local_weights_note": self.note}


def is_loopback(url: str) -> bool:
    """Whether `url` names this machine (localhost or a loopback address), without DNS."""
    host = (urlsplit(url).hostname or "").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _cache_file() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "kltui" / CACHE_NAME


def _load_disk() -> dict[str, str]:
    try:
        data = json.loads(_cache_file().read_text())
    except (OSError, ValueError):
        return {}  # no cache yet, or a damaged one: hashing again is only slower
    if not isinstance(data, dict):
        return {}
    return {k: v for k, v in data.items() if isinstance(k, str) and isinstance(v, str)}


def _save_disk(entries: dict[str, str]) -> None:
    path = _cache_file()
    merged = {**_load_disk(), **entries}
    if len(merged) > CACHE_LIMIT:
        merged = dict(list(merged.items())[-CACHE_LIMIT:])
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        # written aside and renamed: two kltui processes never see a half-written file
        with tempfile.NamedTemporaryFile(
            "w", dir=path.parent, prefix=".weights-", delete=False
        ) as f:
            json.dump(merged, f)
        os.replace(f.name, path)
    except OSError:
        pass  # a read-only home: the hash is still right, only not remembered


def forget(disk: bool = True) -> None:
    """Forgets every remembered hash: in memory, and with `disk` the cache file too (a
    suspected stale entry; tests)."""
    _memory.clear()
    if disk:
        with contextlib.suppress(OSError):
            _cache_file().unlink()


def _file_sha256(path: Path, disk: dict[str, str], new: dict[str, str]) -> str:
    st = path.stat()
    key = f"{path.resolve()}|{st.st_mtime_ns}|{st.st_size}"
    if (known := _memory.get(key) or disk.get(key)) is not None:
        _memory[key] = known
        return known
    h = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(CHUNK):
            h.update(chunk)
    _memory[key] = new[key] = h.hexdigest()
    return new[key]


def folder_sha256(folder: Path) -> LocalWeights:
    """The hash of `folder`'s config.json and *.safetensors, or why it cannot be taken."""
    files = sorted(folder.glob("*.safetensors"))
    if not files:
        return LocalWeights(None, note=f"no *.safetensors in {folder} on this machine")
    if (folder / "config.json").is_file():
        files.insert(0, folder / "config.json")
    disk, new = _load_disk(), dict[str, str]()
    try:
        parts = [f"{p.name}\0{_file_sha256(p, disk, new)}\n" for p in files]
    except OSError as e:
        return LocalWeights(None, note=f"cannot read {folder} ({e.strerror or e})")
    finally:
        if new:
            _save_disk(new)
    return LocalWeights(hashlib.sha256("".join(parts).encode()).hexdigest(), len(files))


def local_weights(url: str, model_path: str | None) -> LocalWeights:
    """The weights hash of the server at `url` when it runs on this machine and its model_path
    (as it reported it: untrusted, only looked up here) is a folder here."""
    if not model_path:
        return LocalWeights(None, note="the server reports no model_path")
    if not is_loopback(url):
        return LocalWeights(None, note="the server is not on this machine")
    try:
        folder = Path(model_path)
        found = folder.is_absolute() and folder.is_dir()
    except (OSError, ValueError):
        found = False
    if not found:
        return LocalWeights(None, note="its model_path folder is not found on this machine")
    return folder_sha256(folder)


def local_config(url: str, model_path: str | None) -> dict:
    """The server's config.json read here, by the same rule as `local_weights` (a loopback
    server whose model_path is a folder here), or {}: what SGLang's "dtype: auto" and unset
    "context_length" resolve from at load time, which its /server_info does not say."""
    if not model_path or not is_loopback(url):
        return {}
    try:
        path = Path(model_path) / "config.json"
        if not (path.is_absolute() and path.is_file()) or path.stat().st_size > 2**20:
            return {}
        cfg = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return cfg if isinstance(cfg, dict) else {}
