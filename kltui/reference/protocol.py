"""Reading a `/generate` body the way SGLang 0.5.23 does.

Two kinds of rejection, with SGLang's two body shapes:
- `ContractError`: the JSON schema gate (`entrypoints/api_contract.py`) that runs before anything
  else. Unknown `sampling_params` keys and wrongly typed fields fail here with serde's wording
  (e.g. "unknown field `seed`, expected one of `max_new_tokens`, ..."); HTTP 400
  `{"error": "<text>"}`. Unknown top-level keys are ignored, as the schema says.
- `RequestError`: what the tokenizer manager and scheduler refuse (context length, bad
  logprob_start_len, out-of-range sampling values); HTTP 400 `{"error": {"message": "<text>"}}`,
  or an SSE `data: {"error": {...}}` event when the request asked to stream.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from kltui.reference.engine import TOP_K_ALL, GenRequest, Sampling


class ContractError(ValueError):
    pass


class RequestError(ValueError):
    kind: str | None = None  # the SSE error's `type` when it is not the default one


class TextRefused(RequestError):
    """A text prompt to a server started with --skip-tokenizer-init: the ValueError that
    TokenizerManager._tokenize_one_request raises, which http_server answers with HTTP 400
    `{"error": {"message": ...}}`, or in a stream with an `invalid_request_error` event."""

    kind = "invalid_request_error"


NO_TOKENIZER_MESSAGE = (
    "The engine initialized with skip_tokenizer_init=True cannot accept text prompts. Please "
    "provide input_ids or re-initialize the engine with skip_tokenizer_init=False."
)


def refuse_text(_text: str) -> list[int]:
    """The `encode` of a server without a tokenizer."""
    raise TextRefused(NO_TOKENIZER_MESSAGE)


# ---- serde-style type checks ----


def _unexpected(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return f"boolean `{'true' if v else 'false'}`"
    if isinstance(v, int):
        return f"integer `{v}`"
    if isinstance(v, float):
        return f"floating point `{v}`"
    if isinstance(v, str):
        return f'string "{v}"'
    if isinstance(v, list):
        return "sequence"
    if isinstance(v, dict):
        return "map"
    return type(v).__name__


def _fail(v: Any, expected: str) -> ContractError:
    return ContractError(f"invalid type: {_unexpected(v)}, expected {expected}")


def _int(v: Any) -> None:
    if not isinstance(v, int) or isinstance(v, bool):
        raise _fail(v, "i64")


def _float(v: Any) -> None:
    if not isinstance(v, (int, float)) or isinstance(v, bool):
        raise _fail(v, "f64")


def _bool(v: Any) -> None:
    if not isinstance(v, bool):
        raise _fail(v, "a boolean")


def _str(v: Any) -> None:
    if not isinstance(v, str):
        raise _fail(v, "a string")


def _any(v: Any) -> None:
    pass


def _int_list(v: Any) -> None:
    if not isinstance(v, list):
        raise _fail(v, "a sequence")
    for e in v:
        _int(e)


def _float_map(v: Any) -> None:
    if not isinstance(v, dict):
        raise _fail(v, "a map")
    for e in v.values():
        _float(e)


def _or_list(check: Callable[[Any], None], name: str) -> Callable[[Any], None]:
    """A scalar or a list of scalars (a batch), as the schema's XOrList types."""

    def run(v: Any) -> None:
        if isinstance(v, list):
            for e in v:
                check(e)
            return
        try:
            check(v)
        except ContractError:
            raise _fail(v, f"a value or an array of values for {name}") from None

    return run


def _token_ids_or_list(v: Any) -> None:
    if not isinstance(v, list):
        raise _fail(v, "a value or an array of values for TokenIdsOrList")
    for e in v:
        if isinstance(e, list):
            _int_list(e)
        else:
            _int(e)


# SGLang's sglang.api.v1.SamplingParams in schema order, which is the order serde lists the
# expected fields in when it refuses an unknown one.
_SAMPLING_CHECKS: dict[str, Callable[[Any], None]] = {
    "max_new_tokens": _int,
    "stop": _or_list(_str, "StringOrList"),
    "stop_token_ids": _int_list,
    "stop_regex": _or_list(_str, "StringOrList"),
    "temperature": _float,
    "top_p": _float,
    "top_k": _int,
    "min_p": _float,
    "frequency_penalty": _float,
    "presence_penalty": _float,
    "repetition_penalty": _float,
    "min_new_tokens": _int,
    "n": _int,
    "json_schema": _str,
    "regex": _str,
    "ebnf": _str,
    "structural_tag": _str,
    "ignore_eos": _bool,
    "skip_special_tokens": _bool,
    "spaces_between_special_tokens": _bool,
    "no_stop_trim": _bool,
    "stream_interval": _int,
    "logit_bias": _float_map,
    "sampling_seed": _int,
    "custom_params": _any,
    "beam_width": _int,
}
SAMPLING_FIELDS = tuple(_SAMPLING_CHECKS)
_EXPECTED_FIELDS = ", ".join(f"`{f}`" for f in SAMPLING_FIELDS)


def _sampling_params(v: Any) -> None:
    if not isinstance(v, dict):
        raise _fail(v, "struct SamplingParams")
    for key, x in v.items():
        check = _SAMPLING_CHECKS.get(key)
        if check is None:
            raise ContractError(f"unknown field `{key}`, expected one of {_EXPECTED_FIELDS}")
        if x is not None:  # null means "the default" for every field
            check(x)


_TOP_LEVEL: dict[str, Callable[[Any], None]] = {
    "rid": _or_list(_str, "StringOrList"),
    "text": _or_list(_str, "StringOrList"),
    "input_ids": _token_ids_or_list,
    "stream": _bool,
    "sampling_params": lambda v: (
        [_sampling_params(e) for e in v] if isinstance(v, list) else _sampling_params(v)
    ),
    "return_logprob": _or_list(_bool, "BoolOrList"),
    "logprob_start_len": _or_list(_int, "Int64OrList"),
    "top_logprobs_num": _or_list(_int, "Int64OrList"),
    "token_ids_logprob": _token_ids_or_list,
    "return_text_in_logprobs": _bool,
}


def contract_error(body: Any) -> str | None:
    """The schema violation in a parsed /generate body, or None."""
    if not isinstance(body, dict):
        return f"invalid type: {_unexpected(body)}, expected struct GenerateRequest"
    try:
        for key, check in _TOP_LEVEL.items():
            if body.get(key) is not None:
                check(body[key])
    except ContractError as e:
        return str(e)
    return None


# ---- semantic validation and normalization ----


@dataclass(frozen=True)
class ParsedGenerate:
    requests: list[GenRequest]
    is_single: bool
    stream: bool
    return_text_in_logprobs: bool


def _per_item(value: Any, n: int, name: str, default: Any) -> list:
    if value is None:
        return [default] * n
    if isinstance(value, list):
        if len(value) != n:
            raise RequestError(
                f"The length of {name} ({len(value)}) does not match the batch size ({n})."
            )
        return value
    return [value] * n


def _sampling(raw: dict, vocab_size: int) -> tuple[Sampling, int]:
    def get(key: str, default: Any) -> Any:
        value = raw.get(key)
        return default if value is None else value

    temperature = float(get("temperature", 1.0))
    top_k = int(get("top_k", TOP_K_ALL))
    max_new = raw.get("max_new_tokens")
    min_new = int(get("min_new_tokens", 0))
    top_p, min_p = float(get("top_p", 1.0)), float(get("min_p", 0.0))
    freq, pres = float(get("frequency_penalty", 0.0)), float(get("presence_penalty", 0.0))
    rep = float(get("repetition_penalty", 1.0))
    _verify(temperature, top_p, min_p, top_k, (freq, pres, rep), min_new, max_new)
    _refuse_unsupported(raw)
    n = int(get("n", 1))
    if n < 1:
        raise RequestError(f"n must be at least 1, got {n}.")
    stop = raw.get("stop")
    stop = (stop,) if isinstance(stop, str) else tuple(stop or ())
    bias = _logit_bias(raw, vocab_size)
    sampling = Sampling(
        temperature=temperature,
        max_new_tokens=128 if max_new is None else int(max_new),
        ignore_eos=bool(get("ignore_eos", False)),
        top_p=top_p,
        top_k=TOP_K_ALL if top_k == -1 else top_k,
        min_p=min_p,
        stop=stop,
        stop_token_ids=frozenset(raw.get("stop_token_ids") or ()),
        frequency_penalty=freq,
        presence_penalty=pres,
        repetition_penalty=rep,
        min_new_tokens=min_new,
        sampling_seed=raw.get("sampling_seed"),
        logit_bias=tuple(bias),
        skip_special_tokens=bool(get("skip_special_tokens", True)),
        spaces_between_special_tokens=bool(get("spaces_between_special_tokens", True)),
        no_stop_trim=bool(get("no_stop_trim", False)),
        stream_interval=raw.get("stream_interval"),
    )
    return sampling, n


def _verify(
    temperature: float,
    top_p: float,
    min_p: float,
    top_k: int,
    penalties: tuple[float, float, float],
    min_new: int,
    max_new: Any,
) -> None:
    """SamplingParams.verify() in SGLang, same order and wording."""
    freq, pres, rep = penalties
    if temperature < 0.0:
        raise RequestError(f"temperature must be non-negative, got {temperature}.")
    if not 0.0 < top_p <= 1.0:
        raise RequestError(f"top_p must be in (0, 1], got {top_p}.")
    if not 0.0 <= min_p <= 1.0:
        raise RequestError(f"min_p must be in [0, 1], got {min_p}.")
    if top_k < 1 and top_k != -1:
        raise RequestError(f"top_k must be -1 (disable), or at least 1, got {top_k}.")
    if not -2.0 <= freq <= 2.0:
        raise RequestError(f"frequency_penalty must be in [-2, 2], got {freq}.")
    if not -2.0 <= pres <= 2.0:
        raise RequestError(f"presence_penalty must be in [-2, 2], got {pres}.")
    if not 0.0 <= rep <= 2.0:
        raise RequestError(f"repetition_penalty must be in [0, 2], got {rep}.")
    if min_new < 0:
        raise RequestError(f"min_new_tokens must be in [0, max_new_tokens], got {min_new}.")
    if max_new is not None:
        if max_new < 0:
            raise RequestError(f"max_new_tokens must be at least 0, got {max_new}.")
        if min_new > max_new:
            raise RequestError(
                f"min_new_tokens must be in [0, max_new_tokens({max_new})], got {min_new}."
            )


def _refuse_unsupported(raw: dict) -> None:
    """What this server does not do (grammars, stop_regex, beam search), refused as SGLang
    refuses it."""
    grammars = [raw.get(k) for k in ("json_schema", "regex", "ebnf", "structural_tag")]
    if sum(g is not None for g in grammars) > 1:
        raise RequestError("Only one of regex, json_schema, or ebnf can be set.")
    if any(g is not None for g in grammars):
        raise RequestError(
            "Grammar-based generation (json_schema, regex, ebnf, structural_tag) is not "
            "supported when the server is launched with --grammar-backend none"
        )
    if raw.get("stop_regex") is not None:
        raise RequestError("stop_regex is not supported by the kltui reference server.")
    if (raw.get("beam_width") or 1) > 1:
        raise RequestError("Beam search is not supported by the kltui reference server.")


def _logit_bias(raw: dict, vocab_size: int) -> list[tuple[int, float]]:
    """logit_bias as (token id, bias) pairs, every id checked against the vocabulary."""
    bias = []
    for key, value in (raw.get("logit_bias") or {}).items():
        try:
            token = int(key)
        except ValueError:
            raise RequestError(f"logit_bias keys must be token ids, got {key!r}.") from None
        if not 0 <= token < vocab_size:
            raise RequestError(f"logit_bias token id {token} is out of vocabulary.")
        bias.append((token, float(value)))
    return bias


def _prompts(body: dict, encode: Callable[[str], list[int]]) -> tuple[list[list[int]], bool]:
    """The body's prompts as token ids (text encoded), and whether it was a single one."""
    text, input_ids = body.get("text"), body.get("input_ids")
    if (text is None) == (input_ids is None):
        raise RequestError("Either text, input_ids or input_embeds should be provided.")
    if text is not None:
        is_single = isinstance(text, str)
        prompts = [encode(t) for t in ([text] if is_single else text)]
    else:
        is_single = not input_ids or not isinstance(input_ids[0], list)
        prompts = [list(input_ids)] if is_single else [list(x) for x in input_ids]
    if not prompts:
        raise RequestError("The batch is empty.")
    return prompts, is_single


def _check_logprob_args(
    prompt: list[int], return_logprob: bool, lsl: int, wanted_ids: Any, vocab_size: int
) -> None:
    """What SGLang refuses of the logprob arguments: a start past the prompt, ids outside the
    vocabulary."""
    if return_logprob and lsl > len(prompt):
        # The scheduler's abort text (f"{req.logprob_start_len=} ..."), verbatim.
        raise RequestError(
            f"req.logprob_start_len={lsl} is higher than the number of input tokens "
            f"len(req.origin_input_ids)={len(prompt)}. Please use a smaller logprob_start_len."
        )
    if wanted_ids is not None:
        bad = [t for t in wanted_ids if not 0 <= t < vocab_size]
        if bad:
            raise RequestError(f"token_ids_logprob has out-of-vocabulary ids {bad[:8]}.")


def parse_generate(
    body: dict,
    *,
    encode: Callable[[str], list[int]],
    vocab_size: int,
    context_length: int,
) -> ParsedGenerate:
    """Normalize a contract-checked body into one GenRequest per output (batch and n expanded)."""
    prompts, is_single = _prompts(body, encode)
    n = len(prompts)

    raw_sampling = body.get("sampling_params")
    if isinstance(raw_sampling, list):
        raw_sampling = _per_item(raw_sampling, n, "sampling_params", {})
    else:
        raw_sampling = [raw_sampling or {}] * n
    rids = _per_item(body.get("rid"), n, "rid", None)
    return_logprob = _per_item(body.get("return_logprob"), n, "return_logprob", False)
    start_len = _per_item(body.get("logprob_start_len"), n, "logprob_start_len", -1)
    top_num = _per_item(body.get("top_logprobs_num"), n, "top_logprobs_num", 0)
    ids_lp = body.get("token_ids_logprob")
    if ids_lp is not None and ids_lp and isinstance(ids_lp[0], list):
        ids_lp = _per_item(ids_lp, n, "token_ids_logprob", None)
    else:
        ids_lp = [ids_lp] * n

    requests: list[GenRequest] = []
    for i, prompt in enumerate(prompts):
        sampling, copies = _sampling(raw_sampling[i], vocab_size)
        sampling = _check_prompt(prompt, sampling, raw_sampling[i], vocab_size, context_length)
        if copies > 1 and is_single:
            is_single = False
        lsl = int(start_len[i])
        wanted_ids = ids_lp[i]
        _check_logprob_args(prompt, bool(return_logprob[i]), lsl, wanted_ids, vocab_size)
        for c in range(copies):
            rid = rids[i] or uuid.uuid4().hex
            requests.append(
                GenRequest(
                    rid=rid if copies == 1 else f"{rid}-{c}",
                    input_ids=prompt,
                    sampling=sampling,
                    return_logprob=bool(return_logprob[i]),
                    logprob_start_len=lsl,
                    top_logprobs_num=int(top_num[i] or 0),
                    token_ids_logprob=None if wanted_ids is None else tuple(wanted_ids),
                )
            )
    return ParsedGenerate(
        requests=requests,
        is_single=is_single,
        stream=bool(body.get("stream")),
        return_text_in_logprobs=bool(body.get("return_text_in_logprobs")),
    )


def _check_prompt(
    prompt: list[int], sampling: Sampling, raw: dict, vocab_size: int, context_length: int
) -> Sampling:
    if not prompt:
        raise RequestError("The input is empty: text or input_ids must contain at least one token.")
    bad = [t for t in prompt if not 0 <= t < vocab_size]
    if bad:
        raise RequestError(f"Token ID {bad[0]} is out of vocabulary (vocab size: {vocab_size}).")
    # TokenizerManager._validate_one_request, same wording.
    if len(prompt) >= context_length:
        raise RequestError(
            f"The input ({len(prompt)} tokens) is longer than the model's context length "
            f"({context_length} tokens)."
        )
    if (
        raw.get("max_new_tokens") is not None
        and sampling.max_new_tokens + len(prompt) >= context_length
    ):
        total = sampling.max_new_tokens + len(prompt)
        raise RequestError(
            "Requested token count exceeds the model's maximum context length "
            f"of {context_length} tokens. You requested a total of {total} "
            f"tokens: {len(prompt)} tokens from the input messages and "
            f"{sampling.max_new_tokens} tokens for the completion. Please reduce the number "
            "of tokens in the input messages or the completion to fit within the limit."
        )
    # The default budget is clamped to the context instead (the scheduler's min(...)).
    room = context_length - len(prompt) - 1
    if sampling.max_new_tokens > room:
        sampling = replace(sampling, max_new_tokens=room)
    return sampling
