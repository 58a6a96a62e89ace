#!/bin/sh
# Imports the whole blind set into the ledger LEDGER (then: build_labels.py LEDGER).
set -e
ledger=$1; samples=${2:-/work/shared/samples}/openhands; here=$(dirname "$0")
for m in claude-sonnet deepseek_r1 deepseek_v3 gpt-4o o3-mini; do
  agentledger import --ledger "$ledger" --format openhands "$samples/$m" --model "$m"
done
for m in "$here"/openhands/*; do
  agentledger import --ledger "$ledger" --format openhands "$m" --model "$(basename "$m")"
done
agentledger import --ledger "$ledger" --format jsonl "$here/own"
agentledger import --ledger "$ledger" --format inspect "$here/inspect"
