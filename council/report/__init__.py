"""report.html: one self-contained page of figures and tables drawn from a run folder."""
