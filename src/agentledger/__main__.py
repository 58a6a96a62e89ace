"""`python -m agentledger` runs the command-line interface (as the `agentledger` script does)."""

from agentledger._entry import console

if __name__ == "__main__":
    console()
