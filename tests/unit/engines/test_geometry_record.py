"""The state geometry's recorded form reads back as it was written, and untrusted values read as
unknown."""

from kltui.engines.geometry import (
    Experts,
    MambaState,
    MambaStrategy,
    SlidingWindow,
    Source,
    Sourced,
    StateGeometry,
    StateKind,
)


def _hybrid() -> StateGeometry:
    return StateGeometry(
        page_size=Sourced(1, Source.SERVER_INFO),
        mamba=MambaState(
            MambaStrategy.EXTRA_BUFFER,
            Source.SERVER_INFO,
            Sourced(256, Source.SERVER_INFO),
            Sourced(64, Source.DERIVED),
        ),
        window=SlidingWindow(Sourced(128, Source.MODEL_CONFIG), (0, 2), 4),
        experts=Experts(8, 2, Source.MODEL_CONFIG),
        config_path="/m/config.json",
        known=True,
    )


def test_a_recorded_geometry_reads_back_equal():
    g = _hybrid()
    assert g.kind is StateKind.HYBRID
    assert StateGeometry.of(g.record()) == g


def test_each_part_alone_names_its_kind():
    g = _hybrid()
    assert StateGeometry(mamba=g.mamba).kind is StateKind.MAMBA
    assert StateGeometry(window=g.window).kind is StateKind.SLIDING_WINDOW
    assert StateGeometry(experts=g.experts).kind is StateKind.DENSE


def test_untrusted_values_read_as_unknown():
    bad = {
        "known": "yes",
        "page_size": {"value": "1", "source": "server_info"},
        "mamba": {"strategy": "rm -rf", "track_interval": {"value": 256, "source": "nowhere"}},
        "sliding_window": {"size": None},
        "experts": {"n_experts": True, "source": "config.json"},
    }
    g = StateGeometry.of(bad)
    assert g.known is False and g.page_size is None and g.window is None and g.experts is None
    assert g.mamba is not None and g.mamba.strategy is None and g.mamba.track_interval is None
    assert StateGeometry.of([1, 2]) == StateGeometry()


def test_decode_checkpoints_land_on_sglangs_track_grid():
    g = _hybrid()  # chunk 64, page 1, interval 256
    assert g.track_grid() == 256
    m = g.mamba
    assert m is not None
    fine = MambaState(m.strategy, m.strategy_source, Sourced(16, Source.FLAG), m.chunk_size)
    assert StateGeometry(page_size=g.page_size, mamba=fine).track_grid() == 64  # lcm(64, 1, 16)
    assert StateGeometry(window=g.window).track_grid() is None
