"""The gate: classify a command, decide by the policy, run it or not, and log it either way.

    gate = Gate(load_policy("policy.yaml"), "run/shell_audit.jsonl")
    result = gate.run("iptables -L -n")        # runs: read-only
    result = gate.run("iptables -F")           # denied, not run; logged with the reason

Every command, allowed or not, appends one ShellEvent line to the audit log.
"""

from __future__ import annotations

import os
import time

from agentledger.runner.shell_gate.audit import (
    AuditLogError,
    append_event,
    append_line,
    check_log,
    clean_text,
    clear_intent,
    iso_time,
    recover_unfinished,
    stored_output,
    unlimit_file_size,
    write_intent,
)
from agentledger.runner.shell_gate.decision import CommandDecision, GateResult
from agentledger.runner.shell_gate.execute import run_shell
from agentledger.runner.shell_gate.redact import Redactor
from agentledger.runner.shell_gate.rules import PolicyRules, decide, load_policy
from agentledger.shell.classifier import Classification, classify

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence
    from typing import Any, TypeAlias

    from agentledger.runner.lab_shell import LabTarget
    from agentledger.runner.shell_gate.ask import Answer
    from agentledger.runner.shell_gate.netreaders import NetworkGrant
    from agentledger.runner.shell_gate.policy import Policy
    from agentledger.runner.shell_gate.sandbox import Sandbox
    from agentledger.runner.shell_gate.spool import Spool
    from agentledger.shell.knowledge import Knowledge

    Approver: TypeAlias = Callable[["CommandDecision"], "bool | str | Answer | None"]

__all__ = ["AUDIT_FILE", "GATE_ERRORS_FILE", "CommandDecision", "Gate", "GateResult", "ci_detected"]

AUDIT_FILE = "shell_audit.jsonl"
"""The audit log's name in a run directory."""
GATE_ERRORS_FILE = "gate_errors.jsonl"
"""Beside the audit log: one JSON line per allowed command the gate could not start (its
sandbox could not be had), so that a runner can tell a run where nothing ran from one that
ran nothing."""
LAB_ENV = "AGENTLEDGER_LAB"
"""The environment variable naming a run's lab target (`agentledger.runner.lab_shell`)."""
DENIED_EXIT = 126
"""What `agentledger exec` exits with when the gate refuses a command."""


def _tool_elsewhere(lab: LabTarget, host: str, classification: Classification) -> str:
    """Where an owner's tool the command names lives, when not in `host` ("" otherwise)."""
    names = {part.command.split(maxsplit=1)[0] for part in classification.parts if part.command}
    for other, tools in lab.tools.items():
        found = sorted(names & set(tools)) if other != host else []
        if found:
            return f" ({found[0]} is an owner's tool of host {other}, not of {host})"
    return ""


def ci_detected(environ: Mapping[str, str] | None = None) -> bool:
    """True when the environment variable CI holds a true value (``true``, ``1``, ...)."""
    value = (os.environ if environ is None else environ).get("CI", "")
    return value.strip().lower() not in ("", "0", "false", "no", "off")


class Gate:
    """The gated shell: every command is classified, decided by the policy, and logged.

    `policy` is a PolicyRules (`load_policy`), a Policy model, or None for the packaged
    investigate-only policy. `audit_path` is the ShellEvent log to append to (None: no log).
    Commands run in `cwd` with `env` (default: this process's), at most `timeout` seconds
    (default: the policy's), with `stdin` (a file descriptor; default /dev/null). `approver`
    answers the policy's prompts: it gets the CommandDecision and returns True (or the approver's
    name, or an `ask.Answer`) to run the command; the default asks on the terminal (for the
    policy's prompt_timeout), and without one the answer is no. `ci` (default: from the CI
    environment variable) refuses every mutating command. `sandbox` is where commands the
    policy wants sandboxed run (default: the system's bubblewrap, looked for when first
    needed; see `sandbox.py`). `tee` are descriptors (stdout, stderr) that get the output
    as it comes, besides the bounded copy the result and the log keep.
    """

    def __init__(
        self,
        policy: PolicyRules | Policy | None = None,
        audit_path: str | os.PathLike[str] | None = None,
        *,
        cwd: str | os.PathLike[str] | None = None,
        timeout: float | None = None,
        env: Mapping[str, str] | None = None,
        approver: Approver | None = None,
        ci: bool | None = None,
        stdin: int | None = None,
        sandbox: Sandbox | None = None,
        tee: tuple[int, int] | None = None,
        lab: LabTarget | None = None,
    ) -> None:
        if policy is None:
            policy = load_policy(None)
        elif not isinstance(policy, PolicyRules):
            policy = PolicyRules.from_policy(policy)
        self.rules = policy
        self.audit_path = os.fspath(audit_path) if audit_path is not None else None
        self.cwd = os.fspath(cwd) if cwd is not None else None
        self.timeout = float(timeout) if timeout is not None else policy.timeout
        self.env = env
        self.approver = approver
        self.ci = ci_detected() if ci is None else ci
        self.stdin = stdin
        self.sandbox = sandbox
        self.tee = tee
        self.lab = lab
        """With a lab (`agentledger.runner.lab_shell`), commands run in its hosts."""
        self._lab_knowledge: dict[str, Knowledge] = {}
        self.redactor = Redactor(policy.redact)
        if self.timeout <= 0:
            raise _input_error(f"timeout must be a positive number of seconds, got {timeout}")
        if self.cwd is not None and not os.path.isdir(self.cwd):
            raise _input_error(f"working directory {self.cwd} does not exist")
        if self.audit_path is not None:
            folder = os.path.dirname(os.path.abspath(self.audit_path))
            if not os.path.isdir(folder):
                raise _input_error(f"the audit log's directory {folder} does not exist")
            from agentledger.shell.trusted_files import refuse_in_scratch

            # A sandboxed command could rewrite the log there (and its pending events), and
            # the scratch is removed with it.
            refuse_in_scratch(folder, "run directory")
            try:
                unlimit_file_size()
                check_log(self.audit_path, create=False)
                recover_unfinished(self.audit_path)
            except OSError as exc:
                raise _input_error(f"{exc.strerror or exc}; nothing was run") from None

    @classmethod
    def for_run_dir(
        cls,
        run_dir: str | os.PathLike[str],
        policy: str | os.PathLike[str] | None = None,
        **options: Any,
    ) -> Gate:
        """A gate logging to `run_dir`/shell_audit.jsonl with the policy file `policy`."""
        folder = os.fspath(run_dir)
        if not os.path.isdir(folder):
            raise _input_error(f"run directory {folder} does not exist")
        if "lab" not in options and os.environ.get(LAB_ENV):
            # Imported only in a lab: it costs more than the rest of a gated command's start.
            from agentledger.runner.lab_shell import LabTarget

            options["lab"] = LabTarget.from_environment()
        return cls(load_policy(policy), os.path.join(folder, AUDIT_FILE), **options)

    def classify(self, command: str, host: str | None = None) -> Classification:
        """The classification of `command` with this policy's command knowledge (and, in lab
        host `host`, the knowledge of its owners' tools)."""
        return classify(_checked(command), self.knowledge_for(host))

    def knowledge_for(self, host: str | None) -> Knowledge:
        """The command knowledge of commands run in lab host `host`: the policy's, with the
        tools the lab's owners offer there (`LabTarget.tools`) known as the lab declares them
        (the policy's own entries still win); the policy's alone elsewhere."""
        tools = self.lab.tools.get(host or "") if self.lab is not None else None
        if not tools:
            return self.rules.knowledge()
        found = self._lab_knowledge.get(host or "")
        if found is None:
            from agentledger.shell.knowledge import load_knowledge, normalize_entries

            assert self.lab is not None
            source = f"lab {self.lab.name}, host {host}"
            entries = normalize_entries(dict(tools), source, field="tools")
            found = load_knowledge(self.rules.knowledge_files, {**entries, **self.rules.commands})
            self._lab_knowledge[host or ""] = found
        return found

    def decide(self, command: str) -> CommandDecision:
        """What the gate would do with `command` (nothing is run or logged)."""
        if self.lab is not None:
            return self._decide_in_lab(command)
        classification = self.classify(command)
        verdict = decide(self.rules, classification, ci=self.ci)
        decision = CommandDecision(
            classification, verdict.decision, verdict.decided_by, verdict.reason
        )
        return self._network(decision)

    def _network(self, decision: CommandDecision) -> CommandDecision:
        """`decision` with the network it runs with in the sandbox: its own, or the host's
        for a checked network reader; denied when it needs a network reader that it cannot
        have the host's network for."""
        if decision.decision == "denied" or not self._sandboxes(decision.decision, decision):
            return decision
        from agentledger.runner.shell_gate.sandbox import READER_NAMES, REMOTE_WRAPPERS

        parts = decision.classification.parts
        texts = [decision.command, *(part.command for part in parts)]
        texts += [name for part in parts for name in part.via]
        if not any(name in text for text in texts for name in READER_NAMES):
            return decision  # no reader named anywhere: its own network (netreaders unread)
        from agentledger.runner.shell_gate.netreaders import names_reader, network_grant

        grant = network_grant(decision.command, self._euid(decision))
        if isinstance(grant, str):
            return CommandDecision(decision.classification, "denied", "sandbox", grant)
        if grant is None:
            for part in decision.classification.parts:
                remote = [name for name in part.via if name in REMOTE_WRAPPERS]
                if remote and "ssh" not in remote:
                    continue
                if names_reader(part.command, part.via):
                    return self._line_of_readers(decision, part.command)
        elif grant.rest is not None and any(
            names_reader(part.command, part.via) for part in decision.classification.parts[1:]
        ):
            # More readers after the pipe: all of them get what they need, or only the first.
            return self._line_of_readers(decision, grant.rest, fallback=grant)
        decision.network = grant
        return decision

    def _line_of_readers(
        self, decision: CommandDecision, command: str, fallback: NetworkGrant | None = None
    ) -> CommandDecision:
        """`decision` for a line where the network reader `command` is not first: run in
        one sandbox with what its readers need, when every other part is local-only
        (`netlines`); else with `fallback` (the first reader's grant) when there is one;
        denied otherwise."""
        from agentledger.runner.shell_gate.execute import find_shell
        from agentledger.runner.shell_gate.netlines import line_grant

        grant = line_grant(decision.command, self._euid(decision), find_shell())
        if grant is not None and not isinstance(grant, str):
            decision.network = grant
            return decision
        if fallback is not None:
            decision.network = fallback
            return decision
        reason = (
            f"{command} needs the host's network or a daemon's socket, which the sandbox "
            "gives a reader only as the first command of its line, optionally piped into the "
            "rest (`iptables -S | grep DROP`), or in a line whose every other part is a "
            "local-only tool (`grep`, `tail`, `ls`, ...), in plain words or quotes bash "
            f"reads literally: {grant or 'no network reader in the line'}"
        )
        return CommandDecision(decision.classification, "denied", "sandbox", reason)

    def _decide_in_lab(self, command: str) -> CommandDecision:
        """In a lab: decided on the command without its host prefix; what the policy would
        ask about is allowed (the lab is the sandbox), CI or not."""
        assert self.lab is not None
        host, inner = self.lab.split(_checked(command))
        classification = self.classify(inner, host)
        verdict = decide(self.rules, classification, ci=False)
        reason = verdict.reason
        if verdict.decision == "denied" and classification.kind == "unknown":
            reason += _tool_elsewhere(self.lab, host, classification)
        decided = CommandDecision(classification, verdict.decision, verdict.decided_by, reason)
        if decided.decision == "prompt":
            why = f"inside lab {self.lab.name}, host {host}: no approval needed"
            decided = CommandDecision(classification, "allowed", "lab", f"{why}; {verdict.reason}")
        decided.host = host
        return self._network(decided)

    def _euid(self, decision: CommandDecision) -> int:
        """The user `decision`'s command runs as, for the capabilities a network reader keeps:
        in a lab host it runs as root of the lab's user namespace (`Lab.host_argv`), whoever
        started the lab, so `iptables -S` reads the host's rules rootless too."""
        return 0 if self.lab is not None and decision.host is not None else os.geteuid()

    def _lab_prefix(self, host: str | None) -> Sequence[str]:
        """The argv prefix that runs a command in lab host `host` (none outside a lab)."""
        if self.lab is None or host is None:
            return ()
        return self.lab.prefix(host)

    def run(self, command: str) -> GateResult:
        """Decide, run the command if allowed, and append one event to the audit log.

        A denied command is not run (exit_code None). KeyboardInterrupt while it runs kills
        it, logs it, and is raised again; so does Ctrl-C at the prompt (the command is logged
        as refused).
        """
        started = time.time()
        decision = self.decide(command)
        interrupted = False
        if decision.decision == "prompt":
            decision, interrupted = self._ask(decision)
        if not decision.allowed:
            event = self._event(decision, started)
            if interrupted:
                raise KeyboardInterrupt
            return GateResult(decision, event)
        from agentledger.runner.shell_gate.unavailable import SandboxUnavailableError

        try:
            sandbox = self._sandbox_for(decision)
        except SandboxUnavailableError as exc:  # nothing ran
            self._note_not_started(decision, started, exc)
            raise
        if sandbox is None:
            decision.network = None
        sandbox_name = sandbox.name if sandbox is not None else "none"
        env = self._environment(sandbox_name)
        event_id = os.urandom(8).hex()
        intent = self._intent(decision, started, event_id, sandbox_name)
        try:
            completed = run_shell(
                decision.command,
                timeout=self.timeout,
                cwd=self.cwd if decision.host is None else f"/run/lab/{decision.host}",
                env=env,
                stdin=self.stdin,
                sandbox=sandbox,
                grant=decision.network,
                tee=self.tee,
                prefix=self._lab_prefix(decision.host),
            )
        except BaseException as exc:
            if intent is not None:
                self._abandon(intent, decision, started, event_id, exc)
            if isinstance(exc, SandboxUnavailableError):  # nothing ran
                self._note_not_started(decision, started, exc)
            raise
        if completed.timed_out:
            decision.reason += f"; timed out after {self.timeout:g} s and was killed"
        elif completed.interrupted:
            decision.reason += "; interrupted and killed"
        event = self._event(
            decision,
            started,
            exit_code=completed.exit_code,
            duration_ms=completed.duration_ms,
            outputs=(completed.stdout, completed.stderr),
            timed_out=completed.timed_out,
            sandbox=sandbox_name,
            event_id=event_id,
        )
        if intent is not None:
            clear_intent(intent)
        if completed.interrupted:
            raise KeyboardInterrupt
        return GateResult(
            decision,
            event,
            completed.exit_code,
            completed.stdout.kept(),
            completed.stderr.kept(),
            duration_ms=completed.duration_ms,
            timed_out=completed.timed_out,
        )

    def _note_not_started(self, decision: CommandDecision, started: float, exc: Exception) -> None:
        """Append to GATE_ERRORS_FILE beside the audit log why `decision` could not start."""
        if self.audit_path is None:
            return
        import json

        line = {
            "ts": iso_time(started),
            "command": self.redactor.redact_command(clean_text(decision.command)),
            "error": self.redactor.knowing(decision.command).redact_quoting(clean_text(str(exc))),
        }
        path = os.path.join(os.path.dirname(os.path.abspath(self.audit_path)), GATE_ERRORS_FILE)
        try:  # noqa: SIM105 - contextlib costs every gated command its import
            append_line(path, (json.dumps(line, ensure_ascii=False) + "\n").encode())
        except OSError:
            pass  # the error itself still reaches the caller

    def sandboxed(self, decision: CommandDecision) -> bool:
        """True when the command of `decision` runs in the read-only sandbox: every command
        in investigate mode, and one allowed as read-only in remediate mode, unless the
        policy says `sandbox: off`."""
        return self._sandboxes(decision.decision, decision)

    def _sandboxes(self, verdict: str, decision: CommandDecision) -> bool:
        if self.rules.sandbox == "off":
            return False
        if self.rules.mode == "investigate":
            return True
        return verdict == "allowed" and decision.classification.kind == "read-only"

    def _environment(self, sandbox: str) -> Mapping[str, str] | None:
        """What the command starts with: outside the sandbox (and a lab), the clean
        environment of `environment.clean_environment`, not the agent's."""
        if sandbox != "none" or self.lab is not None:
            return self.env
        from agentledger.runner.shell_gate.environment import clean_environment

        return clean_environment(os.environ if self.env is None else self.env)

    def _intent(
        self, decision: CommandDecision, started: float, event_id: str, sandbox: str
    ) -> str | None:
        """Write what is about to run before it runs (see `audit.write_intent`)."""
        if self.audit_path is None:
            return None
        event = self._fields(decision, started)
        event.update(event_id=event_id, state="running", sandbox=sandbox)
        if sandbox == "none" and self.lab is None:
            event["environment"] = "reset"
        try:
            check_log(self.audit_path)
            return write_intent(self.audit_path, event)
        except AuditLogError as exc:
            raise _input_error(f"{exc.strerror}; nothing was run") from None
        except OSError as exc:
            raise _input_error(
                f"cannot record the command before running it beside {self.audit_path}: "
                f"{exc.strerror or exc}; nothing was run"
            ) from None

    def _abandon(
        self,
        intent: str,
        decision: CommandDecision,
        started: float,
        event_id: str,
        exc: BaseException,
    ) -> None:
        """The command could not be run after all: log why, drop the intent."""
        from agentledger.runner.shell_gate.unavailable import SandboxUnavailableError

        event = self._fields(decision, started)
        event["event_id"] = event_id
        if isinstance(exc, SandboxUnavailableError):
            event.update(decision="denied", decided_by="sandbox")
            event["reason"] = clean_text(f"the sandbox could not be set up: {exc}")
        else:
            event["state"] = "unfinished"
            event["reason"] += f"; the gate failed while it ran: {type(exc).__name__}"
        try:
            append_event(self.audit_path or "", event)
        except OSError:
            return  # the intent stays: the next gate logs it as unfinished
        clear_intent(intent)

    def _sandbox_for(self, decision: CommandDecision) -> Sandbox | None:
        if not self.sandboxed(decision):
            return None
        if self.sandbox is None:
            from agentledger.runner.shell_gate.sandbox import Sandbox

            self.sandbox = Sandbox.find()
        return self.sandbox

    def _ask(self, decision: CommandDecision) -> tuple[CommandDecision, bool]:
        """The decision once the approver answered, and whether it was interrupted."""
        from agentledger.runner.shell_gate.ask import Answer

        approver = self.approver
        if approver is None:
            from functools import partial

            from agentledger.runner.shell_gate.ask import has_terminal, terminal_approver

            if not has_terminal():
                reason = f"no terminal to ask: {decision.reason}"
                return CommandDecision(decision.classification, "denied", "policy", reason), False
            approver = partial(terminal_approver, timeout=self.rules.prompt_timeout)
        try:
            answer: object = approver(decision)
        except KeyboardInterrupt:
            from agentledger.runner.shell_gate.ask import approver_identity

            answer = Answer(
                False, approver_identity(), "interrupted at the prompt", interrupted=True
            )
        if not isinstance(answer, Answer):
            from agentledger.runner.shell_gate.ask import approver_identity

            who = answer if isinstance(answer, str) and answer else approver_identity()
            answer = Answer(bool(answer), who, "refused at the prompt")
        if answer.approved:
            reason = f"approved by {answer.who}: {decision.reason}"
            approved = CommandDecision(decision.classification, "approved", answer.who, reason)
            approved.network = decision.network
            return approved, False
        reason = f"{answer.why}: {decision.reason}"
        denied = CommandDecision(decision.classification, "denied", answer.who, reason)
        return denied, answer.interrupted

    def _fields(
        self, decision: CommandDecision, started: float, redactor: Redactor | None = None
    ) -> dict[str, Any]:
        """The fields every event of `decision` has, redacted and cleaned: the secrets its
        command line holds by their place in it (`redact_argv`) leave every field."""
        redactor = redactor or self.redactor.knowing(decision.command)
        redact = redactor.redact_quoting
        fields: dict[str, Any] = {
            "schema_version": 1,
            "ts": iso_time(started),
            "command": redactor.redact_command(clean_text(decision.command)),
            "cwd": clean_text(self.cwd or _current_directory()),
            "classification": decision.classification.kind,
            "decision": decision.decision,
            "decided_by": clean_text(decision.decided_by),
            "reason": redact(clean_text(decision.reason)),
            "exit_code": None,
        }
        if self.lab is not None:
            fields["lab"] = clean_text(self.lab.name)
            fields["host"] = clean_text(decision.host or self.lab.default)
        return fields

    def _event(
        self,
        decision: CommandDecision,
        started: float,
        *,
        exit_code: int | None = None,
        duration_ms: float | None = None,
        outputs: tuple[Spool, Spool] | None = None,
        timed_out: bool = False,
        sandbox: str | None = None,
        event_id: str | None = None,
    ) -> dict[str, Any]:
        redactor = self.redactor.knowing(decision.command)
        redact = redactor.redact_quoting
        event = self._fields(decision, started, redactor)
        event["exit_code"] = exit_code
        if event_id is not None:
            event["event_id"] = event_id
        if outputs is not None:
            event["duration_ms"] = round(duration_ms or 0.0, 3)
            truncated = False
            for name, spool in zip(("stdout", "stderr"), outputs, strict=True):
                text, digest, size, cut = stored_output(
                    spool, redactor, self.rules.max_output_bytes
                )
                event[name] = text
                event[f"{name}_sha256"] = digest
                event[f"{name}_bytes"] = size
                truncated = truncated or cut
            event["timed_out"] = timed_out
            event["truncated"] = truncated
        event["parts"] = [
            {key: redact(clean_text(value)) if isinstance(value, str) else value
             for key, value in part.as_dict().items()}
            for part in decision.classification.parts
        ]  # fmt: skip
        event["policy"] = clean_text(self.rules.name)
        if self.rules.sandbox == "off":
            event["sandbox"] = "off"
        elif sandbox is not None:
            event["sandbox"] = sandbox
            if sandbox != "none":
                from agentledger.runner.shell_gate.sandbox import remote_parts

                remote = remote_parts(decision.classification.parts)
                if remote:
                    event["remote_parts"] = [redact(clean_text(text)) for text in remote]
                event["network"] = decision.network.tool if decision.network else "none"
        if sandbox == "none" and self.lab is None:
            event["environment"] = "reset"
        if self.audit_path is not None:
            try:
                append_event(self.audit_path, event)
            except OSError as exc:
                raise _input_error(
                    f"cannot append to the audit log {self.audit_path}: {exc.strerror or exc}"
                ) from None
        return event


def _checked(command: str) -> str:
    if not isinstance(command, str):
        raise _input_error(f"a command is text, not {type(command).__name__}")
    if not command.strip():
        raise _input_error("empty command: there is nothing to run")
    if "\0" in command:
        raise _input_error("a command cannot contain NUL characters")
    return command


def _current_directory() -> str:
    try:
        return os.getcwd()
    except OSError:
        return os.environ.get("PWD", "")


def _input_error(message: str) -> Exception:
    from agentledger.errors import InputError

    return InputError(message)
