"""Skills: ``.claude/skills/<name>/SKILL.md`` instructions the model loads when it needs them.

A skill's front matter gives its ``name`` (default: the directory's name) and ``description``;
the body is what the ``Skill`` tool puts into the conversation. Skills come from
``~/.claude/skills`` (``"user"`` source) and ``<cwd>/.claude/skills`` (``"project"``); a project
skill wins over a personal one of the same name. Only the names and descriptions go into the
system prompt, so a skill costs its body's tokens only once it is used.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import attrs
import msgspec

from ..tools.base import Tool, ToolContext, ToolOutput
from ._files import read_settings_text
from ._frontmatter import FrontMatterError, split_front_matter

__all__ = ["SkillFile", "load_skills", "skill_tool", "skills_prompt_block"]


@attrs.frozen
class SkillFile:
    name: str
    description: str
    body: str
    path: str


def load_skills(
    cwd: str, setting_sources: list[str] | None, home: Path | None = None
) -> dict[str, SkillFile]:
    """The skills of the enabled sources, by name (blocking: run it in a thread)."""
    sources = setting_sources or []
    roots = []
    if "user" in sources:
        roots.append((home or Path.home()) / ".claude" / "skills")
    if "project" in sources:
        roots.append(Path(cwd) / ".claude" / "skills")
    skills: dict[str, SkillFile] = {}
    for root in roots:
        if not root.is_dir():
            continue
        for path in sorted(root.glob("*/SKILL.md")):
            fields, body = split_front_matter(read_settings_text(path), path)
            name = fields.get("name", path.parent.name)
            description = fields.get("description")
            if not isinstance(name, str) or not name:
                raise FrontMatterError(f"{path}: name must be a non-empty string, got {name!r}")
            if not isinstance(description, str) or not description:
                raise FrontMatterError(f"{path}: description is required (a non-empty string)")
            skills[name] = SkillFile(name=name, description=description, body=body, path=str(path))
    return skills


def skills_prompt_block(skills: Iterable[SkillFile]) -> dict[str, Any] | None:
    """The system block listing the skills, or None without skills."""
    lines = [f"- {s.name}: {s.description}" for s in skills]
    if not lines:
        return None
    text = (
        "Skills are available through the Skill tool. When a task matches a skill's "
        "description, load it with Skill{skill: <name>} before acting:\n" + "\n".join(lines)
    )
    return {"type": "text", "text": text}


class SkillInput(msgspec.Struct, forbid_unknown_fields=True):
    skill: str
    args: str | None = None


def skill_tool(skills: dict[str, SkillFile]) -> Tool:
    """The ``Skill`` tool over ``skills`` (a subagent gets the subset its definition names)."""

    async def run(args: SkillInput, ctx: ToolContext) -> ToolOutput:
        skill = skills.get(args.skill)
        if skill is None:
            known = ", ".join(sorted(skills)) or "none"
            return ToolOutput.error(f"unknown skill {args.skill!r} (available: {known})")
        text = f"Base directory for this skill: {Path(skill.path).parent}\n\n{skill.body}"
        if args.args:
            text += f"\n\nARGUMENTS: {args.args}"
        return ToolOutput(content=text, data={"skill": skill.name, "path": skill.path})

    return Tool(
        name="Skill",
        description=(
            "Load a skill's instructions into the conversation. Skills available: "
            + (", ".join(sorted(skills)) or "none")
        ),
        input_schema={
            "type": "object",
            "properties": {
                "skill": {"type": "string", "description": "The skill's name"},
                "args": {"type": "string", "description": "Optional arguments for the skill"},
            },
            "required": ["skill"],
            "additionalProperties": False,
        },
        handler=run,
        input_type=SkillInput,
    )
