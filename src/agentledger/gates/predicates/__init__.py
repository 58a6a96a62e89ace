"""Trace predicates: checks evaluated on stored runs, shared by prompt variants and sentinel suites.

`evaluate` evaluates a predicate on a run; `forms` holds the forms that read the shell log and the
report, `judged` the forms that read a run's scores; `run_view` is one stored run as they read it.
"""
