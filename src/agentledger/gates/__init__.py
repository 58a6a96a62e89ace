"""Gates: prompt-variant acceptance, sentinel go/no-go and fixture must-pass, each ending in a
decision record (`agentledger.gates.decisions`). Submodules are imported when used."""
