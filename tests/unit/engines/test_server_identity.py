"""A recorded server identity reads typed (session/servers.ServerIdentity): the settings the
diagnosis reasons about are fields, a value of the wrong type (a recording is untrusted) reads as
unknown rather than raising, and `get` answers every reported key as recorded."""

from __future__ import annotations

from kltui.engines.identity import ServerIdentity, identity_of

URL = "http://127.0.0.1:30000"


def test_fields_are_typed_and_unknown_when_the_value_is_not():
    s = ServerIdentity.of(
        {
            "url": URL,
            "tp_size": 2,
            "page_size": "16",  # not a number: unknown, never a crash or a wrong comparison
            "enable_deterministic_inference": 0,
            "disable_cuda_graph": None,
            "attention_backend": "fa3",
            "weight_version": "v7",
        }
    )
    assert (s.url, s.engine, s.tp_size, s.page_size) == (URL, "sglang", 2, None)
    assert (s.enable_deterministic_inference, s.disable_cuda_graph) == (False, None)
    assert s.attention_backend == "fa3" and s.get("weight_version") == "v7"
    assert s.get("page_size") == "16" and s.get("absent", "?") == "?"


def test_a_server_the_run_did_not_record_is_empty():
    servers = [{"url": URL, "version": "0.5.23"}, "not an object"]
    assert identity_of(servers, URL).version == "0.5.23"
    assert not identity_of(servers, "http://elsewhere") and identity_of([], URL).url is None
    assert not ServerIdentity.of("not an object")


def test_the_recorded_config_reads_typed_from_the_store():
    from kltui.session.events import RunStarted
    from kltui.session.store import SessionStore

    store = SessionStore()
    assert store.config.helpers == () and store.config.temperature is None
    config = {"helpers": ["match", 3], "temperature": 0, "max_new_tokens": "64", "seed": 7}
    store.apply(RunStarted("r", 0.0, config, [{"url": URL, "tp_size": 4}], {}, "0"))
    c = store.config
    assert (c.helpers, c.temperature, c.max_new_tokens, c.fleet) == (("match",), 0.0, None, None)
    assert c.get("seed") == 7 and store.identity(URL).tp_size == 4
