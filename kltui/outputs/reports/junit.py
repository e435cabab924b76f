"""JUnit XML for CI systems: one testsuite, one testcase per helper and server (`helper[server]`).

A threshold miss is a <failure>; a server or protocol fault is an <error>; a vacuous helper is
<skipped>, never a silent pass. ElementTree escapes markup; characters that XML 1.0 cannot hold
at all (NUL, most control characters) are replaced here, since a server may send them.
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET

from kltui import __version__, fmt
from kltui.metrics.summary import Summary
from kltui.outputs.reports.common import (
    Origin,
    cross_fields,
    cross_rows,
    flip_properties,
    helper_seconds,
    max_location,
    run_time,
    timestamp,
    verdict,
)
from kltui.outputs.reports.multiturn_section import multiturn_details, multiturn_failure
from kltui.readings.diagnosis import diagnose
from kltui.readings.fleet import fleet
from kltui.readings.fleet_model import Fleet
from kltui.session.helper_view import HelperView
from kltui.session.servers import SUMMARY_KEYS
from kltui.session.store import HelperState, SessionStore
from kltui.untrusted import xml_text
from kltui.words.diagnosis import said
from kltui.words.fleet import (
    aside_words,
    failure_line,
    odd_replica_failure,
    summary_line,
)
from kltui.words.report_notes import cut_short_in

SUITE = "kltui"
IDENTITY_KEYS = ("url", *SUMMARY_KEYS, "error")


def _sub(parent: ET.Element, tag: str, text: str | None = None, **attrs: object) -> ET.Element:
    el = ET.SubElement(parent, tag, {k: xml_text(v) for k, v in attrs.items()})
    if text:
        el.text = xml_text(text)
    return el


def failure_message(s: Summary) -> str:
    """Why a helper failed, as one line."""
    if s.hit_failure:
        return str(s.hit_failure)
    avg, thr = s.avg_kl_div, s.threshold
    if not s.scored:
        return "no sample was scored"
    rel = ">=" if isinstance(avg, float) and isinstance(thr, float) and avg >= thr else "vs"
    return f"avg_kl_div={fmt.sci(avg)} {rel} threshold={fmt.sci(thr)}"


def details(st: HelperState) -> str:
    """The numbers a reviewer needs to judge the case without opening the HTML report."""
    v = HelperView.of(st)
    s = v.summary
    boot = s.bootstrap_95 or [None, None]
    lines = [
        f"helper {st.helper} on {st.server}",
        f"avg_kl_div {fmt.sci(s.avg_kl_div)} "
        f"(threshold {fmt.sci(v.threshold)}, "
        f"95% bootstrap {fmt.sci(boot[0])} to {fmt.sci(boot[1])})",
        f"scored {v.scored}/{v.samples}, skipped {v.skipped}",
        f"tokens over tau {fmt.pct(s.tail_fraction)} ({(s.n_tail or 0)})",
        f"max k3 {fmt.sci(s.max_k3)} at {fmt.position(max_location(s))}",
        f"first divergence {fmt.position(s.first_divergence)}",
    ]
    lines += [f"{label} {value}" for label, value in cross_rows(s)]
    lines += multiturn_details(st)
    return "\n".join(lines)


def helper_case(suite: ET.Element, st: HelperState, origin: Origin | None) -> str:
    """Add one helper's test case to the suite; return which JUnit count it adds to."""
    seconds = helper_seconds(st)
    case = _sub(
        suite,
        "testcase",
        classname=f"{SUITE}.{st.helper}",
        name=f"{st.helper}[{st.server}]",
        time=f"{seconds or 0.0:.3f}",
    )
    v = HelperView.of(st)
    status, s = v.result, v.summary
    if status == "fail":
        message = failure_message(s) + multiturn_failure(st)
        _sub(case, "failure", details(st), message=message, type="threshold")
        return "failures"
    if status in ("error", "invalid"):
        msg = s.error or f"helper stopped in phase {st.phase}"
        _sub(case, "error", details(st), message=msg, type=status)
        return "errors"
    if status == "incomplete":
        msg = cut_short_in(st.phase)
        _sub(case, "error", details(st), message=msg, type="incomplete")
        return "errors"
    if status == "vacuous":
        _sub(case, "skipped", message=s.reason or "vacuous: nothing was measured")
        return "skipped"
    if status != "pass":
        _sub(case, "error", details(st), message=f"unknown helper status {status!r}")
        return "errors"
    _sub(case, "system-out", details(st))
    return "passed"


def setup_cases(suite: ET.Element, store: SessionStore) -> list[str]:
    """Faults before any helper ran: an unreachable server, a failed tokenization."""
    kinds = []
    for s in store.identities():
        if s.error:
            case = _sub(
                suite, "testcase", classname=f"{SUITE}.setup", name=f"connect[{s.get('url')}]"
            )
            _sub(case, "error", message=s.error, type="connect")
            kinds.append("errors")
    for p in store.problems:
        if p.fatal and p.helper is None and p.phase != "connect":
            name = f"{p.phase or 'run'}[{p.source}]"
            case = _sub(suite, "testcase", classname=f"{SUITE}.setup", name=name)
            _sub(case, "error", message=p.message, type=p.phase or "run")
            kinds.append("errors")
    return kinds


def replica_cases(suite: ET.Element, f: Fleet) -> list[str]:
    """A fleet run: one test case per replica, failed when it is not bit-identical to the
    largest agreement group, skipped when it was not compared on every path; under
    `--fleet-require identical` also the fleet's own case."""
    kinds = []
    if f.require == "identical":  # the fleet's own case: the gate CI asked for
        case = _sub(suite, "testcase", classname=f"{SUITE}.fleet", name="identical")
        if (failure := failure_line(f)) is None:
            kinds.append("passed")
        else:
            _sub(case, "failure", message=failure, type="fleet-require")
            kinds.append("failures")
    groups = f.groups
    main = set(groups[0].replicas) if groups else set()
    odd = {o.replica: o for o in f.odd}
    for url in f.replicas:
        case = _sub(suite, "testcase", classname=f"{SUITE}.fleet", name=f"replica[{url}]")
        if url in f.uncompared:
            _sub(case, "skipped", message=f"not compared: {aside_words(f.uncompared[url])}")
            kinds.append("skipped")
        elif url not in odd and url in f.not_fully_compared:  # no pass on a subset of paths
            _sub(
                case,
                "skipped",
                message=f"not fully compared: {aside_words(f.not_fully_compared[url])}",
            )
            kinds.append("skipped")
        elif url in main:
            kinds.append("passed")
        else:
            msg = odd_replica_failure(odd[url], len(groups))
            _sub(case, "failure", message=msg, type="fleet")
            kinds.append("failures")
    return kinds


def properties(suite: ET.Element, store: SessionStore, origin: Origin | None) -> None:
    """Add the run's properties (versions, verdict, prompts, servers, cross figures) to the suite."""
    props = _sub(suite, "properties")
    run = store.run
    items: list[tuple[str, object]] = [("kltui.version", __version__), ("verdict", verdict(store))]
    if run is not None:
        items += [("run_id", run.run_id), ("recorded_by", run.kltui_version)]
        ps = run.prompt_set or {}
        items += [
            (f"prompt_set.{k}", ps[k]) for k in ("source", "n", "tokens", "sha256") if k in ps
        ]
        for i, s in enumerate(run.servers):
            items += [(f"server.{i}.{k}", s[k]) for k in IDENTITY_KEYS if s.get(k) is not None]
    for st in store.helpers.values():
        for k, v in (cross_fields(st.summary) or {}).items():
            if isinstance(v, dict):
                v = f"sample {v.get('sample')} @ {v.get('position')}"
            elif isinstance(v, list):
                v = ",".join(map(str, v))
            items.append((f"{st.helper}.{k}", "none" if v is None or v == "" else v))
        if cross_fields(st.summary) is not None:
            fm = st.summary.figures.get("flip_margins") if st.summary else None
            for k, v in flip_properties(fm):
                items.append((f"{st.helper}.{k}", "none" if v is None else v))
            c = st.summary.figures.get("contract") if st.summary else None
            if isinstance(c, dict):
                items.append((f"{st.helper}.logprob_contract", c.get("status")))
                items.append((f"{st.helper}.logprob_contract_setting", c.get("setting") or "none"))
    if origin is not None and origin.recording:
        items.append(("recording", origin.recording))
    for line, _ in origin.reruns if origin is not None else ():
        head, _, tail = line.partition(": ")
        items.append((head.replace(" ", "_"), tail))
    if origin is not None and origin.reruns:
        same = [s for _, s in origin.reruns]
        all_same = None if None in same else all(same)
        items.append(("repeat.all_identical", "unknown" if all_same is None else all_same))
    for name, value in items:
        if isinstance(value, bool):  # JSON spelling, not Python's
            value = "true" if value else "false"
        _sub(props, "property", name=name, value=value)


def junit_report(store: SessionStore, origin: Origin | None = None) -> str:
    """The JUnit XML report of a run."""
    root = ET.Element("testsuites", name=SUITE)
    started = run_time(store, origin)
    suite = _sub(root, "testsuite", name=SUITE)
    properties(suite, store, origin)
    kinds = setup_cases(suite, store)
    kinds += [helper_case(suite, st, origin) for st in store.helpers.values()]
    fl = fleet(store)
    kinds += replica_cases(suite, fl) if fl is not None else []
    v = verdict(store)
    if v != "pass" and not any(k in ("failures", "errors") for k in kinds):
        # Keep CI honest: a run that did not pass never shows as an all-green suite.
        case = _sub(suite, "testcase", classname=f"{SUITE}.setup", name="run")
        why = "the recording holds no run" if store.run is None else f"run verdict {v}"
        _sub(case, "error", message=why, type=v)
        kinds.append("errors")
    total = sum(helper_seconds(st) or 0.0 for st in store.helpers.values())
    counts = {k: kinds.count(k) for k in ("failures", "errors", "skipped")}
    attrs = {"tests": len(kinds), **counts, "time": f"{total:.3f}"}
    for el in (root, suite):
        for k, val in attrs.items():
            el.set(k, str(val))
    if isinstance(started, int | float) and math.isfinite(started):
        suite.set("timestamp", timestamp(started).replace(" UTC", "").replace(" ", "T"))
    lines = [line for line, _ in origin.reruns] if origin is not None else []
    for d in diagnose(store):
        text = said(d)
        lines.append(f"{d.server}: {text.label}")
        if text.next_step:
            lines.append(f"  next: {text.next_step}")
    lines += [
        f"{'error' if p.fatal else 'warning'}: {p.source}: {p.message}" for p in store.problems
    ]
    if fl is not None:
        lines.append(f"fleet: {summary_line(fl)}")
    if lines:
        _sub(suite, "system-out", "\n".join(lines))
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
