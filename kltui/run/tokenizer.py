"""A local tokenizer, for servers started with `--skip-tokenizer-init` (they take and return ids
only): built-in text prompts, decode_cache_hit's turn-2 separator "," and the drill-down's token
text come from it.

It encodes as SGLang's own helpers do (`kl_test_utils`: `get_tokenizer(model).encode(text)`, so
special tokens included: a BOS-adding tokenizer gives BOS + ","). `transformers` is used when
installed (SGLang's `get_tokenizer` is an `AutoTokenizer`), else the `tokenizers` library reading
the folder's tokenizer.json. Nothing is ever downloaded: a name is looked up in the local Hugging
Face cache only. kltui itself needs neither library: `--separator-ids` and token-id prompt files
work without any tokenizer installed.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from kltui.errors import UsageError

SEPARATOR = ","  # decode_cache_hit's turn-2 separator, as kl_test_utils appends it
FIX = "--tokenizer PATH (the model's tokenizer folder, or its name in the local Hugging Face cache)"


class TokenizerError(UsageError):
    """A --tokenizer that cannot be loaded or used."""

    def __init__(self, spec: str, message: str) -> None:
        super().__init__(f"--tokenizer {spec}: {message}")


@dataclass(frozen=True)
class LocalTokenizer:
    """A tokenizer loaded locally for servers started with --skip-tokenizer-init."""

    spec: str  # what was asked for
    folder: str  # where it was found
    library: str  # "transformers" or "tokenizers"
    _encode: Callable[[str], list[int]]
    _decode_one: Callable[[int], str]

    def encode(self, text: str) -> list[int]:
        """Ids of `text`, special tokens included (SGLang's helpers' `tokenizer.encode`)."""
        return [int(t) for t in self._encode(text)]

    def token_texts(self, ids: Sequence[int]) -> list[str]:
        """The text of each token on its own (what `return_text_in_logprobs` would show)."""
        return [self._decode_one(int(t)) for t in ids]

    def describe(self) -> str:
        """Where the tokenizer was found and which library reads it."""
        return f"{self.folder} ({self.library})"


def hub_cache() -> Path:
    """The local Hugging Face hub cache, as huggingface_hub finds it."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"]).expanduser()
    home = os.environ.get("HF_HOME") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "huggingface"
    )
    return Path(home).expanduser() / "hub"


def _from_cache(spec: str) -> Path | None:
    repo = hub_cache() / ("models--" + spec.strip("/").replace("/", "--"))
    snaps = repo / "snapshots"
    if not snaps.is_dir():
        return None
    ref = repo / "refs" / "main"
    if ref.is_file() and (snaps / ref.read_text().strip()).is_dir():
        return snaps / ref.read_text().strip()
    found = sorted(
        (d for d in snaps.iterdir() if (d / "tokenizer.json").exists()),
        key=lambda d: d.stat().st_mtime,
    )
    return found[-1] if found else None


def resolve(spec: str) -> Path:
    """The tokenizer folder for a path (folder or its tokenizer.json) or a cached model name."""
    p = Path(spec).expanduser()
    if p.is_dir():
        return p
    if p.is_file():
        if p.name == "tokenizer.json":
            return p.parent
        raise TokenizerError(spec, "not a folder; give the model's folder (with tokenizer.json)")
    folder = _from_cache(spec)
    if folder is None:
        raise TokenizerError(
            spec,
            f"no such folder, and no model of that name in the local Hugging Face cache "
            f"({hub_cache()}); give the model's tokenizer folder, or --separator-ids IDS "
            "with --prompts ids.json (nothing is downloaded)",
        )
    return folder


# tokenizer_config.json keys with which transformers rebuilds the special-token template
# (LlamaTokenizerFast and transformers 5's fast tokenizers), so tokenizer.json alone would differ
ALTERS_TEMPLATE = ("add_bos_token", "add_eos_token")


def _template_is_the_files(folder: Path) -> bool:
    """True when AutoTokenizer's encode is tokenizer.json's own: a fast tokenizer whose config
    asks transformers for no other special-token template."""
    if not (folder / "tokenizer.json").is_file():
        return False
    try:
        import json

        cfg = json.loads((folder / "tokenizer_config.json").read_text())
    except FileNotFoundError:
        return True
    except (OSError, ValueError):
        return False
    return isinstance(cfg, dict) and not any(k in cfg for k in ALTERS_TEMPLATE)


def load(spec: str) -> LocalTokenizer:
    """The tokenizer `spec` names: the `tokenizers` library where it encodes exactly as
    SGLang's AutoTokenizer would (tokenizer.json's own template: milliseconds, no torch), else
    `transformers` when installed (seconds: it imports torch), else `tokenizers`."""
    folder = resolve(spec)
    if _template_is_the_files(folder):
        try:
            return _with_tokenizers(spec, folder)
        except TokenizerError:
            pass  # e.g. the tokenizers package missing: transformers may still read it
    try:
        import transformers  # noqa: F401
    except ImportError:
        return _with_tokenizers(spec, folder)
    try:
        return _with_transformers(spec, folder)
    except TokenizerError:
        # a transformers install that cannot load it (e.g. a broken torchvision): the
        # tokenizers library reads the same tokenizer.json; `describe()` names the library used
        if (folder / "tokenizer.json").is_file():
            try:
                return _with_tokenizers(spec, folder)
            except TokenizerError:
                pass
        raise


def _with_transformers(spec: str, folder: Path) -> LocalTokenizer:
    try:
        from transformers import AutoTokenizer
        from transformers.utils import logging as hf_logging

        hf_logging.set_verbosity_error()
        # SGLang's get_tokenizer: AutoTokenizer, fast, no clean-up of spaces
        tok = AutoTokenizer.from_pretrained(
            str(folder), local_files_only=True, clean_up_tokenization_spaces=False, use_fast=True
        )
    except Exception as e:  # noqa: BLE001 - any loader fault is one line naming the folder
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise TokenizerError(spec, f"transformers cannot load {folder}: {first}") from None
    return LocalTokenizer(
        spec,
        str(folder),
        "transformers",
        tok.encode,
        lambda t: str(tok.decode([t], skip_special_tokens=False)),
    )


def _with_tokenizers(spec: str, folder: Path) -> LocalTokenizer:
    try:
        from tokenizers import Tokenizer
    except ImportError:
        raise TokenizerError(
            spec,
            "needs the `tokenizers` package (pip install tokenizers) or `transformers`; "
            "without either, give --separator-ids IDS and --prompts ids.json",
        ) from None
    path = folder / "tokenizer.json"
    if not path.is_file():
        raise TokenizerError(
            spec, f"no tokenizer.json in {folder} (install transformers for other formats)"
        )
    try:
        tok = Tokenizer.from_file(str(path))
    except Exception as e:  # noqa: BLE001 - a broken file is one line naming it
        raise TokenizerError(spec, f"cannot read {path}: {str(e).splitlines()[0]}") from None
    return LocalTokenizer(
        spec,
        str(folder),
        "tokenizers",
        lambda text: tok.encode(text, add_special_tokens=True).ids,
        lambda t: tok.decode([t], skip_special_tokens=False),
    )


def parse_separator_ids(text: str, where: str = "--separator-ids") -> list[int]:
    """`11` or `1,11`: the token ids decode_cache_hit appends after turn 1."""
    try:
        ids = [int(x) for x in text.replace(" ", "").split(",") if x]
    except ValueError:
        raise UsageError(
            f"{where}: expected token ids separated by commas (e.g. 11 or 1,11), got {text!r}"
        ) from None
    if not ids or min(ids) < 0:
        raise UsageError(f"{where}: expected one or more token ids >= 0, got {text!r}")
    return ids


class PendingTokenizer:
    """A tokenizer loading in a background thread: `import transformers` and a 128k-vocab
    tokenizer.json cost seconds, which an ids-only run needs only at decode_cache_hit's
    separator (after two helpers) or for the drill-down's text. A load error is raised, as the
    one-line TokenizerError, at the first use."""

    def __init__(self, spec: str) -> None:
        resolve(spec)  # a missing folder or name is refused now, before any server is contacted
        self.spec = spec
        self._result: LocalTokenizer | None = None
        self._error: BaseException | None = None
        # daemon: a run that ends before the load never waits for it at exit
        self._thread = threading.Thread(target=self._load, name="kltui-tokenizer", daemon=True)
        self._thread.start()

    def _load(self) -> None:
        try:
            self._result = load(self.spec)
        except BaseException as e:  # noqa: BLE001 - handed to the first caller
            self._error = e

    def get(self) -> LocalTokenizer:
        """The loaded tokenizer (waits for the load)."""
        self._thread.join()
        if self._error is not None:
            raise self._error
        assert self._result is not None
        return self._result

    def encode(self, text: str) -> list[int]:
        """Ids of `text`, special tokens included."""
        return self.get().encode(text)

    def token_texts(self, ids: Sequence[int]) -> list[str]:
        """The text of each token on its own."""
        return self.get().token_texts(ids)

    def describe(self) -> str:
        """Where the tokenizer came from, and which library read it."""
        return self.get().describe()
