"""Tests of report.html."""
