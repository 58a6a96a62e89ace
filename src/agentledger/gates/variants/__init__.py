"""Prompt variants: a spec (`spec`), its acceptance rules (`acceptance`), the runs it still lacks
(`run`), and the decision record of an evaluation (`decision`).
"""
