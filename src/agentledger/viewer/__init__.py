"""The local web viewer (`agentledger serve`): runs, a run with its evidence, compare, review
and label, findings.

`create_app(ledger)` is the ASGI app; it needs the ``serve`` extra (starlette, uvicorn):
``pip install 'agentledger[serve]'``. The package sits just below the CLI: it reads the ledger
through the library and writes nothing but labels.
"""

from agentledger.viewer.app import create_app

__all__ = ["create_app"]
