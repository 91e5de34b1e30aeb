"""Bytes to facts: log sources, line attribution, the rule filter engine and templating."""
