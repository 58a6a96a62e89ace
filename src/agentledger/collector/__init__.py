"""Runs straight from running agents: an OTLP/HTTP receiver (`agentledger collect`).

`decode` reads an export request (protobuf or JSON, gzip), `spool` keeps accepted spans on
disk until their trace is sealed, `receiver` seals each trace as a run through the OTLP
importer's own planning, and serves ``POST /v1/traces`` (starlette, the ``collect`` extra).
"""
