"""report.html drawn by a child process while the command line prints the run's results and stops Ray: about two
seconds of matplotlib, taken off the path the user waits on. The child is started as the grading ends, so
that it imports matplotlib while the run is scored, and is then told which run to draw
(``python -m council.report``, reading the run folder's path on its standard input)."""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path


class ReportDrawing:
    """A child ready to draw one run's report: :meth:`draw` hands it the run, :meth:`wait` says whether the page
    was written, :meth:`stop` ends it (a child never told to draw exits, drawing nothing)."""

    def __init__(self) -> None:
        self.path: Path | None = None
        self._errors = tempfile.TemporaryFile()  # noqa: SIM115 - read once the child has ended
        self._proc = subprocess.Popen([sys.executable, "-m", "council.report"], stdin=subprocess.PIPE,
                                      stdout=subprocess.DEVNULL, stderr=self._errors)

    def draw(self, run_dir: Path) -> None:
        self.path = Path(run_dir) / "report.html"
        self._tell(f"{run_dir}\n".encode())

    def _tell(self, line: bytes) -> None:
        assert self._proc.stdin is not None
        try:
            self._proc.stdin.write(line)
            self._proc.stdin.close()
        except (BrokenPipeError, ValueError):  # the child has gone (wait says why) or was told already
            pass

    def wait(self) -> str | None:
        """Wait for the child: None when the report was written, else what went wrong (its last line)."""
        self._tell(b"")
        code = self._proc.wait()
        self._errors.seek(0)
        said = self._errors.read().decode(errors="replace").strip().splitlines()
        return None if code == 0 else (said[-1] if said else f"the report's process exited with {code}")

    def stop(self) -> None:
        """End the child if it is still at work (its page is written atomically: there is none, or a whole one)."""
        self._tell(b"")
        if self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait()
        self._errors.close()
