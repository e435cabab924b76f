"""What a /generate request asks SGLang for beside the tokens: its logprob fields as one frozen
record, the typed seam between the helpers and `engines/sglang.py` (which builds the body from
it and checks every answer against it)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class LogprobAsk:
    """SGLang's own request fields, by their names. `logprob_start_len` is one start for the
    batch or one per item (the drill-down's windows); `token_ids_logprob` one id list per item."""

    return_logprob: bool = True
    logprob_start_len: int | Sequence[int] = -1
    top_logprobs_num: int = 0
    token_ids_logprob: Sequence[Sequence[int]] | None = None
    # token text only where asked (the drill-down's extras request); SGLang's helpers send False
    return_text_in_logprobs: bool = False

    def body_fields(self) -> dict[str, object]:
        """The request body's logprob keys, as SGLang's helpers send them: none at all when no
        logprobs are asked for, top-k and token-id lists only where asked."""
        if not self.return_logprob:
            return {}
        fields: dict[str, object] = {
            "return_logprob": True,
            "return_text_in_logprobs": self.return_text_in_logprobs,
            "logprob_start_len": self.logprob_start_len,
        }
        if self.top_logprobs_num:
            fields["top_logprobs_num"] = self.top_logprobs_num
        if self.token_ids_logprob is not None:
            fields["token_ids_logprob"] = self.token_ids_logprob
        return fields


# a request for tokens only: the warm-ups and turns that are never scored
NO_LOGPROBS = LogprobAsk(return_logprob=False)
