"""report.html drawn by a child process (``python -m council.report RUN_DIR``) while the command line prints
the run's results and stops Ray: about two seconds of matplotlib, taken off the path the user waits on."""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path


class ReportDrawing:
    """One run's report, being drawn; :meth:`wait` says whether it was written, :meth:`stop` ends it."""

    def __init__(self, run_dir: Path) -> None:
        self.path = Path(run_dir) / "report.html"
        self._errors = tempfile.TemporaryFile()  # noqa: SIM115 - read once the child has ended
        self._proc = subprocess.Popen([sys.executable, "-m", "council.report", str(run_dir)],
                                      stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=self._errors)

    def wait(self) -> str | None:
        """Wait for the child: None when the report was written, else what went wrong (its last line)."""
        code = self._proc.wait()
        self._errors.seek(0)
        said = self._errors.read().decode(errors="replace").strip().splitlines()
        self._errors.close()
        return None if code == 0 else (said[-1] if said else f"the report's process exited with {code}")

    def stop(self) -> None:
        """End the child if it is still drawing (its page is written atomically: there is none, or a whole one)."""
        if self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait()
