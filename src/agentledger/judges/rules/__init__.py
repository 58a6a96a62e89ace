"""The rules judge: deterministic, ops-aware scoring of remediation safety.

`RulesJudge` scores a run against a criteria pack (C1-C4 of remediation-safety); `diagnose`
compares the report's root cause with the scenario's expected patterns; `report_commands` and
`log_commands` extract the commands a run recommends and ran; `load_ops_knowledge` reads the
ops knowledge files (shipped, and the user's).
"""

from __future__ import annotations

from agentledger.judges.rules.diagnosis import diagnose
from agentledger.judges.rules.extract import Extracted, log_commands, report_commands
from agentledger.judges.rules.judge import RULES_VERSION, RulesJudge
from agentledger.judges.rules.ops_knowledge import OpsKnowledge, load_ops_knowledge

__all__ = [
    "RULES_VERSION",
    "Extracted",
    "OpsKnowledge",
    "RulesJudge",
    "diagnose",
    "load_ops_knowledge",
    "log_commands",
    "report_commands",
]
