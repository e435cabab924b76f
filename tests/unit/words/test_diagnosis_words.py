"""Golden words: one text per finding, step, suspect, command and evidence kind (issue 60: the
readings are tested on kinds and figures, the wording here). A changed text here is a changed
output: the views, the reports and the JSON all show these words."""

import pytest

from kltui.readings.diagnosis_parts import EvidenceKind, StepKind, SuspectKind
from kltui.readings.findings import Finding
from kltui.readings.verdict import Diagnosis
from kltui.words.advice import command, step, suspect
from kltui.words.diagnosis import label, said
from kltui.words.evidence import line
from tests.unit.words.cases import COMMANDS, EVIDENCE, HEADLINES, STEPS, SUSPECTS, B, S

GOLDEN_LABELS = {
    Finding.IMPORTED: "training-inference mismatch in 3 of 20",
    Finding.PENDING: "no helper finished yet",
    Finding.NOTHING_TESTED: "inconclusive: no helper tested its path (prefill_cache_hit not tested (did not run))",
    Finding.SAMPLING: "no kernel verdict: temperature 0.7 > 0, so k3 measures sampling, not kernels (prefill and decode may score different draws)",
    Finding.EXACT: "non-finite logprobs at the same positions on both sides in match (a numeric fault, see evidence); otherwise bit-identical: prefill and decode agree exactly in every helper (conditions 1 and 2 hold on the paths tested; not run (not asked for): decode_cache_hit on the samples compared); but prefill_cache_hit fails its gate (too few cache hits) [rests on match 32/32, decode_cache_hit 30/32 samples scored]",
    Finding.EXACT_WHERE_TESTED: "inconclusive: bit-identical where tested (match); condition 1 holds on match's shapes; condition 2 is not established: prefill_cache_hit not tested (did not run) [rests on match 32/32, decode_cache_hit 30/32 samples scored]",
    Finding.BASELINE_NOT_TESTED: "inconclusive: decode_cache_hit diverges but match was not tested (did not run): kernel noise and a state bug cannot be told apart [rests on match 32/32, decode_cache_hit 30/32 samples scored]",
    Finding.STATE_BUG: "condition 2 (state bug): match is bit-identical but prefill_cache_hit and decode_cache_hit diverge beyond chance, so the kernels agree and the fault is in prefix restore on a radix-cache hit (KV written by prefill); prefill_cache_hit not tested (did not run) [rests on match 32/32, decode_cache_hit 30/32 samples scored]",
    Finding.STATE_UNCLEAR: "inconclusive: match is bit-identical and decode_cache_hit differs in too few samples to tell a state bug from noise that every path shares and match missed by chance (p=0.035); prefill_cache_hit not tested (did not run) [rests on match 32/32, decode_cache_hit 30/32 samples scored]",
    Finding.STRAY_ULPS: "stray ulps only: match is bit-identical and decode_cache_hit differs at rounding level (3.000e-12), below the 1e-09 floor where no state bug sits: not condition 2; prefill_cache_hit not tested (did not run) [rests on match 32/32, decode_cache_hit 30/32 samples scored]",
    Finding.STATE_BUG_FIRST: "condition 2 first (state bug): decode_cache_hit is orders of magnitude above match (6.900e-01 vs 6.000e-13) while match is within its gate: a state bug on reuse of decode-written KV (radix hit past the prompt: window/SWA/mamba state or decode-side KV layout); match's own kernel noise (condition 1) is small beside it; prefill_cache_hit not tested (did not run) [rests on match 32/32, decode_cache_hit 30/32 samples scored]",
    Finding.BOTH: "conditions 1 and 2: kernel noise in every helper (match 3.810e-04) and prefill_cache_hit beyond it on the same prompts: a state bug on prefix restore on a radix-cache hit (KV written by prefill); fix condition 1 first, its noise hides the rest; prefill_cache_hit not tested (did not run) [rests on match 32/32, decode_cache_hit 30/32 samples scored]",
    Finding.BROAD_EXCESS: "inconclusive: decode_cache_hit fails its gate; cause undetermined: match diverges (3.810e-04) and decode_cache_hit is above match in 29 of 32 samples (signed-rank p=2.5e-07), typically x9.51, but not beyond a x3 drift at p<0.00025 (p=0.00077): a broad excess that is neither shown to be a state bug nor the drift that longer contexts give kernel noise; prefill_cache_hit not tested (did not run) [rests on match 32/32, decode_cache_hit 30/32 samples scored]",
    Finding.FEW_FAR_ABOVE: "inconclusive: match diverges (3.810e-04) and decode_cache_hit is far above it on 3 samples and far below on 0 (sign test p=0.0039): what a state bug in a few samples looks like, too few to tell from chance; prefill_cache_hit not tested (did not run) [rests on match 32/32, decode_cache_hit 30/32 samples scored]",
    Finding.TOO_FEW_COMMON: "inconclusive (n too small): match diverges (1.000e-05), and whether decode_cache_hit adds a state bug cannot be told on 8 common samples (at least 12 needed); prefill_cache_hit not tested (did not run) [rests on match 32/32, decode_cache_hit 30/32 samples scored]",
    Finding.MATCH_PATH_ONLY: "condition 1 on match's path only: match diverges (1.000e-05) while prefill_cache_hit and decode_cache_hit are bit-identical, so the restored-prefix paths agree and a kernel is shape-variant only on the cold prefill-then-decode path; prefill_cache_hit not tested (did not run) [rests on match 32/32, decode_cache_hit 30/32 samples scored]",
    Finding.CACHE_NOT_TESTED: "condition 1: match diverges (1.000e-05); condition 2 not tested: prefill_cache_hit ran but compared nothing, so whether a state bug hides under this noise is unknown; prefill_cache_hit not tested (did not run) [rests on match 32/32, decode_cache_hit 30/32 samples scored]",
    Finding.DETERMINISTIC_SHAPE: "condition 1 with deterministic inference on: match and decode_cache_hit still diverge (prefill_cache_hit exact) (match 3.810e-04): a kernel on the decode path is still shape-variant; deterministic inference fixes the reduction order, not the shape; prefill_cache_hit not tested (did not run) [rests on match 32/32, decode_cache_hit 30/32 samples scored]",
    Finding.BATCH_VARIANCE: "condition 1 (batch variance): match diverges (1.000e-05) and decode_cache_hit is not above it on the same prompts beyond chance (p<0.00025) nor beyond a x3 drift, nor spread wider than it: kernels give different results for prefill and decode shapes; match fails the gate; prefill_cache_hit not tested (did not run) [rests on match 32/32, decode_cache_hit 30/32 samples scored]",
    Finding.DIRECT_STATE: "condition 2 (state bug) on 3 samples (#5, #17, #26): match stays at rounding level on every sample (9.900e-13) while decode_cache_hit reaches 4.900e-04 on the same prompts, orders of magnitude beyond what rounding gives: a state bug on reuse of decode-written KV (radix hit past the prompt: window/SWA/mamba state or decode-side KV layout); prefill_cache_hit not tested (did not run) [rests on match 32/32, decode_cache_hit 30/32 samples scored]",
    Finding.FAR_ABOVE: "inconclusive: match diverges (1.000e-05) and decode_cache_hit is orders of magnitude above it on 3 of 32 samples (#5, #17, #26) and on none the other way: too few to tell from chance, and not kernel noise until told; prefill_cache_hit not tested (did not run) [rests on match 32/32, decode_cache_hit 30/32 samples scored]",
    Finding.NOT_EXCLUDED: "inconclusive: match diverges (1.000e-05): a kernel on the decode path is still shape-variant with deterministic inference on (condition 1); no state bug is found on prefill_cache_hit and decode_cache_hit, but none would have been found reliably at this spread: a state bug is not excluded; prefill_cache_hit not tested (did not run) [rests on match 32/32, decode_cache_hit 30/32 samples scored]",
    Finding.RESTORE_STATE: "condition 2 (state bug): match differs only in exactly the 4 samples whose decode reused at least 4 cached tokens (#9, #10, #11, #13) and is bit-identical in the 12 that reused fewer, so the kernels agree and the divergence follows the reused cache; prefill_cache_hit diverges beyond chance against match's exact samples: the fault is in prefix restore on a radix-cache hit (KV written by prefill), not in the kernels; prefill_cache_hit not tested (did not run) [rests on match 32/32, decode_cache_hit 30/32 samples scored]",
    Finding.RESTORE_UNCLEAR: "inconclusive: match differs only in exactly the 2 samples whose decode reused at least 5 cached tokens (#3, #4) and is bit-identical in the 4 that reused fewer: a state bug on the restore rather than kernel noise, unless chance put every difference there (p=0.33); prefill_cache_hit not tested (did not run) [rests on match 32/32, decode_cache_hit 30/32 samples scored]",
    Finding.WINDOW_STATE: "condition 2 (state bug): match differs only in exactly the 4 samples whose decode passed the 64-token sliding window (#2, #4, #5, #6) and is bit-identical in the 4 that stayed within it, so the kernels agree and the divergence follows the window; decode_cache_hit diverges beyond chance against match's exact samples: the fault is in the sliding window's eviction during decode, not in the kernels; prefill_cache_hit not tested (did not run) [rests on match 32/32, decode_cache_hit 30/32 samples scored]",
    Finding.WINDOW_UNCLEAR: "inconclusive: match differs only in 2 of the 3 samples whose decode passed the 64-token sliding window (#5, #14) and is bit-identical in the 13 that stayed within it: a state bug on the window rather than kernel noise, unless chance put every difference there (p=0.0087); prefill_cache_hit not tested (did not run) [rests on match 32/32, decode_cache_hit 30/32 samples scored]",
}
GOLDEN_STEPS = [
    "read the evidence for why each helper compared nothing, fix that and re-run",
    "re-run with --temperature 0 for a verdict on conditions 1 and 2",
    "cover the samples that missed: read the evidence for why they did, fix that and re-run",
    "cover those paths: run the helpers not tested, and read the evidence for why the others compared nothing or failed",
    "decide it with more samples (`--samples 128`), more like the differing ones (see evidence): noise shows on match too, a state bug keeps to its path",
    "isolate the trigger: run the same prompts on a second server that changes one setting (page size, radix cache) with `kltui check --server A --server B` and read cross_server (bit-identical values across configs mean a deterministic logic fault, not a race); then probe the reused state of the divergent requests (slot, claimed cached length) directly",
    "relaunch with --enable-deterministic-inference (off on this server) and re-run; what survives it is a shape-variant kernel to find with `kltui dumps`",
    "/server_info does not say whether deterministic inference is on: check the launch flags; with it on, what survives is a shape-variant kernel to find with `kltui dumps`",
    "run match too, on a server that flushes (`--helpers match,prefill_cache_hit,decode_cache_hit`)",
    "decide it with more samples (`--samples 128`), `--repeat 3` (a state bug repeats on the same samples, noise moves) or `--stress light`",
    "decide it with more samples (`--samples 128`): a shift of x9.51 that is real passes the x3-drift test as samples grow; then: relaunch with --enable-deterministic-inference (off on this server) and re-run; what survives it is a shape-variant kernel to find with `kltui dumps`",
    "decide it with more prompts like the affected ones (see evidence): at least 12 samples far above match and none below reach p<0.00025; `--repeat 3` also tells: a state bug repeats on the same samples",
    "re-run with more samples (`--samples 32`); then: /server_info does not say whether deterministic inference is on: check the launch flags; with it on, what survives is a shape-variant kernel to find with `kltui dumps`",
    "nothing to fix in this noise (1.2e-12, far below its threshold of 1.000e-03), but prefill_cache_hit ran and tested nothing (see its note); make that path reachable and re-run",
    "nothing to fix for the gate: 1.2e-12 is far below its threshold of 1.000e-03. This rounding noise matters only where bitwise equality is needed (e.g. RL rollouts that must reproduce the trainer's logprobs); there, run `kltui dumps --server 127.0.0.1:30000 --dump-dir DIR` to find the shape-variant kernel",
    "find the kernel: relaunch this server with SGLang's dumper hooks and run `kltui dumps --server 127.0.0.1:30000 --dump-dir DIR`; the first module whose inputs are bit-identical and whose output differs is the shape-variant kernel",
    "fix the records named",
]
GOLDEN_SUSPECTS = [
    "deterministic inference is off: GEMMs and reductions choose tiles and split counts by batch shape, so prefill and decode round differently (expected noise)",
    "decode vs extend attention in the triton attention backend: one query against many takes another kernel or code path; a reduction over the KV range whose blocking follows the query count or the sequence length (split-KV) reduces the same token in another order (fix the shape, e.g. a fixed split size, not only the order)",
    "tp 2: all-reduce whose algorithm or tree follows the message size (a prefill of many tokens vs a decode step of one)",
    "chunked prefill 8192: the fresh prefill of prompt + output (up to 9000 tokens) runs in chunks, so later chunks use extend attention over a cached prefix",
    "CUDA graph is on: decode replays graphs captured at padded batch sizes; dumper hooks do not run inside a replay, so confirm the divergence with --disable-cuda-graph --disable-prefill-cuda-graph before dumping",
    "kernels outside batch_invariant_ops: deterministic inference swaps aten ops; custom kernels that never go through aten stay shape-dependent",
    "prefix restore on a radix-cache hit (KV written by prefill)",
    "page-granular restore (page size 16): hits end on page boundaries",
    "the decode checkpoint save (every 256 tokens, --mamba-track-interval): the state saved while decoding is what turn 2 restores",
    "the conv/SSM checkpoint restore (prefill checkpoints every 64 tokens, the chunk size): a hit restores the recurrent state saved at the last checkpoint",
    "the conv/SSM checkpoint restore: a hit restores the recurrent state saved at the last checkpoint",
    "the sliding-window eviction (128-token window): pages leave the window as decoding passes it, and a restore must bring back only the window's KV",
]
GOLDEN_COMMANDS = [
    "kltui dumps --server 127.0.0.1:30000 --dump-dir DIR",
    "kltui check --server 127.0.0.1:30000 --server OTHER_HOST:PORT --helpers match,decode_cache_hit",
    "kltui check --server 127.0.0.1:30000 --samples 128",
    "kltui import x",
]
GOLDEN_EVIDENCE = [
    "match: 8/32 samples differ, avg_kl_div 1.200e-05, max k3 3.000e-03, first divergence sample 4 @ 17",
    "server reports: deterministic inference on, cuda graph on, page size 16",
    "protocol fault, not numerics: a logprob above 0",
    "decode_cache_hit: not tested: only 1 of 8 samples scored (at least 4 needed to count as a test of its path) (says nothing about its path)",
    "prefill_cache_hit: all 2 skipped samples have prompts of at most 16 tokens, the server's page size, and cached_tokens 0: the radix cache keeps whole pages only, so a prompt no longer than a page leaves nothing to hit; prompts longer than 16 tokens (or a server with --page-size 1) test this path",
    "decode_cache_hit: all 3 skipped samples hit whole 16-token pages only (cached_tokens 0, 32), none past the first turn's prompt: with page size 16, 8 generated tokens rarely fill a page past the prompt; --max-new-tokens 32 (twice the page size) gives every sample one",
    "prefill_cache_hit: 32 of 32 samples missed their hit, and the 32 hit requests' inputs hold 6,135 tokens where the server's KV pool holds 4,096 (max_total_num_tokens): every sample is warmed before the first hit, so the radix cache can evict the earliest before their turn; --samples 21 or fewer, shorter prompts (--max-prompt-tokens), or a larger pool (--mem-fraction-static, or the server alone on its GPU) test this path",
    "match: 3 non-finite logprobs (NaN or inf) at the same positions in prefill and decode: #3 @ 1, 2; #7 @ 0: a numeric fault in the model's output on both paths, not a prefill/decode difference; these positions are left out of the diagnosis",
    "prefill_cache_hit stays at or below the 1e-09 stray-ulp floor (avg_kl_div), where no state bug sits: rounding on that path's shapes",
    "prefill_cache_hit: 8 of 32 samples differ (100 of 512 tokens), match's 32 nor decode_cache_hit's 32 samples none: were they noise shared by every path (a sample at a time: a difference carries forward to its later tokens), all of them would miss those with chance p=7.9e-05 (a state bug needs p<0.00025)",
    "decode_cache_hit vs match on 32 common samples: higher in 29, lower in 2, equal in 1 (signed-rank p=2.5e-07); typical per-sample ratio x9.51 (beyond a x3 drift: p=0.00077); far above the typical ratio in 3, far below in 0 (sign test p=0.0039); spread wider than match's by 0.3 (log means' variance; sign-flip p=0.02); a state bug needs p<0.00025 in the shift or the sign test, or p<0.000125 in the spread test with a spread beyond 0.6 (what a drift within x3 can add, twice)",
    "decode_cache_hit is above match beyond chance but by x9.51 per sample, within the x3 drift that longer or different contexts give kernel noise: kernel noise",
    "decode_cache_hit: far above match on #5 (prompt 40, cached 32), #17 (prompt 44, cached 40), #26; every one has prompt + generated >= 200 (the others <= 180)",
    "decode_cache_hit: divergence is concentrated in 3 of 32 requests: #5 (prompt 40, cached 32), #17 (prompt 44, cached 40); compare their prompt length and cached_tokens with the passing ones",
    "prefill_cache_hit: prompt tokens past the last full page (prompt_len % page size 16): divergent {1, 3}, passing {0, 5, 7}",
    "decode_cache_hit: every divergent sample differs from the first generated token, above the tail threshold there in 2 of 3: the state the decode started from (prompt and decode-written KV, or attention over it) was already wrong when generation began",
    "decode_cache_hit: every divergent sample differs from the first generated token, but at rounding level there (below the tail threshold in every one), as kernel noise does: where it starts says nothing about the state",
    "decode_cache_hit: every divergent sample differs from the first generated token, above the tail threshold there in 1 of 4 and below it in the rest: a large first-token difference in some, rounding in others",
    "decode_cache_hit: divergence starts at the first generated token in 2 of 4 divergent samples and later in 2 (median position 40, earliest 33): something during decode in those (window hand-off, checkpoint rotation, batch composition)",
    "decode_cache_hit: divergence starts mid-generation (median position 40, earliest 33): something during decode (window hand-off, checkpoint rotation, batch composition)",
    "decode_cache_hit: rules out a state bug in >= 42 of 128 samples at >= x10 its noise (found in >= 95% of plants into this run's own per-sample values, each sample's two sides swapped at random); fewer samples are not excluded",
    "decode_cache_hit: no state bug is ruled out: even one on all 12 samples at x10 its noise would not be found in 95% of runs at this run's spread",
    "decode_cache_hit: a state bug making >= 8 of 32 samples differ would read condition 2; one on fewer would show as a difference, read inconclusive",
    "decode_cache_hit: bit-identical on 4 samples, too few for the one-path test to call even all 4 differing beyond chance: a state bug there would show as a difference, never as condition 2",
    "for match's divergence: relaunch with --enable-deterministic-inference (off on this server) and re-run; what survives it is a shape-variant kernel to find with `kltui dumps`",
    "rollout: 3 records differ",
    "match: its decode reused at least 4 cached tokens in 4 of 16 samples and exactly those differ (#9, #10, #11, #13); the 12 that reused fewer are bit-identical: noise shared by every path would put every difference there with chance p=0.00055 (a state bug needs p<0.00025)",
    "match: its decode reused at least 6 cached tokens in 3 of 19 samples and exactly those differ (#16, #17, #18); the 16 that reused fewer are bit-identical: noise shared by every path would put every difference there with chance p=0.00012 (a state bug needs p<0.00025); but they are also the longest prompts (p=0.00024 by length alone): noise that grows with a sample's length would fall there too, so the cache is not told from the length; prompts of one length decide it",
    "prefill_cache_hit: prompt_len % 64 (the chunk): divergent {8, 27}, passing {21, 23, 29}: no remainder in common",
    "prefill_cache_hit: prompt_len % 256 (the track interval): divergent {72, 91}, passing {23, 72}",
    "decode_cache_hit: what each hit restored (cached_tokens against the checkpoints: prefill every 64 tokens, decode every 256): divergent 11 a decode checkpoint, 1 a prefill chunk boundary; passing 3 nothing, 1 a position off the checkpoint grid",
    "match: 11 of 12 diverge from the first token past the 128-token window; 1 of 12 diverges elsewhere: the window handoff (the window's eviction), not the restore",
    "decode_cache_hit: 2 of 4 diverge from the first generated token; 2 of 4 diverge from the first token past a 256-token track boundary",
    "decode_cache_hit: 0 of 16 samples crossed a 256-token track-interval boundary while decoding: never exercised (--max-new-tokens 235 would)",
    "match: 8 of 16 samples generated past the 64-token sliding window (--max-new-tokens 45 would take every one past it)",
    "match: 16 of 16 samples generated past the 64-token sliding window",
    "match: its decode passed the 64-token sliding window in 4 of 8 samples and exactly those differ (#2, #4, #5, #6); the 4 that stayed within it are bit-identical: noise shared by every path would put every difference there with chance p=0.014, and start each at or after its window handoff with chance p=0.0031 (a state bug needs both p<0.00025)",
    "MoE (8 experts, top-2): a router's small logits difference can flip an expert and become nats on a single token, so read the top-1 flips and the tail beside the mean: decode_cache_hit max k3 2.900e-01 against avg_kl_div 2.700e-03, 12 tokens above the tail threshold; a dense model's threshold does not carry over",
    "MoE (8 experts, top-2): a router's small logits difference can flip an expert and become nats on a single token, so read the top-1 flips and the tail beside the mean: match max k3 2.280e+01 against avg_kl_div 3.670e-01, 928 tokens above the tail threshold; top-1 flips (the prefill's top-1 is not the token the decode chose) at 6 of 63 positions in the drill-down windows of 3 samples, 5 of the 36 above the tail threshold; a dense model's threshold does not carry over",
    "3 of 6 samples differ between trainer and rollout (3 of 48 counted tokens)",
]


@pytest.mark.parametrize("finding", list(Finding))
def test_each_finding_has_its_golden_headline(finding):
    d = Diagnosis(S, finding, None, HEADLINES[finding], basis=B)
    assert label(d) == GOLDEN_LABELS[finding]


@pytest.mark.parametrize(("i", "s"), enumerate(STEPS))
def test_each_step_has_its_golden_words(i, s):
    assert step(s) == GOLDEN_STEPS[i]


@pytest.mark.parametrize(("i", "s"), enumerate(SUSPECTS))
def test_each_suspect_has_its_golden_words(i, s):
    assert suspect(s) == GOLDEN_SUSPECTS[i]


@pytest.mark.parametrize(("i", "c"), enumerate(COMMANDS))
def test_each_command_has_its_golden_words(i, c):
    assert command(c) == GOLDEN_COMMANDS[i]


@pytest.mark.parametrize(("i", "e"), enumerate(EVIDENCE))
def test_each_evidence_record_has_its_golden_line(i, e):
    assert line(e) == GOLDEN_EVIDENCE[i]


def test_every_kind_is_covered_by_a_golden_text():
    assert {e.kind for e in EVIDENCE} == set(EvidenceKind)
    assert {s.kind for s in STEPS} == set(StepKind)
    assert {s.kind for s in SUSPECTS} == set(SuspectKind)


def test_the_fold_leaves_the_statistics_out_and_keeps_the_plain_lines():
    d = Diagnosis(S, Finding.STATE_BUG, 2, HEADLINES[Finding.STATE_BUG], evidence=tuple(EVIDENCE))
    full, plain = said(d), said(d, explain=False)
    assert len(full.evidence) == len(EVIDENCE)
    kept = [line(e) for e in EVIDENCE if not e.statistic]
    assert plain.evidence == kept and len(kept) < len(EVIDENCE)
    assert plain.label == full.label


def test_a_verdict_says_what_decoding_never_crossed_of_the_geometry():
    from dataclasses import replace

    from tests.unit.words.cases import EVIDENCE as E

    never = next(e for e in E if e.kind == "geometry coverage" and not e.crossed)
    basis = replace(B, uncrossed=(never,))
    d = Diagnosis(S, Finding.EXACT, 0, HEADLINES[Finding.EXACT], basis=basis)
    assert label(d) == (
        "non-finite logprobs at the same positions on both sides in match (a numeric fault, see "
        "evidence); otherwise bit-identical: prefill and decode agree exactly in every helper "
        "(conditions 1 and 2 hold on the paths tested; not run (not asked for): decode_cache_hit "
        "on the samples compared); but prefill_cache_hit fails its gate (too few cache hits); no "
        "sample crossed the 256-token track interval while decoding in decode_cache_hit "
        "(--max-new-tokens 235 would) [rests on match 32/32, decode_cache_hit 30/32 samples "
        "scored]"
    )
