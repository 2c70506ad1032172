"""``python -m council.cli``: the ``council`` command."""

from council.cli.dispatch import entry

entry()
