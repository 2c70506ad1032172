"""Starting and resuming a council run."""
