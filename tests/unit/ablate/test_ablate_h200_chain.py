"""The H200 `kltui ablate --chain` run of docs/FIELD_NOTES.md section 10 (real SGLang 0.5.17,
Llama-3.1-8B-shaped random bf16, base triton + deterministic inference, vary
attention-backend=fa3, 16 x 256), read back from what the device call returned:
tests/data/h200-chain (the --json result, the console, the base's recording)."""

from __future__ import annotations

from pathlib import Path

from kltui.dumps import chain
from kltui.dumps.chain_result import ChainKind
from kltui.session.fold import fold
from kltui.session.recording import read_recording
from kltui.words.chain import doc_lines
from tests.json_contract import read_json

DATA = Path(__file__).parents[2] / "data" / "h200-chain"


def test_the_h200_chain_went_from_the_setting_to_the_module_and_the_op():
    doc = read_json(DATA / "ablate.json", "ablation")  # the schema holds for a real run
    assert doc["exit_code"] == 0 and doc["ablation"]["verdict"]["kind"] == "localized"
    ch = doc["chain"]
    assert ch["status"] == "module" and ch["step"] is None
    assert ch["setting"] == "attention-backend=fa3"
    assert ch["module"] == "model.layers.0.self_attn.attn"
    assert ch["module_status"] == "first-divergent" and ch["dumps"]["inputs_identical"] is True
    assert ch["dumps"]["decode_step"] == 1 and ch["dumps"]["max_abs_diff"] == 2**-8
    # torch's SDPA at the module's shapes (32 heads x 128, N = 2 and 40) is bit-identical
    assert ch["op"] == "sdpa_decode" and ch["probe"]["identical"] is True
    assert [r["n"] for r in ch["probe"]["results"]] == [2, 40]
    # relaunched without CUDA graphs, match read the same value to the last bit as the sweep's
    # base with graphs (graph replay runs the same kernels, as in section 8)
    base = doc["ablation"]["configs"][0]["helpers"]["match"]["avg_kl_div"]
    assert ch["reproduced"] is True and ch["match_avg_kl_div"] == base
    # what that probe means, as the chain now reads it (the run printed the bare result):
    # torch's op cleared, the server's own kernel of its triton backend the suspect
    argv = doc["sweep"]["configs"][0]["argv"]
    assert chain.probe_kind(ch["probe"]["identical"]) is ChainKind.SERVER_KERNEL
    assert chain.backend_of(argv) == "triton"
    # recorded before the kinds: its words are kept as they were
    assert doc_lines(ch) == [*ch["steps"], ch["line"]]


def test_the_h200_base_recording_reads_back_to_the_sweeps_figures():
    stores = []
    fold(read_recording(str(DATA / "base.kltui.jsonl")), stores.append)
    (store,) = stores
    doc = read_json(DATA / "ablate.json", "ablation")
    want = {h: v["avg_kl_div"] for h, v in doc["ablation"]["configs"][0]["helpers"].items()}
    got = {st.helper: st.summary.avg_kl_div for st in store.by_server() if st.summary}
    assert got == want and min(got.values()) > 8e-3
