"""Running agents into the ledger: scenarios, agent adapters, environments, and the gated shell.

Kept free of imports so that `agentledger.runner.shell_gate` loads quickly.
"""
