"""Settings-file ``http`` hooks: the hook input POSTed as JSON to a URL, as Claude Code does.

* A 2xx answer with an empty body is success with no output; a 2xx answer whose body is a JSON
  object is the hook's output, read exactly as a command hook's stdout (``decision``,
  ``hookSpecificOutput``, ...) — that is how an HTTP hook blocks.
* A 2xx answer with any other body, a non-2xx status, a connection failure or no answer within
  the hook's timeout is a non-blocking error: shown to the user (``systemMessage``), and the
  action goes ahead.
* ``$VAR`` and ``${VAR}`` in header values are filled from the environment (the settings' ``env``
  over the process's) only for the variables the hook lists in ``allowedEnvVars``; any other
  reference becomes an empty string, so a settings file cannot send secrets it was not given.
  Redirects are not followed.
* The answer's body is read as it comes, at most ``MAX_HTTP_HOOK_BODY`` bytes (1 MiB): a longer
  one is a non-blocking error naming the limit, and the rest is never read (a server that
  streams without end costs no memory past it; the hook's timeout bounds its time).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import trio

from ..hooks import DEFAULT_HOOK_TIMEOUT, HookCallback, HookContext
from ..tools.bodies import decode_in_pieces, read_capped
from ._files import HttpHook

if TYPE_CHECKING:
    import httpx

__all__ = ["HTTP_HOOK_MARGIN", "MAX_HTTP_HOOK_BODY", "http_hook"]

#: Seconds the hook runner waits past an http hook's own timeout, so the hook's message (which
#: names the URL) is the one reported.
HTTP_HOOK_MARGIN = 1.0

_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)")
#: Characters of an error answer's body quoted in the message.
_BODY_QUOTE = 200
#: Bytes of an answer's body read at most; a longer body is an error naming this limit.
MAX_HTTP_HOOK_BODY = 1 << 20


def http_hook(hook: HttpHook, env: Mapping[str, str]) -> HookCallback:
    """A hook callback that POSTs its input to ``hook.url`` and reads the answer."""
    values = {**os.environ, **env}
    headers = {
        "Content-Type": "application/json",
        **{k: _fill(v, values, hook.allowed_env_vars) for k, v in hook.headers.items()},
    }
    seconds = hook.timeout or DEFAULT_HOOK_TIMEOUT
    where = f"{hook.event} http hook {hook.url}"

    async def run(
        input: dict[str, Any], tool_use_id: str | None, context: HookContext
    ) -> dict[str, Any]:
        import httpx

        body = json.dumps(input, default=str).encode()
        answer: tuple[int, str | None, bool] | None = None
        with trio.move_on_after(seconds):  # the whole exchange, not each read
            try:
                async with httpx.AsyncClient(timeout=None, follow_redirects=False) as client:
                    answer = await _post(client, hook.url, body, headers)
            except httpx.HTTPError as exc:
                reason = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
                return {"systemMessage": f"{where}: could not reach it: {reason}"}
        if answer is None:
            return {"systemMessage": f"{where} did not answer within {seconds:g} s"}
        status, text, over = answer
        if over:
            return {
                "systemMessage": f"{where} answered HTTP {status} with a body over "
                f"{MAX_HTTP_HOOK_BODY} bytes (the limit of an http hook's answer); it is ignored"
            }
        if text is None:
            return {
                "systemMessage": f"{where} answered HTTP {status} with a body that could not be "
                "decoded in its charset; it is ignored"
            }
        if not 200 <= status < 300:
            quote = text[:_BODY_QUOTE].strip()
            detail = f": {quote}" if quote else ""
            return {"systemMessage": f"{where} answered HTTP {status}{detail}"}
        text = text.strip()
        if not text:
            return {}
        try:
            output = json.loads(text)
        except json.JSONDecodeError:
            output = None
        if not isinstance(output, dict):
            return {
                "systemMessage": f"{where} answered with a body that is not a JSON object: "
                f"{text[:_BODY_QUOTE]!r}"
            }
        return output

    run.__name__ = run.__qualname__ = f"http hook {hook.url!r}"
    return run


async def _post(
    client: httpx.AsyncClient, url: str, body: bytes, headers: Mapping[str, str]
) -> tuple[int, str | None, bool]:
    """POST ``body``; the status, the body's text and whether it was over the limit (then the
    text is empty and the rest of the body is left unread). The text is decoded by pieces
    (``decode_in_pieces``: 1 MiB of UTF-7 held the event loop about 160 ms in one call); None
    when a charset that must be decoded whole failed to in its own process."""
    async with client.stream("POST", url, content=body, headers=headers) as response:
        data, over = await read_capped(response, MAX_HTTP_HOOK_BODY)
        if over:
            return response.status_code, "", True
        # (a charset the server names may be one that stalls or refuses to decode: see there)
        text = await decode_in_pieces(data, response.charset_encoding or "utf-8")
        return response.status_code, text, False


def _fill(value: str, env: Mapping[str, str], allowed: tuple[str, ...]) -> str:
    def one(match: re.Match[str]) -> str:
        name = match.group(1) or match.group(2)
        return env.get(name, "") if name in allowed else ""

    return _REFERENCE.sub(one, value)
