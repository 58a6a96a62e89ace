"""Understanding shell command lines: the bash parser, command knowledge, SQL classification.

One knowledge base, read by everything that needs to know what a command does: the gated shell
(`agentledger.runner.shell_gate`) decides with it, the rules judge reads reports and shell logs
with it, and the fixture property `shell_commands` classifies proposed commands with it.

    >>> from agentledger.shell.classifier import classify
    >>> classify("iptables -F f2b-sshd").category
    'destructive'

Nothing heavy is imported here: every gated command pays this package's start-up.
"""
