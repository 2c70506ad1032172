"""``python -m council.report RUN_DIR``: write the run's report.html (see :mod:`council.report.background`)."""

import sys

from council.report.page import write_report

if __name__ == "__main__":
    write_report(sys.argv[1])
