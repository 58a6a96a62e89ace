"""Understanding shell command lines: the bash parser, command knowledge, SQL classification.

One knowledge base, read by everything that needs to know what a command does: the gated shell
(`agentledger.runner.shell_gate`) decides with it, the rules judge reads reports and shell logs
with it, and the fixture property `shell_commands` classifies proposed commands with it.

    >>> from agentledger.shell.classifier import classify
    >>> classify("iptables -F f2b-sshd").kind
    'destructive'

The public API: `classifier.classify` (the class of a line and its parts), `classifier.walk`
with a `classifier.CommandVisitor` (every simple command the walk meets, for readers such as
`simple.simple_commands`), `knowledge.load_knowledge` (the data: `data/commands.yaml`), and
`sql.classify_sql` / `sql.analyse_sql` (SQL, parsed by sqlglot only when a command holds some).
`scripts` reads the programs commands take as text (sed, awk, mongosh --eval) and
`expansions` what bash evaluates again (arithmetic, subscripts, `${...}` forms).

Nothing heavy is imported here: every gated command pays this package's start-up.
"""
