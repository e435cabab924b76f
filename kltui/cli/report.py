"""`kltui report FILE --html/--md/--json/--junit OUT`, and the same outputs for `kltui check`.

Imports stay inside functions: `kltui --help` builds every subparser and must stay fast.
"""

from __future__ import annotations

import argparse
import sys

OUTPUTS = (
    ("html", "self-contained HTML report (inline CSS, no script, no network)"),
    ("md", "Markdown summary, short enough to paste into a pull request"),
    ("junit", "JUnit XML: one test case per helper and server"),
)
REPORT_FORMATS = tuple(name for name, _ in OUTPUTS)  # a new format is one OUTPUTS entry


def add_report_options(parser: argparse.ArgumentParser) -> None:
    """--html/--md/--junit OUT, shared by `report` and `check` ("-" writes to stdout)."""
    for name, text in OUTPUTS:
        parser.add_argument(f"--{name}", metavar="OUT", help=text)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the arguments of `kltui report` to its parser."""
    parser.add_argument(
        "recording",
        metavar="FILE",
        help="a kltui recording (.kltui.jsonl), or a `kltui ablate` sweep folder",
    )
    add_report_options(parser)
    parser.add_argument("--json", metavar="OUT", help="the JSON result `check --json` writes")
    parser.epilog = (
        "Without an output option the Markdown summary goes to stdout. "
        "Exit 0 when the reports are written, 2 when the recording cannot be read."
    )


def load_store(path: str):
    """Folds a recording into a SessionStore (its last run); raises RecordingError (a
    UsageError) naming the file when it is missing, not a recording, or written by a newer
    kltui."""
    from kltui.outputs.reports.common import Origin
    from kltui.session.fold import fold
    from kltui.session.recording import read_recording

    rec = read_recording(path)
    store = fold(rec)[-1]
    created = rec.header.get("created")
    origin = Origin(
        recording=path,
        truncated=rec.truncated,
        created=created if isinstance(created, int | float) else None,
    )
    return store, origin


def write_reports(store, *, html=None, md=None, junit=None, json=None, origin=None) -> list[str]:
    """Writes every requested report; returns the paths written. `check` calls this through
    run_check's extra_outputs once the run has ended (passed, failed or interrupted)."""
    written = []
    if json:
        from kltui.outputs.reports.common import write_json

        write_json(store, json)
        written.append(json)
    if html:
        from kltui.outputs.reports.html import html_report
        from kltui.session.jsonfile import write_output

        write_output(html, html_report(store, origin))
        written.append(html)
    if md:
        from kltui.outputs.reports.md import md_report
        from kltui.session.jsonfile import write_output

        write_output(md, md_report(store, origin))
        written.append(md)
    if junit:
        from kltui.outputs.reports.junit import junit_report
        from kltui.session.jsonfile import write_output

        write_output(junit, junit_report(store, origin))
        written.append(junit)
    return written


def report_writer(args: argparse.Namespace, recording: str | None = None):
    """For `check`: the extra_outputs callable writing --html/--md/--junit, or None if none was
    asked for. Output folders are checked now, so a typo fails before a long run, not after."""
    from pathlib import Path

    from kltui.errors import UsageError
    from kltui.outputs.reports.common import Origin

    outputs = {name: getattr(args, name, None) for name in REPORT_FORMATS}
    if not any(outputs.values()):
        return None
    for path in outputs.values():
        if path and path != "-" and not Path(path).resolve().parent.is_dir():
            raise UsageError(f"{path}: cannot write report (no such directory)")

    def write(store, reruns=()):
        origin = Origin(recording=recording, reruns=tuple(reruns))
        return write_reports(store, origin=origin, **outputs)

    return write


def cmd_report(args: argparse.Namespace) -> int:
    """Run `kltui report`: write reports from a recording (or a `kltui ablate` sweep folder)."""
    from pathlib import Path

    if Path(args.recording).is_dir():
        return _sweep_report(args)
    store, origin = load_store(args.recording)
    outputs = {name: getattr(args, name, None) for name in (*REPORT_FORMATS, "json")}
    if not any(outputs.values()):
        outputs["md"] = "-"
    written = write_reports(store, origin=origin, **outputs)
    for path in written:
        if path != "-":
            print(f"kltui report: wrote {path}", file=sys.stderr)
    return 0


def _sweep_report(args: argparse.Namespace) -> int:
    """`kltui report FOLDER`: a `kltui ablate` sweep folder, as `kltui ablate --replay`."""
    from kltui.outputs.ablation import replay_folder
    from kltui.run.sweep_manifest import load

    return replay_folder(
        load(args.recording), md=args.md, junit=args.junit, json=args.json, html=args.html
    )
