"""Figures as palette PNGs (yahtzee_lightning.png): a third of the bytes, the figure as drawn, its
text kept, nothing half-written; and every committed figure is one (the tree's size budget)."""

import io
import subprocess
from pathlib import Path

import numpy as np
import pytest

from yahtzee_lightning.png import save_png, write_palette_png

pytest.importorskip("matplotlib", reason="figures need the [study] extra, which the test extra installs")
from PIL import Image  # noqa: E402  (matplotlib's own dependency)

CHECKOUT = Path(__file__).resolve().parents[1]
PNG_PALETTE = 3  # the IHDR colour type of an indexed image


def _figure():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3))
    x = np.linspace(0, 10, 200)
    for k in range(12):  # more colours than a plot has, and their anti-aliased edges
        ax.plot(x, np.sin(x + k / 2) + k / 4, label=f"curve {k}")
        ax.fill_between(x, k / 4 - 0.1, k / 4 + 0.1, alpha=0.2)
    ax.legend(fontsize=5)
    return fig


def _rgba(fig) -> tuple[np.ndarray, int]:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=100)
    return np.asarray(Image.open(io.BytesIO(buffer.getvalue())).convert("RGB"), dtype=int), len(buffer.getvalue())


def test_a_figure_is_written_as_a_palette_png_with_its_text_at_a_fraction_of_the_bytes(tmp_path):
    fig = _figure()
    drawn, rgba_bytes = _rgba(fig)
    save_png(fig, tmp_path / "f.png", text={"Legend": "curve 0 | curve 1"})
    image = Image.open(tmp_path / "f.png")
    assert image.mode == "P"
    assert image.info["Legend"] == "curve 0 | curve 1"
    assert (tmp_path / "f.png").stat().st_size < 0.6 * rgba_bytes
    kept = np.asarray(image.convert("RGB"), dtype=int)
    assert kept.shape == drawn.shape
    # The figure as drawn: most pixels exact (the page, the lines), the rest a shade off (this
    # figure's twelve overlapping translucent fills are harder than a report's).
    assert (kept == drawn).all(axis=2).mean() > 0.85
    assert np.abs(kept - drawn).mean() < 1.0


def test_a_transparent_pixel_is_the_white_page_and_a_crash_leaves_the_old_file(tmp_path, monkeypatch):
    clear = Image.new("RGBA", (8, 8), (0, 0, 0, 0))
    buffer = io.BytesIO()
    clear.save(buffer, format="PNG")
    write_palette_png(buffer.getvalue(), tmp_path / "page.png")
    page = np.asarray(Image.open(tmp_path / "page.png").convert("RGB"))
    assert (page == 255).all()

    before = (tmp_path / "page.png").read_bytes()

    def broken(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(Image.Image, "save", broken)
    with pytest.raises(OSError, match="disk full"):
        write_palette_png(buffer.getvalue(), tmp_path / "page.png")
    assert (tmp_path / "page.png").read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["page.png"]  # no partial file left


def test_every_committed_figure_is_a_palette_png():
    listing = subprocess.run(["git", "-C", str(CHECKOUT), "ls-files", "*.png"], capture_output=True, check=True)
    paths = listing.stdout.decode().split()
    assert paths  # the checkout's own figures, not an empty listing
    rgba = [p for p in paths if (CHECKOUT / p).read_bytes()[25] != PNG_PALETTE]
    assert not rgba, f"figures not written by yahtzee_lightning.png.save_png (RGBA, 3x the bytes): {rgba}"
