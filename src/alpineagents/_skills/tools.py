"""What the model gets of an Agent's skills: the catalogue in the system prompt and the two built-in tools.

Progressive disclosure: the system prompt lists only each skill's name and description (the catalogue, appended
after the Agent's own system text, so it is the same on every request and prompt caching keeps working);
`load_skill(name)` returns a skill's instructions; `read_skill_resource(name, path)` returns one other file of
the skill (text, or an image as an image). Both are read-only tools like any other: permissions see them, their
results are recorded, saved, counted in the context, compacted and cleared like any tool result. Nothing here
ever runs a skill's scripts.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path, PurePosixPath, PureWindowsPath

from alpineagents._skills.reading import MAX_BYTES, MAX_TEXT, SKILL_FILE, Skill, cut, inside, read_skills
from alpineagents.errors import ToolError, ToolInputError, fix_message
from alpineagents.tool import Tool, collect_tools, tool
from alpineagents.types import Image

__all__ = [
    "SKILL_TOOLS",
    "MAX_TEXT",
    "MAX_BYTES",
    "catalogue",
    "system_with_catalogue",
    "skill_tools",
    "add_skill_tools",
    "skill_tool",
    "instructions_text",
    "read_resource",
]

SKILL_TOOLS = ("load_skill", "read_skill_resource")
"""The names of the built-in skill tools."""

MAX_PATH = 1024
"""A resource path longer than this many characters is an input error (no file of a skill has one)."""

MAX_LISTED = 100
"""At most this many files of a skill are listed after its instructions."""

_IMAGE_SUFFIXES = frozenset({".png", ".jpg", ".jpeg", ".gif", ".webp"})

CATALOGUE_HEAD = (
    "# Skills\n\n"
    "You have skills: folders of instructions for particular tasks. Only their names and descriptions are listed "
    "here. When a task matches a skill's description, call load_skill with the skill's name to read its "
    "instructions before you start, then follow them. The instructions may point to other files of the skill "
    "(references, templates, scripts): read one with read_skill_resource only when you need it."
)


def catalogue(skills: Mapping[str, Skill]) -> str:
    """The skills part of the system prompt: the head, then one line `- name: description` per skill."""
    lines = [CATALOGUE_HEAD, "", "<skills>"]
    lines += [f"- {skill.name}: {' '.join(skill.description.split())}" for skill in skills.values()]
    lines.append("</skills>")
    return "\n".join(lines)


def system_with_catalogue(system: str | None, skills: Mapping[str, Skill]) -> str | None:
    """The system text a request carries: the Agent's own text, then the catalogue (the own text alone when there
    are no skills)."""
    if not skills:
        return system
    if system is None or not system.strip():
        return catalogue(skills)
    return f"{system.rstrip()}\n\n{catalogue(skills)}"


def _files(skill: Skill) -> list[str]:
    """The files of a skill besides its SKILL.md, as paths inside its folder, sorted (hidden ones left out)."""
    found: list[str] = []
    for root, dirs, names in os.walk(skill.folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        relative = Path(root).relative_to(skill.folder)
        for name in sorted(names):
            if name.startswith(".") or (name == SKILL_FILE and relative == Path(".")):
                continue
            found.append((relative / name).as_posix())
    return sorted(found)


def instructions_text(skill: Skill) -> str:
    """What `load_skill` returns: the skill's instructions (cut at `MAX_TEXT` characters), then where it is and
    which other files it has."""
    parts = [f'Instructions of the skill "{skill.name}":', "", cut(skill.instructions) or "(no instructions)"]
    files = _files(skill)
    parts += ["", "---", f"Skill folder: {skill.folder}"]
    if files:
        shown = ", ".join(files[:MAX_LISTED])
        more = f" (and {len(files) - MAX_LISTED} more)" if len(files) > MAX_LISTED else ""
        parts.append(f'Other files (read one with read_skill_resource(name="{skill.name}", path=...)): {shown}{more}')
    return "\n".join(parts)


class SkillTools:
    """The two built-in tools over one Agent's skills (`collect_tools` binds both to the object)."""

    def __init__(self, skills: Mapping[str, Skill]) -> None:
        self.skills = dict(skills)

    def _skill(self, name: str) -> Skill:
        skill = self.skills.get(name)
        if skill is None:
            names = ", ".join(self.skills) or "(none)"
            raise ToolError(f"There is no skill named {name!r}. Skills: {names}")
        return skill

    @tool(name="load_skill", read_only=True, open_world=False)
    def load_skill(self, name: str) -> str:
        """Read the instructions of one of your skills (listed in the system prompt). Load a skill before a task
        that its description matches, then follow its instructions.

        Args:
            name: The skill's name, as listed.
        """
        return instructions_text(self._skill(name))

    @tool(name="read_skill_resource", read_only=True, open_world=False)
    def read_skill_resource(self, name: str, path: str) -> str | Image:
        """Read one file of a skill, such as a reference, a template or a script its instructions point to.

        Args:
            name: The skill's name.
            path: The file's path inside the skill's folder, as the instructions give it (e.g. references/forms.md).
        """
        return read_resource(self._skill(name), path)


def skill_tools(skills: Mapping[str, Skill]) -> dict[str, Tool]:
    """The built-in skill tools by name (none without skills)."""
    if not skills:
        return {}
    return collect_tools([SkillTools(skills)])


def _outside(skill: Skill, path: str) -> ToolError:
    return ToolError(
        f"{path!r} is outside the skill {skill.name!r}: give a path inside its folder, such as references/guide.md"
    )


def resource_path(skill: Skill, path: str) -> Path:
    """The real path of the file `path` names inside the skill's folder.

    Raises:
        ToolInputError: a path with a NUL character, or longer than `MAX_PATH` characters.
        ToolError: an empty path, an absolute one, one with `..`, or one whose real path (symlinks resolved)
            leaves the skill's folder.
    """
    example = "give the path of a file inside the skill's folder, such as references/guide.md"
    if "\0" in path:
        raise ToolInputError(f"path holds a NUL character, which no file name has: {example}")
    if len(path) > MAX_PATH:
        raise ToolInputError(
            f"path has {len(path)} characters, more than the {MAX_PATH} a skill file's path may have: {example}"
        )
    if not path.strip():
        raise ToolError(f"path is empty: {example}")
    relative = PurePosixPath(path.replace("\\", "/"))
    if relative.is_absolute() or PureWindowsPath(path).drive or ".." in relative.parts:
        raise _outside(skill, path)
    real = os.path.realpath(os.path.join(skill.folder, *relative.parts))
    if not inside(skill.folder, real):
        raise _outside(skill, path)
    return Path(real)


def read_resource(skill: Skill, path: str) -> str | Image:
    """One file of a skill: its text (cut at `MAX_TEXT` characters), or an image as an `Image`.

    Raises:
        ToolInputError: a path no file can have (a NUL character, too long, refused by the file system).
        ToolError: the path leaves the folder, names nothing or a folder, or the file is too large, binary or
            unreadable.
    """
    file = resource_path(skill, path)
    try:
        kind = "folder" if file.is_dir() else "file" if file.is_file() else None
    except OSError as error:  # a name the file system refuses (one part too long, say)
        raise ToolInputError(f"{path!r} cannot name a file ({type(error).__name__}: {error.strerror})") from None
    if kind == "folder":
        relative = Path(os.path.relpath(file, skill.folder)).as_posix()
        prefix = "" if relative == "." else f"{relative}/"
        inside = [name for name in _files(skill) if name.startswith(prefix)]
        raise ToolError(f"{path!r} is a folder of the skill {skill.name!r}; its files: {', '.join(inside) or '(none)'}")
    if kind is None:
        names = ", ".join(_files(skill)[:MAX_LISTED]) or "(none)"
        raise ToolError(f"The skill {skill.name!r} has no file {path!r}. Its files: {names}")
    try:
        size = file.stat().st_size
        if size > MAX_BYTES:
            raise ToolError(f"{path!r} has {size} bytes, more than the {MAX_BYTES} a skill file may have")
        data = file.read_bytes()
    except OSError as error:
        raise ToolError(f"{path!r} cannot be read ({type(error).__name__}: {error.strerror})") from error
    if file.suffix.lower() in _IMAGE_SUFFIXES:
        try:
            return Image(data)
        except ValueError as error:
            raise ToolError(f"{path!r} is not an image this library can send ({error})") from error
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise ToolError(f"{path!r} is a binary file, which cannot be shown as text") from None
    return cut(text)


def add_skill_tools(tools: dict[str, Tool], items: tuple[object, ...]) -> dict[str, Skill]:
    """Read the skills of `Agent(skills=...)` and add the built-in skill tools after `tools` (none without skills).

    Raises:
        TypeError, ValueError: what `read_skills` raises; a tool of `tools=` that has a built-in tool's name.
    """
    if not items:
        return {}
    skills = read_skills(items)
    for name, made in skill_tools(skills).items():
        if name in tools:
            raise ValueError(
                fix_message(
                    f"The tool {name!r} in tools= has the name of a built-in skill tool ({', '.join(SKILL_TOOLS)})",
                    'rename your tool with @tool(name="..."), or leave skills= out',
                    '@tool(name="load_template")\ndef load_skill(name: str) -> str: ...',
                )
            )
        tools[name] = made
    return skills


def skill_tool(skills: Mapping[str, Skill], tools: Mapping[str, Tool], name: object, method: str) -> Tool:
    """The built-in `load_skill` tool, for the program's own `load_skill(state, name)` of a skill the Agent has.

    Raises:
        TypeError: `name` is not a string.
        ValueError: the Agent has no skill of that name (the message lists its skills).
    """
    example = f'agent.{method}(state, "pdf-forms")'
    if not isinstance(name, str):
        raise TypeError(fix_message(f"{method}() takes a skill name (got: {name!r})", "pass the name", example))
    if name not in skills:
        names = ", ".join(skills) or "(none: this Agent has no skills=)"
        raise ValueError(
            fix_message(
                f"{method}() got {name!r}, which is not a skill of this Agent (its skills: {names})",
                "pass the name of one of the Agent's skills (agent.skills lists them)",
                example,
            )
        )
    return tools[SKILL_TOOLS[0]]
