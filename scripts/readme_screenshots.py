"""The README's pictures: the dashboard and a drill-down of a real run, as the `s` key saves
them (Textual's SVG), rendered to PNG with cairosvg and reduced to a small palette.

    python scripts/readme_screenshots.py --server URL [kltui run options...] [--out docs]

Needs `pip install cairosvg pillow`. Without --server it runs on the embedded reference server.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import sys
from pathlib import Path

SIZE = (150, 46)


async def shoot(cfg, out: Path) -> None:
    from kltui.tui.app import KltuiApp
    from kltui.tui.feeds import LiveFeed
    from kltui.tui.screens.drilldown import DrillDown

    app = KltuiApp(LiveFeed(cfg, None))
    async with app.run_test(size=SIZE) as pilot:
        while app.store is None or app.store.finished is None:
            await pilot.pause(0.5)
        app.select_helper(app.helper_keys()[0])
        app.refresh_views(force=True)
        await pilot.pause(1.0)
        save(app.export_screenshot(title="kltui"), out / "dashboard.png")
        await pilot.press("f")  # the first divergence of the helper on screen
        await pilot.press("enter")
        while not isinstance(app.screen, DrillDown):
            await pilot.pause(0.1)
        await pilot.pause(1.0)
        save(app.export_screenshot(title="kltui drill-down"), out / "drilldown.png")
        await pilot.press("q")


def save(svg: str, path: Path) -> None:
    import cairosvg
    from PIL import Image

    # Textual's SVG asks for Fira Code from the web; cairosvg needs a local monospace font
    svg = svg.replace("Fira Code", "DejaVu Sans Mono")
    png = cairosvg.svg2png(bytestring=svg.encode("utf-8"), output_width=1500)
    img = Image.open(io.BytesIO(png)).convert("RGB")
    img = img.quantize(colors=64, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
    img.save(path, optimize=True)
    print(f"{path}: {path.stat().st_size // 1024} KB", file=sys.stderr)


def main() -> int:
    from kltui.cli.options import add_run_options, build_config

    p = argparse.ArgumentParser(description=__doc__)
    add_run_options(p)
    p.add_argument("--out", default="docs", help="folder for the PNGs (docs)")
    args = p.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.server:
        asyncio.run(shoot(build_config(args), out))
        return 0
    from kltui.reference.launcher import ReferenceServer

    with ReferenceServer() as srv:
        args.server = [srv.url]
        asyncio.run(shoot(build_config(args), out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
