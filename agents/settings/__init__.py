"""Claude Code's files, loaded per ``setting_sources``: settings (permission rules, env, hooks
as shell commands, http requests, model prompts or short-lived agents), slash commands from
``.claude/commands``, skills from ``.claude/skills`` and the project's MCP servers from
``.mcp.json``.

Everything here reads files; nothing runs until a session uses it.
"""

from __future__ import annotations

from ._agent_hooks import AGENT_HOOK_MAX_TURNS as AGENT_HOOK_MAX_TURNS
from ._agent_hooks import AGENT_HOOK_TOOLS as AGENT_HOOK_TOOLS
from ._agent_hooks import RunHookAgent as RunHookAgent
from ._agent_hooks import agent_hook as agent_hook
from ._agent_hooks import check_decision as check_decision
from ._commands import SlashCommand as SlashCommand
from ._commands import expand_command as expand_command
from ._commands import load_commands as load_commands
from ._files import AgentHook as AgentHook
from ._files import HookCommand as HookCommand
from ._files import HttpHook as HttpHook
from ._files import PromptHook as PromptHook
from ._files import Settings as Settings
from ._files import SettingsError as SettingsError
from ._files import load_settings as load_settings
from ._files import settings_files as settings_files
from ._frontmatter import FrontMatterError as FrontMatterError
from ._http_hooks import http_hook as http_hook
from ._mcp_json import load_mcp_json as load_mcp_json
from ._mcp_json import mcp_json_path as mcp_json_path
from ._prompt_hooks import AskModel as AskModel
from ._prompt_hooks import HookDecisionError as HookDecisionError
from ._prompt_hooks import prompt_hook as prompt_hook
from ._shell_hooks import shell_hook as shell_hook
from ._shell_hooks import shell_hook_matchers as shell_hook_matchers
from ._skills import SkillFile as SkillFile
from ._skills import load_skills as load_skills
from ._skills import skill_tool as skill_tool
from ._skills import skills_prompt_block as skills_prompt_block

__all__ = [
    "AGENT_HOOK_MAX_TURNS",
    "AGENT_HOOK_TOOLS",
    "AgentHook",
    "AskModel",
    "FrontMatterError",
    "HookCommand",
    "HookDecisionError",
    "HttpHook",
    "PromptHook",
    "RunHookAgent",
    "Settings",
    "SettingsError",
    "SkillFile",
    "SlashCommand",
    "agent_hook",
    "check_decision",
    "expand_command",
    "http_hook",
    "load_commands",
    "load_mcp_json",
    "load_settings",
    "load_skills",
    "mcp_json_path",
    "prompt_hook",
    "settings_files",
    "shell_hook",
    "shell_hook_matchers",
    "skill_tool",
    "skills_prompt_block",
]
