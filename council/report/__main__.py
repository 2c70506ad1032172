"""``python -m council.report``: read a run folder's path on standard input, then write its report.html; end of
input without a path draws nothing (see :mod:`council.report.background`). matplotlib and the sections are
imported first, while the command line is still grading or scoring the run, so that only the drawing is left
once the path arrives."""

import sys

import council.report.sections  # noqa: F401 - imported now, while the run is not done yet
from council.core.process_exit import exit_process
from council.report.page import write_report

if __name__ == "__main__":
    run_dir = sys.stdin.readline().strip()
    if run_dir:
        write_report(run_dir, workers=2)  # the command line has printed its results: both cores are free
    exit_process(0)  # the command waits for this process to end
