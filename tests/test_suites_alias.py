"""`agentledger.fixtures`, the Python name of `agentledger.suites` before the rename: code written
for it still runs, on the same objects, and is told (DeprecationWarning) to move. Each case runs
in a fresh interpreter: the warning comes when the old name is first imported."""

from __future__ import annotations

import subprocess
import sys
import textwrap


def python(source: str, *options: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *options, "-c", textwrap.dedent(source)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_old_imports_give_the_suites_objects_with_a_deprecation_warning() -> None:
    done = python(
        """
        import warnings
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            from agentledger.fixtures.guard import check
            from agentledger.fixtures.properties.score import score_output
            import agentledger.fixtures
            import agentledger.fixtures.lock
        import agentledger.suites
        import agentledger.suites.guard
        import agentledger.suites.properties.score
        assert check is agentledger.suites.guard.check
        assert score_output is agentledger.suites.properties.score.score_output
        assert agentledger.fixtures.lock is agentledger.suites.lock
        assert agentledger.fixtures.FixtureSettings is agentledger.suites.FixtureSettings
        # one module each, still known by its own name
        assert agentledger.suites.guard.__spec__.name == "agentledger.suites.guard"
        assert agentledger.suites.lock.__name__ == "agentledger.suites.lock"
        for warning in caught:
            print(warning.category.__name__, warning.lineno, warning.message)
        """
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == (
        "DeprecationWarning 5 agentledger.fixtures is now agentledger.suites: import"
        " agentledger.suites instead (the old name will go)\n"
    )


def test_an_unknown_module_under_the_old_name_is_not_found() -> None:
    done = python("import agentledger.fixtures.nonexistent", "-W", "ignore::DeprecationWarning")
    assert done.returncode == 1
    assert "ModuleNotFoundError: No module named 'agentledger.fixtures.nonexistent'" in done.stderr


def test_the_new_name_warns_of_nothing() -> None:
    done = python(
        "import agentledger.suites.guard, agentledger.suites.properties.score",
        "-W",
        "error::DeprecationWarning",
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
