"""A server replaced between two runs of --repeat (issue 28): its /server_info, read before each
run, says another process answered, so the runs' difference is not run-to-run
non-determinism (and their equality not determinism)."""

from __future__ import annotations

from kltui.engines.identity import ServerIdentity, process_changes
from kltui.readings.compare import NotComparable, RerunChain, rerun_equality
from kltui.session.store import SessionStore
from tests.reports.synth import URL, HelperSpec, run_events, server


def store_of(events) -> SessionStore:
    st = SessionStore()
    for ev in events:
        st.apply(ev)
    return st


def test_a_server_replaced_between_runs_is_not_run_to_run_nondeterminism():
    specs = [HelperSpec("match")]
    prev = store_of(run_events(specs, servers=[server(random_seed=1)]))
    same = store_of(run_events(specs, servers=[server(random_seed=1)]))
    assert rerun_equality(prev, same).identical is True
    cur = store_of(
        run_events(
            specs,
            servers=[server(startup_time=2.0, random_seed=7, enable_deterministic_inference=True)],
        )
    )
    eq = rerun_equality(prev, cur, run=2)
    assert eq.identical is None and eq.why is NotComparable.REPLACED
    assert (eq.run, eq.previous, eq.first_difference) == (2, 1, None)
    assert eq.to_json(None)["server_replaced"] == {
        URL: {
            "startup_time": [1.0, 2.0],
            "random_seed": [1, 7],
            "enable_deterministic_inference": [False, True],
        }
    }
    a, b = ServerIdentity.of(server(random_seed=1)), ServerIdentity.of(server(random_seed=1))
    assert process_changes(a, b) == {}


def test_the_chain_numbers_the_runs_in_the_reason_and_a_value_object_reads_changed():
    def run(t: float):
        return store_of(run_events([HelperSpec("match")], servers=[server(startup_time={"s": t})]))

    chain = RerunChain()
    assert chain.add(run(1.5)) is None  # the first run has nothing before it
    second, third = chain.add(run(2.5)), chain.add(run(3.5))
    assert second is not None and third is not None
    assert (second.run, second.previous, third.run, third.previous) == (2, 1, 3, 2)
    assert third.identical is None and third.first_difference is None
    assert third.why is NotComparable.REPLACED
    assert third.replaced == {URL: {"startup_time": ({"s": 2.5}, {"s": 3.5})}}


def test_an_older_recording_without_the_key_is_no_evidence_of_a_replacement():
    specs = [HelperSpec("match")]
    old = server()
    del old["startup_time"]
    prev = store_of(run_events(specs, servers=[old]))
    cur = store_of(run_events(specs, servers=[server(startup_time=5.0)]))
    assert rerun_equality(prev, cur).identical is True
