"""The council's protocol: panels, anonymisation, prompts, verdict parsing and the run configuration."""
