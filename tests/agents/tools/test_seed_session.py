"""The seed's "fix the failing test" session, for real: a scripted model drives the real tools.

The script is the seed page's: Bash runs the tests (they fail), Read ×2, Edit + Bash (they pass),
final text. Every tool call really runs against a temporary project, through ``query()`` and the
agent loop, so this proves the tools, the loop and the permission mode work together.
"""

from __future__ import annotations

import sys
from pathlib import Path

from agents import AgentOptions, ToolResultBlock, UserMessage
from agents.testing import ScriptedBackend, Step, text, tool_use

from ..helpers import collect, result_of

AUTH = '''def login(user: str, password: str) -> bool:
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
            Step([tool_use("Bash", {"command": run_tests, "description": "Run the tests"})]),
            Step([tool_use("Read", {"file_path": auth}), tool_use("Read", {"file_path": test})]),
            Step(
                [
                    tool_use(
                        "Edit",
                        {
                            "file_path": auth,
                            "old_string": "return user == password  # BUG: compares the user name",
                            "new_string": FIXED,
                        },
                    ),
                    tool_use(
                        "Edit",
                        {
                            "file_path": auth,
                            "old_string": "def login",
                            "new_string": 'PASSWORDS = {"ada": "lovelace"}\n\n\ndef login',
                        },
                    ),
                    tool_use("Bash", {"command": run_tests, "description": "Run the tests"}),
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
    assert len(results) == 6

    def body(block: ToolResultBlock) -> str:
        content = block.content
        if isinstance(content, str):
            return content
        return "".join(part.get("text", "") for part in content or [])

    first_bash, read_auth, read_test, edit1, edit2, last_bash = results
    assert first_bash.is_error and "FAIL test_login" in body(first_bash)
    assert "     3\t    return user == password" in body(read_auth)
    assert "     1\timport sys" in body(read_test)
    assert not edit1.is_error and not edit2.is_error
    assert not last_bash.is_error
    assert body(last_bash) == "1 passed"
    source = (project / "auth.py").read_text()
    assert FIXED in source and "# BUG" not in source
    final = result_of(messages)
    assert final.subtype == "success" and final.num_turns == 4
    backend.assert_consumed()
