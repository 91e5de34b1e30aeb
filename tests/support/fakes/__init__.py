"""Test doubles that stand in for real LLMs: a local OpenAI-compatible server and a scripted chat model.

They exist so that no test ever reaches a real model (style item 11): both replay a script and record
exactly what they were sent.
"""
