"""The wheel carries the recipes (``conf/``) and the small shipped agents (``checkpoints/``) inside the
package, as ``yahtzee_lightning/_shipped/``: an installed package finds them by name from any folder
(``yahtzee_lightning/shipped.py``). Everything else is in ``pyproject.toml``."""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent


class BuildWithShipped(build_py):
    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):  # an editable install reads the checkout's own folders
            return
        target = Path(self.build_lib) / "yahtzee_lightning" / "_shipped"
        for name in ("conf", "checkpoints"):
            shutil.copytree(ROOT / name, target / name, dirs_exist_ok=True)


setup(cmdclass={"build_py": BuildWithShipped})
