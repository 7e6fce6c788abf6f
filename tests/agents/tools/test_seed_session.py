"""The seed's "fix the failing test" session, for real: a scripted model drives the real tools.

The script is the seed page's: Bash runs the tests (they fail), Read ×2, Edit + Bash (they
pass), final text. Every tool call really runs against a temporary project, through ``query()``
and the agent loop, so this proves the tools, the loop and the permission mode work together.
"""

from __future__ import annotations

import sys
from pathlib import Path

from agents import AgentOptions, ToolResultBlock, UserMessage
from agents.testing import ScriptedBackend, Step, text, tool_use

from ..helpers import collect, result_of

AUTH = '''PASSWORDS = {"ada": "lovelace"}


def login(user: str, password: str) -> bool:
    """True when the password is right."""
    return user == password  # BUG: compares the user name
'''

FIXED = "return password == PASSWORDS.get(user)"

TEST = """import sys
from auth import login

PASSWORDS_OK = login("ada", "lovelace")
if not PASSWORDS_OK:
    print("FAIL test_login: login('ada', 'lovelace') returned False")
    sys.exit(1)
print("1 passed")
"""


def _script(root: Path) -> ScriptedBackend:
    auth, test = str(root / "auth.py"), str(root / "test_auth.py")
    run_tests = f"{sys.executable} test_auth.py"
    return ScriptedBackend(
        [
            Step([tool_use("Bash", {"command": run_tests}, id="bash_1")]),
            Step(
                [
                    tool_use("Read", {"file_path": auth}, id="read_auth"),
                    tool_use("Read", {"file_path": test}, id="read_test"),
                ]
            ),
            Step(
                [
                    tool_use(
                        "Edit",
                        {
                            "file_path": auth,
                            "old_string": "return user == password  # BUG: compares the user name",
                            "new_string": FIXED,
                        },
                        id="edit_1",
                    ),
                    tool_use("Bash", {"command": run_tests}, id="bash_2"),
                ]
            ),
            Step([text("Fixed the login bug; the test passes now.")]),
        ]
    )


async def test_fix_the_failing_test_session(project: Path) -> None:
    (project / "auth.py").write_text(AUTH)
    (project / "test_auth.py").write_text(TEST)
    backend = _script(project)
    options = AgentOptions(cwd=str(project), backend=backend, permission_mode="bypassPermissions")
    messages, error = await collect("Fix the failing test in auth.py", options)
    assert error is None
    results = [
        block
        for m in messages
        if isinstance(m, UserMessage) and isinstance(m.content, list)
        for block in m.content
        if isinstance(block, ToolResultBlock)
    ]
    # Results arrive as tools finish (the two Reads run concurrently): look them up by id.
    by_id = {block.tool_use_id: block for block in results}
    assert len(results) == len(by_id) == 5

    def body(block: ToolResultBlock) -> str:
        content = block.content
        if isinstance(content, str):
            return content
        return "".join(part.get("text", "") for part in content or [])

    first_bash, read_auth, read_test, edit, last_bash = (
        by_id[i] for i in ("bash_1", "read_auth", "read_test", "edit_1", "bash_2")
    )
    assert first_bash.is_error and "FAIL test_login" in body(first_bash)
    assert "     6\t    return user == password" in body(read_auth)
    assert "     1\timport sys" in body(read_test)
    assert not edit.is_error and "has been updated" in body(edit)
    assert not last_bash.is_error
    assert body(last_bash) == "1 passed"
    source = (project / "auth.py").read_text()
    assert FIXED in source and "# BUG" not in source
    final = result_of(messages)
    assert final.subtype == "success" and final.num_turns == 4
    backend.assert_consumed()
