"""Where an ablation sweep's time went, in words (`words/ablation_timing.timing_line`): one
golden per shape (the split alone, kltui's share unknown, and the --chain's steps after it)."""

from __future__ import annotations

from pathlib import Path

from kltui.ablate.sweep import Sweep, Timing
from kltui.words.ablation_timing import timing_line

T = Timing(total_s=100.0, help_s=1.5, start_s=40.0, run_s=50.0, stop_s=6.0, kltui_s=2.5)


def test_the_time_split():
    assert timing_line(Sweep(Path("/s"), "launch"), T) == (
        "time 100.0 s: server starts 40.0 s, helper runs 50.0 s, server stops 6.0 s, --help "
        "1.5 s, kltui 2.50 s (2.50%)"
    )


def test_an_unknown_total_and_share():
    t = Timing(total_s=None, help_s=0.0, start_s=1.0, run_s=2.0, stop_s=0.5, kltui_s=None)
    assert timing_line(Sweep(Path("/s"), "attach"), t) == (
        "time –: server starts 1.0 s, helper runs 2.0 s, server stops 0.5 s, --help 0.0 s, kltui –"
    )


def test_the_chains_steps_follow():
    chain = {"timing": {"total_s": 30.0, "relaunch_s": 12.0, "match_s": 8.0, "dumps_s": 9.0}}
    sweep = Sweep(Path("/s"), "launch", chain=chain)
    assert timing_line(sweep, T) == (
        "time 100.0 s: server starts 40.0 s, helper runs 50.0 s, server stops 6.0 s, --help "
        "1.5 s, kltui 2.50 s (2.50%); then the chain 30.0 s (relaunch 12.0 s, match 8.0 s, "
        "dumps capture and analysis 9.0 s)"
    )
