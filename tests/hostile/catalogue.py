"""The faults kltui is tested against, as data: the tests parametrize over these lists and
docs/RELIABILITY.md's tables are generated from them (scripts/gen_reliability_doc.py), so the
document cannot promise a behaviour that no test checks.

A `Case` is one run of `kltui check` against a HostileServer configured by `server`; `phase` is
the kltui phase the one-line message must name, `exit` the exit code, `message` a regex the
line must match.
"""

from __future__ import annotations

from dataclasses import dataclass, field

EXIT_PASS, EXIT_FAIL, EXIT_USAGE, EXIT_SERVER, EXIT_INTERRUPTED = 0, 1, 2, 3, 130


@dataclass(frozen=True)
class Case:
    id: str
    what: str
    server: dict
    phase: str
    exit: int
    message: str
    cfg: dict = field(default_factory=dict)
    # the phase of the server whose requests are counted: a generate is never re-sent
    sent_once: str | None = None
    # a protocol fault: a warning line (the run goes on), the helper `invalid` (exit 3) and
    # the finding of this kind in its summary's `protocol`, never read as numerics
    protocol: str | None = None

    @property
    def fatal(self) -> bool:
        """The line is an error (the run stopped at the fault), not a warning."""
        return self.exit == EXIT_SERVER and self.protocol is None


def _stream(fault: str, what: str, message: str, **kw) -> Case:
    return Case(
        f"{fault}@decode",
        what,
        {"fault": fault, "phase": "decode"},
        "decode",
        EXIT_SERVER,
        message,
        sent_once="decode",
        **kw,
    )


TRANSPORT = [
    Case(
        "refused@connect",
        "connection refused (nothing listens on the port)",
        {},
        "connect",
        EXIT_SERVER,
        r"cannot connect for /health .*after 4 attempts",
    ),
    _stream(
        "reset-mid-stream",
        "TCP reset in the middle of a streamed decode",
        r"connection closed or reset during /generate stream .*after \d+ events",
    ),
    _stream(
        "close-mid-stream",
        "connection closed in the middle of a chunk of a streamed decode",
        r"connection closed or reset during /generate stream .*incomplete chunked read",
    ),
    Case(
        "reset@prefill",
        "TCP reset instead of the replay's answer",
        {"fault": "reset-mid-stream", "phase": "prefill"},
        "prefill",
        EXIT_SERVER,
        r"connection closed or reset during /generate \(",
        sent_once="prefill",
    ),
    Case(
        "timeout@decode",
        "a streamed decode that never starts (request timeout)",
        {"fault": "hang", "phase": "decode"},
        "decode",
        EXIT_SERVER,
        r"no answer to /generate stream within 0\.5 s after 0 events",
        cfg={"request_timeout": 0.5},
        sent_once="decode",
    ),
    Case(
        "timeout@prefill",
        "a replay whose answer never comes (request timeout)",
        {"fault": "hang", "phase": "prefill"},
        "prefill",
        EXIT_SERVER,
        r"no answer to /generate within 0\.5 s",
        cfg={"request_timeout": 0.5},
        sent_once="prefill",
    ),
    Case(
        "timeout@flush",
        "/flush_cache never answers: its timeout plus the request allowance, on every attempt",
        {"fault": "hang", "phase": "flush", "times": 0},
        "flush",
        EXIT_SERVER,
        r"no answer to /flush_cache within 0\.7 s \(after 3 attempts",
        cfg={"request_timeout": 0.5},
    ),
    Case(
        "timeout@connect",
        "/health never answers (each attempt times out, then gives up)",
        {"fault": "hang", "phase": "health", "times": 0},
        "connect",
        EXIT_SERVER,
        r"no answer to /health within 0\.5 s \(after 4 attempts",
        cfg={"request_timeout": 0.5},
    ),
]

HTTP = [
    Case(
        f"http-{status}-{'body' if body else 'empty'}@{phase}",
        f"HTTP {status} {'with a JSON error body' if body else 'with an empty body'} "
        f"on the {phase} request",
        {
            "fault": "http-error",
            "phase": server_phase,
            "status": status,
            "with_body": body,
            "times": 0,  # every attempt: /server_info is retried
        },
        phase,
        EXIT_SERVER,
        rf"answered HTTP {status}: injected HTTP {status}"
        if body
        else rf"answered HTTP {status} [A-Za-z ]+ with an empty body",
        sent_once=server_phase if server_phase in ("decode", "prefill", "tokenize") else None,
    )
    for status, body, phase, server_phase in [
        (500, True, "prefill", "prefill"),
        (500, False, "decode", "decode"),
        (502, True, "tokenize", "tokenize"),
        (502, False, "prefill", "prefill"),
        (503, True, "decode", "decode"),
        (503, False, "connect", "server_info"),
    ]
] + [
    Case(
        "flush-busy@flush",
        "/flush_cache answers 400 (busy) on every attempt",
        {"fault": "flush-busy", "phase": "flush", "times": 0},
        "flush",
        EXIT_SERVER,
        r"/flush_cache answered 400: server is busy \(Cache not flushed because there are "
        r"pending requests.*after 3 attempts",
    ),
    Case(
        "flush-503@flush",
        "/flush_cache answers 503 on every attempt",
        {"fault": "http-error", "phase": "flush", "status": 503, "times": 0},
        "flush",
        EXIT_SERVER,
        r"/flush_cache answered HTTP 503: .*after 3 attempts",
    ),
    Case(
        "sampling-400@decode",
        "400 on sampling_params (SGLang's strict schema)",
        {"fault": "sampling-400", "phase": "decode"},
        "decode",
        EXIT_SERVER,
        r"/generate answered HTTP 400: 1 validation error for SamplingParams sampling_seed",
        sent_once="decode",
    ),
    Case(
        "http-500@warm",
        "HTTP 500 on the warm-up prefill of prefill_cache_hit",
        {"fault": "http-error", "phase": "warm"},
        "warm",
        EXIT_SERVER,
        r"answered HTTP 500",
        cfg={"helpers": ["prefill_cache_hit"]},
        sent_once="warm",
    ),
    Case(
        "reset-mid-stream@turn1",
        "TCP reset during turn 1 of decode_cache_hit (never streamed: nothing is shown live)",
        {"fault": "reset-mid-stream", "phase": "turn1"},
        "turn1",
        EXIT_SERVER,
        r"connection closed or reset during /generate",
        cfg={"helpers": ["decode_cache_hit"]},
        sent_once="turn1",
    ),
]

PAYLOAD = [
    Case(
        "malformed-json@prefill",
        "the replay's answer is not JSON",
        {"fault": "malformed-json", "phase": "prefill"},
        "prefill",
        EXIT_SERVER,
        r"/generate returned malformed JSON",
        sent_once="prefill",
    ),
    Case(
        "malformed-json@connect",
        "/server_info answers with a body that is not JSON",
        {"fault": "malformed-json", "phase": "server_info"},
        "connect",
        EXIT_SERVER,
        r"/server_info returned malformed JSON",
    ),
    _stream(
        "malformed-sse",
        "a line in the stream that is not SSE",
        r"malformed SSE line 'dta: \{this is not an event\}'",
    ),
    _stream(
        "no-done", "a stream that ends without [DONE]", r"ended without \[DONE\] after 18 events"
    ),
    _stream(
        "stream-error",
        "SGLang's in-stream error event",
        r"error event after 2 events: injected: CUDA error",
    ),
    _stream("abort", "a request finished with finish_reason abort", r"aborted request 0"),
    _stream(
        "fewer-logprobs",
        "fewer output logprob entries than tokens (stream)",
        r"has 2 output_ids but 1 output_token_logprobs",
    ),
    _stream(
        "more-logprobs",
        "more output logprob entries than tokens (stream)",
        r"has 2 output_ids but 3 output_token_logprobs",
    ),
    Case(
        "fewer-logprobs@decode-nostream",
        "fewer output logprob entries than tokens (not streamed)",
        {"fault": "fewer-logprobs", "phase": "decode"},
        "decode",
        EXIT_SERVER,
        r"answer 0 has 6 output tokens but 5 output_token_logprobs",
        cfg={"stream": False},
        sent_once="decode",
    ),
    Case(
        "fewer-logprobs@prefill",
        "the replay scores one token fewer than was sent",
        {"fault": "fewer-logprobs", "phase": "prefill"},
        "prefill",
        EXIT_SERVER,
        r"answer 0 has 26 input_token_logprobs for 27 input tokens",
        sent_once="prefill",
    ),
    Case(
        "more-logprobs@prefill",
        "the replay scores one token more than was sent",
        {"fault": "more-logprobs", "phase": "prefill"},
        "prefill",
        EXIT_SERVER,
        r"answer 0 has 28 input_token_logprobs for 27 input tokens",
        sent_once="prefill",
    ),
    Case(
        "token-mismatch@prefill",
        "the replay's ids are shifted by one position (a misaligned answer)",
        {"fault": "token-mismatch", "phase": "prefill"},
        "prefill",
        EXIT_SERVER,
        r"input_token_logprobs\[\d+\] scores token \d+ but token \d+ was sent there "
        r"\(answers out of order or misaligned: \d+ of 27 positions differ\)",
        sent_once="prefill",
    ),
    Case(
        "tail-shift@prefill",
        "the replay's ids at the compared (generated) positions are shifted by one position, "
        "the prompt's are right: every compared id is off, which no per-id quirk explains",
        {"fault": "tail-shift", "phase": "prefill"},
        "score",
        EXIT_SERVER,
        r"sample 0: side A token id \d+ != side B generated id \d+ at position 0 \(misaligned "
        r"logprobs: not the documented quirk",
        sent_once="prefill",
    ),
    Case(
        "stray-output-logprob@prefill",
        "the replay (max_new_tokens 0) answers with an output logprob and no output token (real "
        "SGLang 0.5.23 under load): a warning naming the sample, its input logprobs scored",
        {"fault": "stray-output-logprob", "phase": "prefill"},
        "prefill",
        EXIT_PASS,
        r"the scoring prefill \(max_new_tokens 0\) came back with output_token_logprobs and no "
        r"output token for 1 sample\(s\): sample 0 \(1\); ignored",
        sent_once="prefill",
    ),
    Case(
        "id-quirk@prefill",
        "the replay reports id 0 wherever two ids were sent (real SGLang does so for the last "
        "vocabulary id): a warning, each compared token listed, the run measured",
        {"fault": "id-quirk", "phase": "prefill"},
        "prefill",
        EXIT_PASS,
        r"the server reported another token id than was sent at \d+ prompt position\(s\) in 1 "
        r"sample\(s\) \(sample 0: pos 1: sent \d+, reported 0",
        sent_once="prefill",
    ),
    _stream(
        "token-mismatch",
        "output_ids and the ids in output_token_logprobs disagree",
        r"output_ids disagree with logprob ids",
    ),
    _stream(
        "wrong-order",
        "a streamed batch with its indices reversed",
        r"answer 0 reports prompt_tokens=14 but prompt 0 has 21 tokens",
    ),
    Case(
        "wrong-order@decode-nostream",
        "a batch answer in reverse order (not streamed)",
        {"fault": "wrong-order", "phase": "decode"},
        "decode",
        EXIT_SERVER,
        r"answer 0 reports prompt_tokens=14 but prompt 0 has 21 tokens",
        cfg={"stream": False},
        sent_once="decode",
    ),
    Case(
        "wrong-order@prefill",
        "the replay's batch answer in reverse order",
        {"fault": "wrong-order", "phase": "prefill"},
        "prefill",
        EXIT_SERVER,
        r"answer 0 reports prompt_tokens=20 but prompt 0 has 27 tokens",
        sent_once="prefill",
    ),
    _stream(
        "missing-index",
        "stream chunks of a batch without `index`",
        r"missing or out-of-range index None",
    ),
    _stream(
        "huge",
        "100k tokens streamed for max_new_tokens=6 (stopped at the first chunk)",
        r"index 0 streamed 3125 tokens but max_new_tokens is 6",
    ),
    Case(
        "huge@decode-nostream",
        "100k tokens answered for max_new_tokens=6 (not streamed)",
        {"fault": "huge", "phase": "decode"},
        "decode",
        EXIT_SERVER,
        r"answer 0 has 100000 tokens but max_new_tokens is 6",
        cfg={"stream": False},
        sent_once="decode",
    ),
]

BAD_VALUES = [
    Case(
        f"{fault}@{phase}",
        f"{label} as a scored {'output' if phase == 'decode' else 'input'} logprob (one side "
        "only: a protocol finding, left out of the k3 figures)",
        {"fault": fault, "phase": phase},
        "score",
        EXIT_SERVER,
        rf"protocol fault: NaN/inf logprobs on one side only at 1 position\(s\) of 1 "
        rf"sample\(s\): sample 0 position {pos} \(sample 0 position {pos}: "
        + (rf"prefill -?[0-9.]+, decode {shown}\)" if phase == "decode" else rf"prefill {shown}, ")
        + ".*left out of the k3 figures",
        protocol="one-sided-non-finite",
    )
    for fault, label, shown in [
        ("logprob-null", "null", r"NaN \(null\)"),
        ("logprob-nan", "NaN", r"NaN \(null\)"),
        ("logprob-inf", "+Infinity", r"\+inf"),
        ("logprob-neg-inf", "-Infinity", "-inf"),
        ("logprob-9999", "-9999.0", r"-9999 \(the -inf sentinel\)"),
    ]
    for phase, pos in [("decode", 1), ("prefill", 5)]
]

PROTOCOL = [
    Case(
        "rotate@decode",
        "decode answers rotated between prompts, without prompt_tokens: the echoed request id "
        "(meta_info.id) gives them away",
        {"fault": "rotate", "phase": "decode", "prompt_tokens": False},
        "decode",
        EXIT_SERVER,
        r"answer 0 is the answer to prompt 1 \(its meta_info.id 'kltui-[0-9a-f]+-1' is the rid "
        r"prompt 1 was sent with\): answers rotated or swapped between requests",
        sent_once="decode",
    ),
    Case(
        "rotate@decode-nostream",
        "the same, not streamed",
        {"fault": "rotate", "phase": "decode", "prompt_tokens": False},
        "decode",
        EXIT_SERVER,
        r"answer 0 is the answer to prompt 1 .*answers rotated or swapped between requests",
        cfg={"stream": False},
        sent_once="decode",
    ),
    Case(
        "rotate-unverifiable@decode",
        "decode answers rotated between prompts, with neither prompt_tokens nor the request id "
        "echoed: nothing can tell, and kltui says so instead of reading a divergence",
        {"fault": "rotate", "phase": "decode", "prompt_tokens": False, "echo_rid": False},
        "decode",
        EXIT_SERVER,
        r"\[match/decode\] protocol fault: answers' prompts cannot be verified for 3 "
        r"sample\(s\) \(0, 1, 2\): the server reports neither prompt_tokens nor the request "
        r"id \(rid\) it was sent as meta_info.id",
        protocol="prompt-unverified",
    ),
    Case(
        "logprob-positive@all",
        "+10 on every logprob of sample 0 in decode and replay alike (bit-identical, and "
        "impossible)",
        {"fault": "logprob-positive", "times": 0},
        "score",
        EXIT_SERVER,
        r"\[match/score\] protocol fault: logprobs above 0 \(impossible: a logprob is log p <= "
        r"0\) at 6 position\(s\) of 1 sample\(s\): sample 0 position 0, .* \(largest \+9\.",
        protocol="logprob-above-zero",
    ),
]

RESTART = [
    Case(
        "restart@flush",
        "the server restarts between decode and replay (caught at the flush)",
        {"fault": "restart", "phase": "flush", "occurrence": 2},
        "flush",
        EXIT_SERVER,
        r"server restarted or changed during the run \(startup_time changed\); results of this "
        r"helper are invalid",
    ),
    Case(
        "restart@prefill",
        "the server restarts while the replay runs (caught right after it)",
        {"fault": "restart", "phase": "prefill"},
        "prefill",
        EXIT_SERVER,
        r"server restarted or changed during the run \(startup_time changed\)",
    ),
    Case(
        "restart@next-helper",
        "the server restarts between two helpers: the first stands, the second is invalid",
        {"fault": "restart", "phase": "flush", "occurrence": 3},
        "flush",
        EXIT_SERVER,
        r"\[prefill_cache_hit/flush\] server restarted",
        cfg={"helpers": ["match", "prefill_cache_hit"]},
    ),
]

# the drill-down's extras come after the gate (HelperFinished is out): a test of its own
TOPK_EXTRAS = Case(
    "topk-sum@extras",
    "the drill-down's top-k alternatives sum above 1: a warning naming sample and positions, "
    "that top-k not shown; the gate (a pass here) never reads top-k",
    {"fault": "topk-sum", "phase": "prefill", "occurrence": 2, "drift": 1e-9},
    "extras",
    EXIT_PASS,
    r"\[match/extras\] protocol fault: sample \d: top-k probabilities sum above 1 "
    r"\(impossible\) at position\(s\) 0, 1, .*\(largest sum 4\.756\); its top-k is not shown",
    cfg={"extras": 1},
)

CHECK_CASES = TRANSPORT + HTTP + PAYLOAD + BAD_VALUES + PROTOCOL + RESTART


@dataclass(frozen=True)
class Retry:
    id: str
    what: str
    server: dict
    counted: str  # server phase whose requests are counted
    extra: int  # requests of that phase beyond a clean run's


RETRIES = [
    Retry(
        "health-503-twice",
        "/health answers 503 twice (server starting), then 200",
        {"fault": "http-error", "phase": "health", "status": 503, "times": 2},
        "health",
        2,
    ),
    Retry(
        "health-timeout-once",
        "/health does not answer once",
        {"fault": "hang", "phase": "health"},
        "health",
        1,
    ),
    Retry(
        "server-info-502-once",
        "/server_info answers 502 once",
        {"fault": "http-error", "phase": "server_info", "status": 502},
        "server_info",
        1,
    ),
    Retry(
        "flush-busy-once",
        "/flush_cache answers 400 (busy) once",
        {"fault": "flush-busy", "phase": "flush"},
        "flush",
        1,
    ),
    Retry(
        "flush-timeout-once",
        "/flush_cache does not answer once (its timeout)",
        {"fault": "hang", "phase": "flush"},
        "flush",
        1,
    ),
    Retry(
        "flush-reset-once",
        "/flush_cache connection reset once",
        {"fault": "reset-mid-stream", "phase": "flush"},
        "flush",
        1,
    ),
]

# kltui phase -> how the test holds it open: server knobs and the helper that has the phase
INTERRUPT_PHASES = {
    "connect": ({"fault": "hang", "phase": "health", "times": 0}, "match", "health"),
    "tokenize": ({"fault": "hang", "phase": "tokenize", "times": 0}, "match", "tokenize"),
    "flush": ({"fault": "hang", "phase": "flush", "times": 0}, "match", "flush"),
    "warm": ({"fault": "hang", "phase": "warm", "times": 0}, "prefill_cache_hit", "warm"),
    # turn 1 is never streamed (nothing shown live): held open like any other request
    "turn1": ({"fault": "hang", "phase": "turn1", "times": 0}, "decode_cache_hit", "turn1"),
    "decode": ({"stream_delay": 0.2}, "match", "decode"),
    "prefill": ({"fault": "hang", "phase": "prefill", "times": 0}, "match", "prefill"),
}
INTERRUPT_SIGNALS = ("SIGINT", "SIGTERM")


@dataclass(frozen=True)
class BadFile:
    id: str
    what: str
    name: str
    content: bytes
    option: str  # the command-line option that takes the file
    message: str  # regex on the single stderr line, after "kltui: error: "


BAD_FILES = [
    BadFile(
        "yaml-invalid",
        "invalid YAML (unclosed list)",
        "c.yaml",
        b"samples: 4\nhelpers: [match\n",
        "--config",
        r"c\.yaml:3: invalid YAML: expected ',' or '\]'",
    ),
    BadFile(
        "yaml-tab",
        "a tab where YAML needs spaces",
        "c.yaml",
        b"samples: 4\n\tseed: 1\n",
        "--config",
        r"c\.yaml:2: invalid YAML: found character '\\t'",
    ),
    BadFile(
        "yaml-unknown-key",
        "an unknown key (did-you-mean)",
        "c.yaml",
        b"samples: 4\nmax_new_token: 8\n",
        "--config",
        r"c\.yaml:2: unknown key 'max_new_token' \(did you mean 'max_new_tokens'\?\)",
    ),
    BadFile(
        "yaml-unknown-threshold-key",
        "an unknown key inside a thresholds entry (did-you-mean)",
        "c.yaml",
        b"thresholds:\n  - model: '*'\n    kl_dvi: 0.1\n",
        "--config",
        r"c\.yaml:3: unknown key 'kl_dvi' in thresholds entry \(did you mean 'kl_div'\?\)",
    ),
    BadFile(
        "yaml-wrong-type",
        "a wrong type (text where a count goes)",
        "c.yaml",
        b"samples: many\n",
        "--config",
        r"c\.yaml:1: 'samples' must be a positive integer, got 'many'",
    ),
    BadFile(
        "yaml-bool-for-int",
        "a boolean where a count goes",
        "c.yaml",
        b"max_new_tokens: yes\n",
        "--config",
        r"c\.yaml:1: 'max_new_tokens' must be a positive integer, got True",
    ),
    BadFile(
        "yaml-not-a-mapping",
        "a YAML list instead of settings",
        "c.yaml",
        b"- samples\n- 4\n",
        "--config",
        r"c\.yaml:1: top level must be a mapping of settings",
    ),
    BadFile(
        "yaml-binary",
        "a config that is not UTF-8",
        "c.yaml",
        b"\xff\xfe\x00s\x00",
        "--config",
        r"c\.yaml: cannot read as UTF-8 text",
    ),
    BadFile(
        "prompts-empty",
        "an empty prompt file",
        "p.txt",
        b"",
        "--prompts",
        r"p\.txt: contains no prompts; expected one prompt per line",
    ),
    BadFile(
        "prompts-blank",
        "a prompt file of blank lines",
        "p.txt",
        b"\n  \n\t\n",
        "--prompts",
        r"p\.txt: contains no prompts",
    ),
    BadFile(
        "prompts-binary",
        "a binary file named .txt",
        "p.txt",
        b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR",
        "--prompts",
        r"p\.txt: binary file \(NUL bytes\); expected UTF-8 text",
    ),
    BadFile(
        "prompts-utf16",
        "a UTF-16 text file",
        "p.txt",
        "hello\n".encode("utf-16"),
        "--prompts",
        r"p\.txt: UTF-16 text; save the file as UTF-8",
    ),
    BadFile(
        "prompts-latin1",
        "a text file that is not UTF-8",
        "p.txt",
        "caf\xe9\n".encode("latin-1"),
        "--prompts",
        r"p\.txt: not UTF-8 text \(byte 3\); save the file as UTF-8",
    ),
    BadFile(
        "prompts-jsonl-as-json",
        "JSON Lines in a .json file",
        "p.json",
        b'{"text": "a"}\n{"text": "b"}\n',
        "--prompts",
        r"p\.json:2: invalid JSON \(Extra data\); it looks like JSON Lines: rename the file "
        r"to \.jsonl",
    ),
    BadFile(
        "prompts-json-as-jsonl",
        "a JSON list spread over lines in a .jsonl file",
        "p.jsonl",
        b'[{"text": "a"},\n {"text": "b"}]\n',
        "--prompts",
        r"p\.jsonl:1: invalid JSON .*; it looks like one JSON document: rename the file to "
        r"\.json",
    ),
    BadFile(
        "prompts-text-as-json",
        "plain text in a .json file",
        "p.json",
        b"hello world\nsecond prompt\n",
        "--prompts",
        r"p\.json:1: invalid JSON .*; it looks like plain text: use a \.txt file",
    ),
    BadFile(
        "prompts-bad-record",
        "a JSONL record without a prompt field",
        "p.jsonl",
        b'{"text": "ok"}\n{"instruction": "x"}\n',
        "--prompts",
        r"p\.jsonl:2: record has none of 'input_ids', 'text', 'prompt', 'context'\+'question'",
    ),
    BadFile(
        "prompts-id-overflow",
        "a token id too large for any vocabulary",
        "p.json",
        b"[[1, 2, 99999999999999999999999]]",
        "--prompts",
        r"p\.json: token id 99999999999999999999999 is out of range",
    ),
    BadFile(
        "prompts-deep-json",
        "JSON nested 100k levels deep",
        "p.json",
        b"[" * 100_000,
        "--prompts",
        r"p\.json: JSON nested too deeply to be a prompt file",
    ),
    BadFile(
        "prompts-extension",
        "a prompt file with an unknown extension",
        "p.csv",
        b"a,b\n",
        "--prompts",
        r"p\.csv: unknown extension; use \.txt, \.jsonl or \.json",
    ),
]


@dataclass(frozen=True)
class Named:
    """A behaviour checked by one named test (module::function) rather than a case list."""

    test: str
    what: str


NAMED = [
    Named(
        "test_check_faults.py::test_clean_run_is_bit_exact_and_passes",
        "a healthy server: every helper passes with k3 exactly 0 (the baseline of every fault)",
    ),
    Named(
        "test_check_faults.py::test_honest_divergence_is_exit_1_not_an_error",
        "logprobs that differ between prefill and decode: exit 1, not a server error",
    ),
    Named(
        "test_check_faults.py::test_huge_but_legitimate_answer_is_measured",
        "100k tokens asked for and delivered: measured and recorded, not rejected",
    ),
    Named(
        "test_check_faults.py::test_restart_between_helpers_keeps_the_first_and_invalidates"
        "_the_second",
        "a restart between helpers: the finished helper stands, the next is marked invalid",
    ),
    Named(
        "test_check_faults.py::test_topk_sum_above_one_in_the_extras_is_a_protocol_warning",
        TOPK_EXTRAS.what,
    ),
    Named(
        "test_check_faults.py::test_rid_ties_answers_to_prompts_without_prompt_tokens",
        "a server without prompt_tokens that echoes the request id: answers verified, the run "
        "passes",
    ),
    Named(
        "test_check_faults.py::test_generate_is_never_resent_even_on_a_transient_status",
        "a 503 on /generate (decode, replay, tokenize) is not retried",
    ),
    Named(
        "test_check_faults.py::test_backoff_really_waits_between_attempts",
        "the backoff between attempts is real (0.25, 0.5, 1 s)",
    ),
    Named(
        "test_check_faults.py::test_api_key_less_server_answers_401_with_a_hint",
        "401 on /health: says an API key is wanted, does not retry",
    ),
    Named(
        "test_untrusted_text.py::test_server_identity_strings_are_shown_literally",
        "Rich markup, emoji codes, escape sequences and bidi overrides in model_path/version",
    ),
    Named(
        "test_untrusted_text.py::test_error_bodies_are_shown_literally",
        "the same in an HTTP error body",
    ),
    Named(
        "test_untrusted_text.py::test_stream_error_events_are_shown_literally",
        "the same in an in-stream error event",
    ),
    Named(
        "test_untrusted_text.py::test_server_strings_through_the_cli",
        "the same through the real CLI console",
    ),
    Named(
        "test_untrusted_text.py::test_api_key_never_leaves_the_header",
        "the API key (--api-key or KLTUI_API_KEY), echoed back by the server in error bodies "
        "and model_path at every phase, is in no output, recording or JSON",
    ),
    Named(
        "test_untrusted_text.py::test_a_key_cut_by_the_length_limit_is_still_redacted",
        "a long key echoed in a long message: no prefix of it survives the shortening",
    ),
    Named(
        "test_parsers_property.py::test_sse_line_parser_returns_or_raises_sse_error",
        "property: any text as an SSE line gives an event or SSEError",
    ),
    Named(
        "test_parsers_property.py::test_line_splitter_agrees_with_bytes_split_or_raises_on_long"
        "_lines",
        "property: any byte stream splits into the same lines as bytes.split, or SSEError",
    ),
    Named(
        "test_parsers_property.py::test_parse_result_returns_or_raises_parse_error",
        "property: a damaged real /generate answer gives a result or ParseError",
    ),
    Named(
        "test_parsers_property.py::test_stream_assembler_returns_or_raises_parse_error",
        "property: damaged, reordered real stream chunks give results or ParseError",
    ),
    Named(
        "test_parsers_property.py::test_prompt_files_of_random_bytes",
        "property: any bytes as a .txt/.jsonl/.json prompt file give prompts or PromptFileError",
    ),
    Named(
        "test_parsers_property.py::test_recording_with_a_damaged_event",
        "property: a recording with a damaged event gives events or RecordingError",
    ),
    Named(
        "test_parsers_property.py::test_recording_cut_anywhere_reads_up_to_the_cut",
        "property: a recording cut at any byte reads back up to the cut",
    ),
]
