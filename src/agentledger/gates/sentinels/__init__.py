"""Sentinel suites: fixed scenarios with pass criteria that give go/no-go before a model migration.

`sentinel` evaluates a suite against stored runs; `run` makes the runs a candidate lacks;
`protocol` is the suite as a document people follow.
"""
