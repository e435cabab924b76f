"""The checkpoint's tokenizer (tokenizer.json via the `tokenizers` library), used as SGLang uses
the HF tokenizer: text is encoded with special tokens (so BOS is prepended by the tokenizer's own
post-processor), output text is decoded with `skip_special_tokens`, and each logprob entry's
text is the decoding of that single token."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from tokenizers import Tokenizer


class TextTokenizer:
    def __init__(self, folder: str | Path) -> None:
        folder = Path(folder)
        self._tok = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.vocab_size = self._tok.get_vocab_size()
        config_path = folder / "tokenizer_config.json"
        config = json.loads(config_path.read_text()) if config_path.exists() else {}
        self.eos_token_id = self._id(config.get("eos_token"))
        self.bos_token_id = self._id(config.get("bos_token"))
        # Per-token text for logprob triples, computed once (tiny vocabulary).
        self.token_text = [
            self._tok.decode([i], skip_special_tokens=False) for i in range(self.vocab_size)
        ]

    def _id(self, token: str | dict | None) -> int | None:
        if isinstance(token, dict):
            token = token.get("content")
        return None if token is None else self._tok.token_to_id(token)

    def encode(self, text: str) -> list[int]:
        return self._tok.encode(text, add_special_tokens=True).ids

    def decode(self, ids: Sequence[int], skip_special_tokens: bool = True) -> str:
        return self._tok.decode(list(ids), skip_special_tokens=skip_special_tokens)
