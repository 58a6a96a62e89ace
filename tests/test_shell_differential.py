"""Where bash and the gate's parser may read a line differently, the line is refused; and a
differential test: generated lines run through real bash in a jail (bubblewrap, read-only,
no network), tracing what bash executes, and through the classifier. A line the classifier
lets run must not make bash execute a command the classifier did not see (issue 33)."""

from __future__ import annotations

import json
import random
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from agentledger.shell.classifier import CommandVisitor, classify, walk
from agentledger.shell.knowledge import READ_ONLY

HIDDEN = "hidden_cmd"
"""A command in no knowledge: a line whose classifier sees it is refused; bash running it in
a line the classifier let through is a miss."""


# -- the known cases: refused, with a reason ----------------------------------------------------

REFUSED = {
    "quoted heredoc delimiter": 'cat <<E"O"F\nhello\nEOF\nrm -rf /tmp/x\nE"O"F',
    "single-quoted part": "cat <<E'O'F\nEOF\nE'O'F",
    "escaped letter": "cat <<E\\OF\nx\nEOF",
    "ends early, tabs": "cat <<-X\n\ta\n\tX\n\tX",
    "subscript in test -v": "x='a[$(rm f)]'; test -v 'b[x]'",
    "subscript in [ -v": "[ -v 'b[x]' ]",
    "subscript in [[ -v": "[[ -v b[x] ]]",
    "arithmetic of a string": "x='a[$(rm f)]'; echo $(( x ))",
    "(( ))": "(( x ))",
    "printf -v subscript": "printf -v 'a[$x]' %s 1",
    "declare subscript": "declare 'a[$(id)]=1'",
    "wait -p": "wait -p 'a[$x]'",
    "alias": "alias ls='rm -rf /tmp/x'; ls",
    "continuation in a word": "r\\\nm -rf /tmp/x",
    "carriage return": "echo a\r; ls",
    "no-break space": "ls\u00a0-la",
    "zero-width space": "l\u200bs",
    "ideographic space": "ls\u3000-la",
    "direction override": "echo \u202e; ls",
    "set -k": "set -k; git log GIT_PAGER=x",
    "set -o keyword": "set -o keyword",
    "shopt extglob": "shopt -s extglob",
    "ansi-c control escape": "sort $'\\cA' /tmp/x",
    "array key": "x='a[$(rm f)]'; y=( [x]=1 )",
    "substring of $@": "x='a[$(rm f)]'; echo ${@:x}",
    "backquote in ${:-}": 'grep "${x:-`rm -rf /srv`}" /etc/hostname',
    "backquote in bare ${:=}": "echo ${x:=`rm f`}",
    "backquote in ${//}": 'echo "${x//a/`rm f`}"',
    "backquote in nested ${}": 'echo "${x:-${y:-`rm f`}}"',
    "backquote in single quotes in ${}": "echo \"${x:-'`rm f`'}\"",
    "backquote in ${} after {": "echo ${x:-{`rm f`}}",
    "backquote in ${} here-string": 'cat <<< "${x:-`rm f`}"',
    "backquote in a here-document": "cat <<EOF\n`rm -rf /srv/data`\nEOF",
    "backquote mid-line in a here-document": "cat <<EOF\nhello `rm f`\nEOF",
    "backquote in ${} in a here-document": "cat <<EOF\n${x:-`rm f`}\nEOF",
    "backquote in quotes in a here-document": 'cat <<EOF\n"`rm f`"\nEOF',
    "nested escaped backquotes": "echo `echo \\`rm f\\``",
    "backquote in ${} over ssh": "ssh h 'grep \"${x:-`rm -rf /srv`}\" /etc/hosts'",
}


@pytest.mark.parametrize("line", list(REFUSED.values()), ids=list(REFUSED))
def test_lines_read_differently_are_refused_with_a_reason(line: str) -> None:
    found = classify(line)
    assert found.kind != READ_ONLY, found
    assert any(part.kind != READ_ONLY and part.reason for part in found.parts)


@pytest.mark.parametrize(
    "line",
    [
        "cat <<EOF\nhello\nEOF",
        "cat <<'EOF'\n$HOME\nEOF",
        'cat <<"EOF"\nx\nEOF',
        "cat <<-EOF\n\thello\n\tEOF",
        "ls -la \\\n  /var/log",
        "test -v HOME && echo set",
        "[ -f /etc/passwd ]",
        "set -euo pipefail; ls",
        "shopt -q extglob",
        "echo $'a\\tb\\x41\\101'",
        "cat <<'EOF'\n`date`\nEOF",
        "cat <<\\EOF\n`date`\nEOF",
        "cat <<EOF\n$(date) $HOME\nEOF",
        "echo ${x:-$(date)} `date` '`x`' \\`",
    ],
)
def test_ordinary_lines_still_run(line: str) -> None:
    assert classify(line).kind == READ_ONLY, classify(line)


def test_ansi_c_octal_is_decoded_as_bash_does() -> None:
    # $'\55o' is -o to bash: sort writes the file.
    assert classify("sort $'\\55o' /etc/x /tmp/y").kind != READ_ONLY


# -- the generator -------------------------------------------------------------------------------

DELIMITERS = ["EOF", "'EOF'", '"EOF"', "\\EOF", 'E"O"F', "E'O'F", "E\\OF", '"E"OF', "EOF''",
              "$'EOF'", "EO\\F", "'E'OF", "E\"OF\"", "EOF\\"]  # fmt: skip
BODY_LINES = ["hello", "EOF", "\tEOF", "EOF ", " EOF", "E\"O\"F", f"{HIDDEN}", "x\\", "$HOME",
              "`echo hi`", "plain text", "EOFX", "'EOF'", f"`{HIDDEN}`", f"a `{HIDDEN}` b",
              f"${{x:-`{HIDDEN}`}}", f"\"`{HIDDEN}`\""]  # fmt: skip


def _heredoc(pick: random.Random) -> str:
    dash = pick.choice(["", "-"])
    delimiter = pick.choice(DELIMITERS)
    body = [pick.choice(BODY_LINES) for _ in range(pick.randint(0, 3))]
    closing = pick.choice([delimiter, "EOF", "\tEOF", 'E"O"F'])
    inside = [f"{HIDDEN} 1"] if pick.random() < 0.5 else []
    return "\n".join([f"cat <<{dash}{delimiter}", *body, *inside, closing, "echo after"])


SUBSCRIPT_VALUES = [f"a[$({HIDDEN})]", f"a[`{HIDDEN}`]", "1", "a[1]", f"$({HIDDEN})"]
SUBSCRIPT_USES = [
    "test -v 'b[x]'", "[ -v 'b[x]' ]", "[[ -v b[x] ]]", "(( x ))", "echo $(( x ))",
    "echo $((x+1))", "printf -v 'b[x]' %s 1", "read -r 'b[x]' <<< 1", ": ${b[x]}",
    "echo ${#b[x]}", "unset 'b[x]'", "let x", "[[ x -eq 1 ]]", "echo ${x:x}",
    "declare -i y=x", "wait -p 'b[x]'", "export 'b[x]=1'", "echo ${!x}", "test -R 'b[x]'",
    "declare -A b; echo ${b[$x]}", "echo $[x]", "[[ $x -gt 0 ]]",
    "for ((i=x; i<1; i++)); do :; done", "y=( [x]=1 )", "local y=( [x]=1 )",
    "set -- a b; echo ${@:x}", "echo \"${*:x}\"", "f() { local -n r=x; echo $r; }; f",
]  # fmt: skip


def _subscript(pick: random.Random) -> str:
    value = pick.choice(SUBSCRIPT_VALUES)
    return f"x='{value}'; {pick.choice(SUBSCRIPT_USES)}"


FRAGMENTS = [
    f"alias ls={HIDDEN}; ls", f"shopt -s expand_aliases\nalias ls={HIDDEN}\nls",
    "hid\\\nden_cmd", f"echo a\\\n;{HIDDEN}", "echo \"a\\\nb\"", "ls \\\n-la /",
    f"echo $(\\\n{HIDDEN})", f"echo a\u00a0;{HIDDEN}", f"echo a\r;{HIDDEN}", "echo\u3000x",
    f"echo \u200b;{HIDDEN}", f"echo $'\\x27'; {HIDDEN}", "$'\\x68idden_cmd'",
    "$'\\150idden_cmd'", f"cat <({HIDDEN})", f"echo > >({HIDDEN})", f"diff <(echo a) <({HIDDEN})",
    f"echo a#b; {HIDDEN}", f"echo a #; {HIDDEN}", f"echo $#; {HIDDEN}", f"echo ${{#}}; {HIDDEN}",
    f"echo `{HIDDEN}`", f"case a in a) {HIDDEN};; esac", "echo plain", "ls /", "true",
    f"echo '{HIDDEN}'", f"echo \"$({HIDDEN})\"", f"echo '$({HIDDEN})'", f"# {HIDDEN}",
    f"echo x # ; {HIDDEN}", f"echo 'a\\' ; {HIDDEN} '", f"echo \"a\\\" ; {HIDDEN} \"",
    f"f() {{ {HIDDEN}; }}", f"set -k; echo X={HIDDEN}", f"echo ${{x:-$({HIDDEN})}}",
    "echo ${x@P}", f"PS4='$({HIDDEN})'", f"eval '{HIDDEN}'", f"bash -c '{HIDDEN}'",
    f"command {HIDDEN}", f"exec {HIDDEN}", f"echo {{a,b}}; {{ {HIDDEN}; }}",
    f"echo $\"{HIDDEN}\"", "echo $'a\\'' ; true", f"cat <<< \"$({HIDDEN})\"",
    f"echo ${{x:-`{HIDDEN}`}}", f"echo \"${{x:-`{HIDDEN}`}}\"", f"echo \"${{x//a/`{HIDDEN}`}}\"",
    f"echo \"${{x:-${{y:-`{HIDDEN}`}}}}\"", f"echo \"${{x:-'`{HIDDEN}`'}}\"",
    f"echo `echo \\`{HIDDEN}\\``", f"cat <<< \"${{x:-`{HIDDEN}`}}\"",
]  # fmt: skip
PLAIN = [
    "echo plain",
    "ls /",
    "true",
    "cat /etc/hostname",
    "x=1; echo $((x))",
    "echo $'a\\tb'",
    "test -v HOME",
    "ls -la \\\n /",
    "echo a #b",
    "echo 'a;b'",
    "printf '%s' x",
]
JOINERS = ["; ", "\n", " && ", " || ", " | "]


FIXED = [
    "echo $(cat <<EOF\nx\nEOF\n); hidden_cmd",
    "cat <<A <<B\na\nA\nb\nB\necho ok",
    "cat <<EOF | cat\nEOF\nhidden_cmd",
    "cat <<EOF \nx\nEOF \nhidden_cmd\nEOF",
    "cat <<'EOF' ; echo after\n$(hidden_cmd)\nEOF",
    "cat <<EOF\n$(hidden_cmd)\nEOF",
    'cat <<"EOF"\n`hidden_cmd`\nEOF',
    "[[ a =~ $(hidden_cmd) ]]",
    "[[ a =~ ^(x|y)$ ]] && echo m",
    "echo }; echo {",
    "function f { hidden_cmd; }; f",
    "echo a\\;hidden_cmd",
    'echo "a\\"; hidden_cmd; \\""',
    "echo 'a'\"'\"'; hidden_cmd'",
    "echo $'\\''; hidden_cmd'",
    'echo $"a"; echo b',
    "echo ${x:-'}'}; echo ok",
    'echo ${x:-"}"}; echo ok',
    "echo ${x-$(hidden_cmd)}",
    "case a in (a) echo x;; esac",
    "case $(hidden_cmd) in a) ;; esac",
    "echo <(echo a) >(cat)",
    "echo a |& cat",
    "coproc cat /dev/null",
    "time echo a",
    "! echo a",
    "echo a && { echo b; } || ( echo c )",
    "echo \\\n&& echo b",
    "echo a # \\\nhidden_cmd",
    'echo "a\nb"; echo c',
    "x=1 y=2 echo a",
    "echo ${x[@]:1:2}",
    "echo $((1+1)) $((0x10)) $((2#101))",
    "echo $(( $(hidden_cmd) ))",
    "for x in $(hidden_cmd); do :; done",
    "select x in a; do break; done < /dev/null",
    "while false; do hidden_cmd; done",
    "until true; do hidden_cmd; done",
    "if false; then hidden_cmd; fi",
    "echo a; #hidden_cmd",
    "echo a;#hidden_cmd",
    "echo a#; hidden_cmd",
    "echo ${#}; hidden_cmd",
    "echo $#;hidden_cmd",
    "echo ${#x}hidden_cmd",
    "ec''ho a",
    "e\\cho a",
    '"echo" a',
    "\\hidden_cmd",
    "h'idden_cmd'",
    "{ echo a; } > /dev/null",
    "echo a >| /dev/null",
    "echo a 2>&1 >/dev/null",
    "echo a &>/dev/null",
    "echo a >&/dev/null",
    "exec 3</dev/null; cat <&3",
    "cat 0<&- ; echo ok",
    "printf '%s' \"$(< /etc/hostname)\"",
    "echo $(< /etc/hostname)\n",
]
"""Lines of every shape found by hand (here-documents in substitutions, two on a line,
quotes and comments next to operators, reserved words): run with the generated ones."""


# Word splitting: an unquoted expansion anywhere in a word may make several words, any of
# them an option (whatever IFS holds); `~-` and `~+` are $OLDPWD and $PWD.
IFS_SETUPS = ["", "IFS=,; ", "IFS=-; ", "X=' -o /tmp/w'; ", "X=',-o,/tmp/w'; IFS=,; ",
              "set -- ' -o' /tmp/w; ", "OLDPWD=-o; ", "IFS=o; ",
              "set -- x -o /tmp/w; ", "A=(x -o /tmp/w); "]  # fmt: skip
IFS_WORDS = ["a${IFS}-o${IFS}/tmp/w", "a$X", '"a$X"', '"$X"', "k*$IFS-delete", "x$X",
             "x$BASH_EXECUTION_STRING", "a${IFS:0:1}-o${IFS:0:1}/tmp/w",
             "a$(printf ' -o /tmp/w')", "a$1", "$*", "a$@", "a$IFS--to-command=hidden_cmd",
             "x${IFS}--output=/tmp/w", "~-", "a$((1))-o", "'a'$X", "-$X", "a${X:-b}",
             "a${X}b", "a`printf ' -o /tmp/w'`", '"a$@"', '"a${A[@]}"', '"${@:2}"']  # fmt: skip
WORD_COMMANDS = ["sort /etc/hostname", "find /nonexistent -maxdepth 0", "git log -1",
                 "tar -tf /dev/null", "ls -d /", "echo", "grep -s x /etc/hostname"]  # fmt: skip


def _ifs(pick: random.Random) -> str:
    word = pick.choice(IFS_WORDS)
    return f"{pick.choice(IFS_SETUPS)}{pick.choice(WORD_COMMANDS)} {word}"


# Brace expansion: bash makes the words before anything else (`-{delete,print}`).
BRACE_PREFIXES = ["", "-", "--out", "x", "'-'", "\\-", "--to-comm", "$x", "{a,b}"]
BRACE_BODIES = ["{delete,print}", "{a,-o}", "{put=/tmp/w,}", "{and=hidden_cmd,}", "{1..2}",
                "{}", "{-o}", "\\{a,-o}", "'{a,-o}'", '"{a,-o}"', "{a,{-o,b}}", "{,-o}",
                "{a..c}", "${x:-{a,-o}}", "{-o,/tmp/w}", "{o..p}", "{-o,x}{,/tmp/w}",
                "{a,'-o'}"]  # fmt: skip
BRACE_SUFFIXES = ["", "", "/tmp/w", ",", "x", " /tmp/w", "{,}"]


def _braces(pick: random.Random) -> str:
    word = pick.choice(BRACE_PREFIXES) + pick.choice(BRACE_BODIES) + pick.choice(BRACE_SUFFIXES)
    return f"{pick.choice(WORD_COMMANDS)} {word}"


def generate(count: int, seed: int = 33) -> list[str]:
    """`count` lines of the shapes where bash and a parser may disagree, mixed."""
    pick = random.Random(seed)
    makers = [
        _heredoc,
        _heredoc,
        _subscript,
        _ifs,
        _braces,
        lambda p: p.choice(FRAGMENTS),
        lambda p: p.choice(PLAIN),
    ]
    lines = []
    for _ in range(count):
        parts = [pick.choice(makers)(pick) for _ in range(pick.choice([1, 1, 2, 3]))]
        line = parts[0]
        for part in parts[1:]:
            line += pick.choice(JOINERS) + part
        lines.append(line)
    return lines


# -- the differential ------------------------------------------------------------------------------


class _Seen(CommandVisitor):
    def __init__(self) -> None:
        self.names: set[str] = set()

    def command(self, words, via, text, kind, reason):  # type: ignore[no-untyped-def]
        if words and words[0].value is not None:
            self.names.add(words[0].value)
        for word in words:  # a wrapper's command word, `command X`, `exec X`
            if word.value is not None:
                self.names.add(word.value)


_DRIVER = r"""
import json, subprocess, sys
lines = json.load(open(sys.argv[1]))
out = []
for line in lines:
    try:
        done = subprocess.run(["bash", "-xc", line], stdin=subprocess.DEVNULL,
                              capture_output=True, timeout=3, env={"PATH": "/usr/bin:/bin"})
        out.append(done.stderr.decode("utf-8", "replace"))
    except subprocess.TimeoutExpired as exc:
        out.append((exc.stderr or b"").decode("utf-8", "replace"))
json.dump(out, open(sys.argv[2], "w"))
"""
_TRACE = re.compile(r"\++ ")
_SKIP = ("for", "case", "select", "[[", "((", "))", "]]")


def _executed(trace: str) -> set[str]:
    """The command names in bash's xtrace output (`+ `, one `+` a level; bash takes no PS4
    from the environment when run as root)."""
    names = set()
    for line in trace.split("\n"):
        match = _TRACE.match(line)
        if match is None:
            continue
        body = line[match.end() :]
        try:
            words = shlex.split(body)
        except ValueError:
            words = body.split()
        if not words:
            continue
        first = words[0]
        if first in _SKIP or first.startswith("((") or first.startswith("[["):
            continue
        head = first.split("=", 1)[0].split("[", 1)[0].rstrip("+")
        if "=" in first and head.isidentifier():
            continue  # an assignment
        names.add(first)
    return names


def _argvs(trace: str) -> list[list[str]]:
    """The argument vectors of the commands in bash's xtrace output (assignments, compound
    commands and words bash printed in `$'...'` form left out)."""
    found = []
    for line in trace.split("\n"):
        match = _TRACE.match(line)
        if match is None or "$'" in line:
            continue
        try:
            words = shlex.split(line[match.end() :])
        except ValueError:
            continue
        if not words or words[0] in _SKIP or words[0].startswith(("((", "[[")):
            continue
        head = words[0].split("=", 1)[0].split("[", 1)[0].rstrip("+")
        if "=" in words[0] and head.isidentifier():
            continue
        found.append(words)
    return found


_IN_CONTEXT = frozenset(["let", "declare", "typeset", "local", "export", "readonly", "unset",
                         "read", "wait", "eval", "source", "."])  # fmt: skip
"""Builtins whose class depends on what the line assigned before them (`x=1; let x`)."""


def _unseen_words(trace: str) -> list[str]:
    """The commands bash ran, as the words it gave them, that are not read-only when the
    classifier reads those very words: bash made an option the classifier did not see."""
    unseen = []
    for argv in _argvs(trace):
        if argv[0] in _IN_CONTEXT:
            continue
        text = shlex.join(argv)
        if classify(text).kind != READ_ONLY:
            unseen.append(text)
    return unseen


def _run_in_jail(lines: list[str], folder: Path) -> list[str]:
    source = folder / "lines.json"
    source.write_text(json.dumps(lines))
    driver = folder / "driver.py"
    driver.write_text(_DRIVER)
    result = folder / "traces.json"
    argv = [
        "bwrap", "--ro-bind", "/", "/", "--tmpfs", "/tmp", "--dev", "/dev", "--proc", "/proc",
        "--bind", str(folder), str(folder), "--unshare-all", "--die-with-parent",
        "--new-session", "--chdir", "/tmp", sys.executable, str(driver), str(source), str(result),
    ]  # fmt: skip
    subprocess.run(argv, check=True, timeout=120, stdin=subprocess.DEVNULL)
    traces: list[str] = json.loads(result.read_text())
    return traces


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap (CI installs it)")
def test_bash_runs_no_command_the_classifier_did_not_see(tmp_path: Path) -> None:
    lines = generate(1000) + FIXED
    allowed: list[tuple[str, set[str]]] = []
    for line in lines:
        seen = _Seen()
        if walk(line, seen).kind == READ_ONLY:
            allowed.append((line, seen.names))
    traces = _run_in_jail([line for line, _ in allowed], tmp_path)
    misses = []
    ran_hidden_in_refused = 0
    for (line, seen), trace in zip(allowed, traces, strict=True):
        unseen = sorted(_executed(trace) - seen) + _unseen_words(trace)
        if unseen:
            misses.append((line, unseen))
    # The oracle can fail: the same bash, on lines the classifier refuses, runs hidden commands.
    refused = [line for line in lines if classify(line).kind != READ_ONLY][:150]
    made_words = 0
    for trace in _run_in_jail(refused, tmp_path):
        ran_hidden_in_refused += HIDDEN in _executed(trace)
        made_words += bool(_unseen_words(trace))
    assert ran_hidden_in_refused > 20
    assert made_words > 10, "bash must make option words in lines the classifier refuses"
    assert len(allowed) > 100, "the generator must also make lines the classifier lets run"
    assert not misses, "\n".join(f"{line!r}: bash ran {names}" for line, names in misses[:10])
