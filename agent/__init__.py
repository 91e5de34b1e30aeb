"""Deciding: the event sequence, the deterministic diagnosis, and (opt-in) retrieval and the LLM layer."""
