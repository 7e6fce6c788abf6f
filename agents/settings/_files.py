"""Claude Code's settings files, loaded per ``setting_sources`` and merged as Claude Code does.

* ``"user"``: ``~/.claude/settings.json``
* ``"project"``: ``<cwd>/.claude/settings.json``
* ``"local"``: ``<cwd>/.claude/settings.local.json``

Precedence, lowest to highest: user, project, local — and the session's own options above them
all (as command-line flags are in Claude Code). Scalars (``permissions.defaultMode``) and ``env``
keys take the value of the highest file that sets them; permission rule lists,
``additionalDirectories`` and hooks are combined from every file (a deny rule anywhere still
denies). Keys this project does not use (``model``, ``statusLine``, ...) are ignored; a file that
is not JSON, or a known key of the wrong shape, is a :class:`SettingsError` naming the file and the
key.

Every file of a settings source (these, ``.mcp.json``, skills and commands) is read only up to
``MAX_SETTINGS_FILE_BYTES``: a longer one is a :class:`SettingsError` naming it and the limit.
They may come with a cloned repository, and were read whole, decoded and held for the session
(a 200 MB ``SKILL.md`` held the event loop's thread for 260 ms and 400 MiB).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

__all__ = [
    "MAX_SETTINGS_FILE_BYTES",
    "HookCommand",
    "HttpHook",
    "PromptHook",
    "Settings",
    "SettingsError",
    "SettingsHook",
    "load_settings",
    "read_json",
    "read_settings_text",
    "settings_files",
]

#: Bytes a settings source's file may have (settings, ``.mcp.json``, skills, commands).
MAX_SETTINGS_FILE_BYTES = 4 << 20

_PERMISSION_MODES = ("default", "acceptEdits", "plan", "dontAsk", "auto", "bypassPermissions")


class SettingsError(ValueError):
    """A settings file is malformed; the message names the file and the key."""


@attrs.frozen
class HookCommand:
    """One ``{"type": "command", "command": ..., "timeout"?: s}`` entry of a settings file."""

    event: str
    matcher: str | None
    command: str
    timeout: float | None
    source: str  # the file it came from, for error messages


@attrs.frozen
class HttpHook:
    """One ``{"type": "http", "url", "headers"?, "allowedEnvVars"?, "timeout"?}`` entry: the hook
    input is POSTed to ``url``; ``$VAR`` in header values is filled only for ``allowedEnvVars``."""

    event: str
    matcher: str | None
    url: str
    source: str
    headers: Mapping[str, str] = attrs.field(factory=dict)
    allowed_env_vars: tuple[str, ...] = ()
    timeout: float | None = None


@attrs.frozen
class PromptHook:
    """One ``{"type": "prompt", "prompt", "model"?, "timeout"?}`` entry: the session's model
    decides (see :mod:`agents.settings._prompt_hooks`)."""

    event: str
    matcher: str | None
    prompt: str
    source: str
    model: str | None = None
    timeout: float | None = None


@attrs.frozen
class AgentHook:
    """One ``{"type": "agent", "prompt", "model"?, "timeout"?}`` entry: a short-lived agent with
    read-only tools (Read, Grep, Glob) decides (see :mod:`agents.settings._agent_hooks`)."""

    event: str
    matcher: str | None
    prompt: str
    source: str
    model: str | None = None
    timeout: float | None = None


SettingsHook = HookCommand | HttpHook | PromptHook | AgentHook


@attrs.frozen
class Settings:
    """The merged settings of the loaded files (empty when no source is enabled)."""

    allow: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()
    ask: tuple[str, ...] = ()
    additional_directories: tuple[str, ...] = ()
    default_mode: str | None = None
    env: Mapping[str, str] = attrs.field(factory=dict)
    hooks: tuple[SettingsHook, ...] = ()
    files: tuple[str, ...] = ()


def settings_files(
    cwd: str, setting_sources: list[str] | None, home: Path | None = None
) -> list[Path]:
    """The settings files of the enabled sources, lowest precedence first (existing or not)."""
    sources = setting_sources or []
    root = Path(cwd)
    paths = []
    if "user" in sources:
        paths.append((home or Path.home()) / ".claude" / "settings.json")
    if "project" in sources:
        paths.append(root / ".claude" / "settings.json")
    if "local" in sources:
        paths.append(root / ".claude" / "settings.local.json")
    return paths


def load_settings(
    cwd: str,
    setting_sources: list[str] | None,
    home: Path | None = None,
    extra: str | Mapping[str, Any] | None = None,
) -> Settings:
    """Read and merge the settings files (blocking: call it from a thread in async code).

    ``extra`` (the ``settings`` option: a file path, a JSON string or a dict) comes last, above
    every file, whatever ``setting_sources`` says (as Claude Code's ``--settings``)."""
    allow: list[str] = []
    deny: list[str] = []
    ask: list[str] = []
    dirs: list[str] = []
    mode: str | None = None
    env: dict[str, str] = {}
    hooks: list[SettingsHook] = []
    files: list[str] = []
    loaded: list[tuple[Path, Mapping[str, Any]]] = []
    for path in settings_files(cwd, setting_sources, home):
        if path.is_file():
            loaded.append((path, read_json(path)))
    if extra is not None:
        loaded.append(_extra(extra, cwd))
    for path, data in loaded:
        files.append(str(path))
        permissions = _get(data, path, "permissions", Mapping, {})
        for key, into in (("allow", allow), ("deny", deny), ("ask", ask)):
            for rule in _str_list(permissions, path, f"permissions.{key}", key):
                if rule not in into:
                    into.append(rule)
        for d in _str_list(
            permissions, path, "permissions.additionalDirectories", "additionalDirectories"
        ):
            resolved = str((path.parent.parent / Path(d).expanduser()).resolve())
            if resolved not in dirs:
                dirs.append(resolved)
        file_mode = permissions.get("defaultMode")
        if file_mode is not None:
            if file_mode not in _PERMISSION_MODES:
                raise SettingsError(
                    f"{path}: permissions.defaultMode must be one of "
                    f"{', '.join(_PERMISSION_MODES)}, got {file_mode!r}"
                )
            mode = file_mode
        file_env = _get(data, path, "env", Mapping, {})
        for name, value in file_env.items():
            if not isinstance(value, str | int | float | bool):
                raise SettingsError(f"{path}: env.{name} must be a string, got {value!r}")
            env[name] = value if isinstance(value, str) else json.dumps(value)
        hooks.extend(_hooks(_get(data, path, "hooks", Mapping, {}), path))
    return Settings(
        allow=tuple(allow),
        deny=tuple(deny),
        ask=tuple(ask),
        additional_directories=tuple(dirs),
        default_mode=mode,
        env=env,
        hooks=tuple(hooks),
        files=tuple(files),
    )


def _extra(extra: str | Mapping[str, Any], cwd: str) -> tuple[Path, Mapping[str, Any]]:
    """The ``settings`` option as ``(where, data)``; ``where`` names it in errors (paths in it
    resolve against ``cwd``, as a project file's do)."""
    if isinstance(extra, Mapping):
        return Path(cwd) / ".claude" / "<settings option>", extra
    if not isinstance(extra, str):
        raise SettingsError(f"settings must be a path, a JSON string or a dict, got {extra!r}")
    if extra.lstrip().startswith("{"):
        try:
            data = json.loads(extra)
        except json.JSONDecodeError as exc:
            raise SettingsError(f"settings option: invalid JSON: {exc.msg}") from None
        if not isinstance(data, Mapping):
            raise SettingsError(f"settings option: must be a JSON object, got {data!r}")
        return Path(cwd) / ".claude" / "<settings option>", data
    path = Path(extra).expanduser()
    path = path if path.is_absolute() else Path(cwd) / path
    return path, read_json(path)


def read_settings_text(path: Path) -> str:
    """``path``'s text as ``Path.read_text(encoding="utf-8")`` reads it (universal newlines),
    reading no more than ``MAX_SETTINGS_FILE_BYTES`` and one byte: a longer file is a
    :class:`SettingsError` naming the limit. ``OSError`` and ``UnicodeDecodeError`` pass."""
    with open(path, "rb") as f:
        data = f.read(MAX_SETTINGS_FILE_BYTES + 1)
        if len(data) > MAX_SETTINGS_FILE_BYTES:
            size = os.fstat(f.fileno()).st_size
            raise SettingsError(
                f"{path}: {size if size > MAX_SETTINGS_FILE_BYTES else 'more'} bytes, over the "
                f"{MAX_SETTINGS_FILE_BYTES}-byte limit of a settings source's file"
            )
    return data.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")


def read_json(path: Path) -> Mapping[str, Any]:
    try:
        text = read_settings_text(path)
    except (OSError, UnicodeDecodeError) as exc:
        raise SettingsError(f"{path}: cannot be read: {exc}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SettingsError(
            f"{path}: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"
        ) from None
    if not isinstance(data, Mapping):
        raise SettingsError(f"{path}: must be a JSON object, got {type(data).__name__}")
    return data


def _get(data: Mapping[str, Any], path: Path, key: str, kind: type, default: Any) -> Any:
    value = data.get(key.rsplit(".", 1)[-1], default)
    if not isinstance(value, kind):
        raise SettingsError(f"{path}: {key} must be a JSON object, got {value!r}")
    return value


def _str_list(data: Mapping[str, Any], path: Path, key: str, field: str) -> list[str]:
    value = data.get(field, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise SettingsError(f"{path}: {key} must be a list of strings, got {value!r}")
    return value


def _hooks(data: Mapping[str, Any], path: Path) -> list[SettingsHook]:
    from ..hooks import HOOK_EVENTS

    out: list[SettingsHook] = []
    for event, matchers in data.items():
        where = f"hooks.{event}"
        if event not in HOOK_EVENTS:
            raise SettingsError(
                f"{path}: {where}: unknown hook event {event!r} (expected one of "
                f"{', '.join(HOOK_EVENTS)})"
            )
        if not isinstance(matchers, list):
            raise SettingsError(f"{path}: {where} must be a list of matchers, got {matchers!r}")
        for i, entry in enumerate(matchers):
            here = f"{where}[{i}]"
            if not isinstance(entry, Mapping):
                raise SettingsError(f"{path}: {here} must be an object, got {entry!r}")
            matcher = entry.get("matcher")
            if matcher is not None and not isinstance(matcher, str):
                raise SettingsError(f"{path}: {here}.matcher must be a string, got {matcher!r}")
            commands = entry.get("hooks")
            if not isinstance(commands, list):
                raise SettingsError(f"{path}: {here}.hooks must be a list, got {commands!r}")
            for j, hook in enumerate(commands):
                out.append(_hook_command(hook, path, f"{here}.hooks[{j}]", event, matcher))
    return out


def _hook_command(
    hook: Any, path: Path, where: str, event: str, matcher: str | None
) -> SettingsHook:
    if not isinstance(hook, Mapping):
        raise SettingsError(f"{path}: {where} must be an object, got {hook!r}")
    kind = hook.get("type", "command")
    timeout = hook.get("timeout")
    if timeout is not None and (
        isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0
    ):
        raise SettingsError(
            f"{path}: {where}.timeout must be a number of seconds > 0, got {timeout!r}"
        )
    seconds = None if timeout is None else float(timeout)
    if kind == "http":
        return _http_hook(hook, path, where, event, matcher, seconds)
    if kind in ("prompt", "agent"):
        return _prompt_hook(hook, path, where, event, matcher, seconds, kind)
    if kind != "command":
        raise SettingsError(
            f"{path}: {where}.type must be 'command', 'http', 'prompt' or 'agent', got {kind!r}"
        )
    command = hook.get("command")
    if not isinstance(command, str) or not command.strip():
        raise SettingsError(f"{path}: {where}.command must be a non-empty string, got {command!r}")
    return HookCommand(
        event=event, matcher=matcher, command=command, timeout=seconds, source=str(path)
    )


def _http_hook(
    hook: Mapping[str, Any],
    path: Path,
    where: str,
    event: str,
    matcher: str | None,
    timeout: float | None,
) -> HttpHook:
    url = hook.get("url")
    if not isinstance(url, str) or not url.startswith(("http://", "https://")):
        raise SettingsError(f"{path}: {where}.url must be an http:// or https:// URL, got {url!r}")
    headers = hook.get("headers", {})
    if not isinstance(headers, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in headers.items()
    ):
        raise SettingsError(
            f"{path}: {where}.headers must be an object of strings, got {headers!r}"
        )
    allowed = hook.get("allowedEnvVars", [])
    if not isinstance(allowed, list) or not all(isinstance(v, str) for v in allowed):
        raise SettingsError(
            f"{path}: {where}.allowedEnvVars must be a list of variable names, got {allowed!r}"
        )
    return HttpHook(
        event=event,
        matcher=matcher,
        url=url,
        source=str(path),
        headers=dict(headers),
        allowed_env_vars=tuple(allowed),
        timeout=timeout,
    )


def _prompt_hook(
    hook: Mapping[str, Any],
    path: Path,
    where: str,
    event: str,
    matcher: str | None,
    timeout: float | None,
    kind: str,
) -> PromptHook | AgentHook:
    prompt = hook.get("prompt")
    if not isinstance(prompt, str) or not prompt.strip():
        raise SettingsError(f"{path}: {where}.prompt must be a non-empty string, got {prompt!r}")
    model = hook.get("model")
    if model is not None and (not isinstance(model, str) or not model):
        raise SettingsError(f"{path}: {where}.model must be a model name, got {model!r}")
    of_kind = AgentHook if kind == "agent" else PromptHook
    return of_kind(
        event=event, matcher=matcher, prompt=prompt, source=str(path), model=model, timeout=timeout
    )
