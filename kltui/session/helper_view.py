"""HelperView: one helper on one server as every view reads it.

A helper's figures come from its final summary once it finished, and from the store's live state
(what was scored so far, the thresholds of HelperStarted) until then. That choice is made here,
once, for the TUI's panels, `kltui check`'s console and every report; views never read
`Summary.raw`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from kltui.engines.identity import as_int
from kltui.metrics.presets import ThresholdSource
from kltui.metrics.summary import Summary
from kltui.session.store import HelperState

T = TypeVar("T")


def _or(final: T | None, live: T) -> T:
    """The summary's value when it has one, else the live one."""
    return final if final is not None else live


@dataclass(frozen=True)
class HelperView:
    """A helper's answers: the summary's value where it has one, else the live value."""

    state: HelperState
    # the final summary, a live one the caller computed, or an empty one before any
    summary: Summary

    @classmethod
    def of(cls, st: HelperState, summary: Summary | None = None) -> HelperView:
        """The view of `st`, reading `summary` (a live one) when given, else its final one."""
        s = summary if summary is not None else st.summary
        return cls(st, s if s is not None else Summary())

    @property
    def finished(self) -> bool:
        """The helper sent its final summary (HelperFinished)."""
        return self.state.summary is not None

    @property
    def scored(self) -> int:
        """Samples scored."""
        return _or(self.summary.scored, self.state.n_scored)

    @property
    def samples(self) -> int:
        """Samples the helper was given."""
        return _or(self.summary.samples, self.state.n_samples)

    @property
    def skipped(self) -> int:
        """Samples not scored (each with its reason in `state.skipped`)."""
        return _or(self.summary.skipped, len(self.state.skipped))

    @property
    def threshold(self) -> float:
        """The kl_div threshold avg_kl_div is gated on."""
        return _or(self.summary.threshold, self.state.threshold)

    @property
    def tail_threshold(self) -> float:
        """τ of the tail counts."""
        return _or(self.summary.tail_threshold, self.state.tail_threshold)

    @property
    def threshold_source(self) -> ThresholdSource | None:
        """Where the threshold came from (None: an older recording that did not say)."""
        return _or(self.summary.threshold_source, self.state.threshold_source)

    @property
    def status(self) -> str:
        """The summary's status, else the phase the helper is in (or stopped in)."""
        return _or(self.summary.status, self.state.phase)

    @property
    def result(self) -> str:
        """pass | fail | vacuous | invalid | error from the final summary; without one, error
        (a fatal fault) or incomplete (cut short)."""
        if self.state.summary is not None:
            return self.state.summary.result
        return "error" if self.state.phase == "error" else "incomplete"

    @property
    def seconds(self) -> float | None:
        """The helper's duration on the store's clock, once it finished."""
        return self.state.elapsed if self.state.finished is not None else None

    @property
    def max_new_tokens(self) -> int | None:
        """The tokens each sample decodes, as the helper's settings said (None: not said)."""
        return as_int(self.state.settings.get("max_new_tokens"))

    @property
    def decoded(self) -> int:
        """Tokens the scored decode streamed so far (every sample together)."""
        return sum(self.state.decoded_len.values())

    @property
    def decode_rate(self) -> float | None:
        """Tokens per second of the scored decode: the tokens after its first chunk over the
        time from that chunk to the latest (None before a second chunk, later in time)."""
        st = self.state
        if st.decode_first is None or st.decode_last is None:
            return None
        t0, first = st.decode_first
        span = st.decode_last - t0
        return (self.decoded - first) / span if span > 0 else None

    @property
    def decode_eta(self) -> float | None:
        """Seconds until every sample has its max_new_tokens at `decode_rate`, while the
        decode runs (None: not decoding, or no rate or budget yet). With ignore_eos off a
        sample may stop sooner: then it is an upper bound."""
        st, rate = self.state, self.decode_rate
        budget = (self.max_new_tokens or 0) * st.n_samples
        if st.phase != "decode" or not rate or not budget:
            return None
        return max(0.0, budget - self.decoded) / rate

    @property
    def figures(self) -> Mapping[str, Any]:
        """What the helper reported beyond the typed Summary (cross_engine's figures)."""
        return self.summary.figures

    def reported(self, keys: Iterable[str]) -> dict[str, Any]:
        """Of `keys`, those the helper reported, as reported (the JSON report copies them)."""
        raw = self.summary.raw
        return {k: raw[k] for k in keys if k in raw}
