"""Judges: criteria packs, the rules and LLM judges, verdicts and scores stored beside runs."""
