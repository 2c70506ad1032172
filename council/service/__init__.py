"""The grading service: other benchmarks submit jobs over HTTP (``council serve``)."""
