"""Grade model outputs with a council of LLM judges from different vendors, in rooms layered bottom to top."""
