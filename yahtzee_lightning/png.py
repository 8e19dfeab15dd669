"""Figures written as 256-colour palette PNGs. A plot has a few flat colours and their anti-aliased
edges; a palette keeps every line and fill as drawn (only an edge pixel may move by a shade) at about
a third of the bytes of matplotlib's RGBA file, and the studies' figures are committed: the tree's
size budget (tests/test_repository_size.py) goes to records, not pixels."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from .atomic import written_whole


def write_palette_png(data: bytes, path: str | Path) -> None:
    """``data`` (a PNG's bytes) written to ``path`` as a palette PNG on white (a transparent pixel is
    the page behind it), its text chunks kept (``Legend``, ``Axes``: what a test reads), whole: a
    crash leaves the old file."""
    from PIL import Image, PngImagePlugin

    image = Image.open(io.BytesIO(data))
    info = PngImagePlugin.PngInfo()
    for key, value in getattr(image, "text", {}).items():
        info.add_text(key, value)
    page = Image.new("RGBA", image.size, "white")
    flat = Image.alpha_composite(page, image.convert("RGBA")).convert("RGB")
    # Median cut keeps the colours that cover the most pixels (the flat ones) exact; no dithering,
    # which would speckle the fills.
    palette = flat.quantize(256, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
    with written_whole(path) as partial:
        palette.save(partial, format="PNG", optimize=True, pnginfo=info)


def save_png(fig: Any, path: str | Path, dpi: int = 100, text: dict[str, str] | None = None) -> None:
    """A matplotlib figure saved to ``path`` as a palette PNG, ``text`` in its text chunks."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=dpi, metadata=text or {})
    write_palette_png(buffer.getvalue(), path)
