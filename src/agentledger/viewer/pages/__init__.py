"""One module per page of the viewer, each with its `routes` (see `agentledger.viewer.app`)."""
