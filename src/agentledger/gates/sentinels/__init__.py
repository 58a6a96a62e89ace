"""Sentinel suites: fixed scenarios with pass criteria that give go/no-go before a model migration.

`spec` loads the suite's file; `select` picks the runs each side counts; `evaluate` checks a
candidate against the baseline along the decision tree; `decision` turns a check into a decision
record; `history` lists past checks and flags outcome changes; `run` makes the runs a candidate
lacks; `protocol` is the suite as a document people follow.
"""
