"""The request record's body keys are the ones SGLang's helpers send, in their order."""

from kltui.engines.sglang_request import NO_LOGPROBS, LogprobAsk


def test_no_logprobs_sends_no_logprob_key():
    assert NO_LOGPROBS.body_fields() == {}


def test_a_scored_request_sends_sglangs_three_keys():
    assert list(LogprobAsk(logprob_start_len=0).body_fields().items()) == [
        ("return_logprob", True),
        ("return_text_in_logprobs", False),
        ("logprob_start_len", 0),
    ]


def test_top_k_ids_and_text_only_where_asked():
    ask = LogprobAsk(
        logprob_start_len=[3, 7],
        top_logprobs_num=5,
        token_ids_logprob=[[1, 2], [3]],
        return_text_in_logprobs=True,
    )
    got = ask.body_fields()
    assert got["top_logprobs_num"] == 5 and got["token_ids_logprob"] == [[1, 2], [3]]
    assert got["logprob_start_len"] == [3, 7] and got["return_text_in_logprobs"] is True
    assert "top_logprobs_num" not in LogprobAsk(top_logprobs_num=0).body_fields()
