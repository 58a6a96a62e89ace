"""promptfoo both ways: agentledger's checks as a promptfoo assertion, agentledger's recording
as a promptfoo provider.

- `assertion` (``type: python``, ``value: file://<its path>``): scores a promptfoo output with
  the fixtures' properties, through the production guard (`agentledger.suites.guard`);
- `provider` (``id: file://<its path>``): runs a Python agent function while recording it
  (`agentledger.record`), seals the run and answers with its output and run id.

``python -m agentledger.promptfoo`` prints the two files' paths, for a promptfoo config.
Results come back with ``agentledger import --format promptfoo results.json``
(`agentledger.importers.promptfoo`).
"""
