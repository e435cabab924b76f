"""EngineError's classes (issue 60): callers catch by class, as with httpx, and each kind the
clients raise maps to one class; `kind` stays the recorded word, `transient` the retry rule."""

from __future__ import annotations

import pytest

from kltui.engines.errors import (
    AuthRejected,
    BadRequest,
    ConnectionReset,
    EngineError,
    FlushBusy,
    HTTPStatusError,
    MalformedAnswer,
    MalformedJSON,
    NoTokenizer,
    NotThisEngine,
    RequestTimeout,
    RouteNotFound,
    ServerError,
    ServerRestarted,
    TransportError,
    Unhealthy,
    Unreachable,
)
from kltui.engines.http import is_transient

S = "http://127.0.0.1:1"


@pytest.mark.parametrize(
    "kind, cls, transient, gone",
    [
        ("unreachable", Unreachable, True, True),
        ("timeout", RequestTimeout, True, True),
        ("reset", ConnectionReset, True, True),
        ("transport", TransportError, True, True),
        ("unhealthy", Unhealthy, True, False),
        ("http-404", RouteNotFound, False, False),
        ("http-405", RouteNotFound, False, False),
        ("http-401", AuthRejected, False, False),
        ("http-403", AuthRejected, False, False),
        ("http-400", BadRequest, False, False),
        ("http-500", ServerError, True, False),
        ("http-501", ServerError, False, False),
        ("http-503", ServerError, True, True),
        ("http-418", HTTPStatusError, False, False),
        ("not-engine", NotThisEngine, False, False),
        ("malformed-json", MalformedJSON, False, False),
        ("wrong-count", MalformedAnswer, False, False),
        ("no-tokenizer", NoTokenizer, False, False),
        ("server-restarted", ServerRestarted, False, False),
        ("protocol", EngineError, False, False),
    ],
)
def test_each_kind_has_its_class(kind, cls, transient, gone):
    e = EngineError.of(S, "m", kind)
    assert type(e) is cls and e.kind == kind and str(e) == f"{S}: m"
    assert (is_transient(e), e.gone) == (transient, gone)


def test_a_status_error_carries_its_status_and_json_is_an_answer():
    e = EngineError.of(S, "m", "http-405")
    assert isinstance(e, HTTPStatusError) and e.status == 405
    assert isinstance(EngineError.of(S, "m", "malformed-json"), MalformedAnswer)
    busy = FlushBusy(S, "pending requests")
    assert busy.kind == "flush-busy" and is_transient(busy)
