"""What the command line prints and shows: consoles and tables, progress, results, run folders, help and exit codes."""
