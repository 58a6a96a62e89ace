"""Scoring stored and fresh outputs: property scorers for fixtures, trace predicates over runs."""
