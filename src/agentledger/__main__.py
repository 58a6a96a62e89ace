"""`python -m agentledger` runs the command-line interface."""

from agentledger.cli import main

if __name__ == "__main__":
    main()
