"""Reading skill folders: a `SKILL.md` with YAML front matter (`name`, `description`), then Markdown instructions.

A skill is a folder. Its `SKILL.md` starts with a front matter block between two lines of `---`, which holds at
least `name` (1-64 characters of lowercase letters, digits and single hyphens, not at either end, equal to the
folder's name) and `description` (1-1,024 characters: what the skill does and when to use it). Other keys of the
open Agent Skills format (`license`, `compatibility`, `metadata`, `allowed-tools`, ...) are allowed and ignored.
The rest of the file is the instructions. Any other file of the folder (`scripts/`, `references/`, `assets/`) is
read only when the model asks for it.

Each item of `Agent(skills=...)` is a skill folder, or a folder whose sub-folders are skills (hidden folders and
folders starting with `_` are skipped). Everything is read and checked when the Agent is built; a problem raises
a `ValueError` that names the file and says how to fix it. A `SKILL.md` is held to the limits of the other files
of a skill: at most `MAX_BYTES` bytes, cut at `MAX_TEXT` characters when the model reads it, and inside its
folder (a link to a file elsewhere is refused). The front matter is read with PyYAML's safe loader, so
quoting, multi-line descriptions and nested `metadata` work as in any YAML file.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from alpineagents.errors import fix_message

__all__ = ["Skill", "SKILL_FILE", "MAX_TEXT", "MAX_BYTES", "read_skills", "skill_error", "inside", "cut"]

SKILL_FILE = "SKILL.md"
"""The file that makes a folder a skill."""

MAX_TEXT = 100_000
"""A skill's text (its instructions, a text resource) longer than this many characters reaches the model cut there,
with a note saying so."""

MAX_BYTES = 10_000_000
"""A skill file (its `SKILL.md`, a resource) larger than this many bytes is refused."""

MAX_NAME = 64
MAX_DESCRIPTION = 1024

_NAME = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")

_EXAMPLE = "---\nname: pdf-forms\ndescription: Fill in PDF forms. Use it when the user gives a PDF form to fill.\n---\n"
"""The front matter every fix shows."""


@dataclass(frozen=True)
class Skill:
    """One skill, as read when the Agent was built.

    Attributes:
        name: its name (the folder's name).
        description: what it does and when to use it, as written.
        folder: the real path of its folder (symlinks resolved), which no resource may leave.
        instructions: the Markdown after the front matter, stripped (whole: `load_skill` cuts it at `MAX_TEXT`
            characters).
    """

    name: str
    description: str
    folder: str
    instructions: str


def inside(root: str, real: str) -> bool:
    """Whether the real path `real` is the folder `root` (a real path) or lies inside it."""
    return real == root or real.startswith(root.rstrip(os.sep) + os.sep)


def cut(text: str) -> str:
    """`text` as the model reads it: whole up to `MAX_TEXT` characters, else its start with a note saying so."""
    if len(text) <= MAX_TEXT:
        return text
    return f"{text[:MAX_TEXT]}\n\n(cut: the file has {len(text)} characters; only the first {MAX_TEXT} are shown)"


def skill_error(problem: str, fix: str, example: str | None = _EXAMPLE) -> ValueError:
    """The `ValueError` of a skill that cannot be read, laid out by `fix_message`."""
    return ValueError(fix_message(problem, fix, example))


def read_skills(items: tuple[Any, ...]) -> dict[str, Skill]:
    """Read every skill of `Agent(skills=...)`, in the order given (the sub-folders of a folder of skills by name).

    Raises:
        TypeError: an item is not a path (a `str` or an `os.PathLike`).
        ValueError: a path that is missing or not a folder, a folder with no skill, a `SKILL.md` that cannot be
            read, bad front matter, a bad name or description, or two skills with one name.
    """
    found: dict[str, Skill] = {}
    sources: dict[str, str] = {}
    for item in items:
        for folder in _skill_folders(item):
            skill = read_skill(folder)
            if skill.name in found:
                raise skill_error(
                    f"Two skills are named {skill.name!r}: {sources[skill.name]} and {folder}",
                    "keep one of them in skills=, or rename one (its folder and the name: in its SKILL.md)",
                    None,
                )
            found[skill.name] = skill
            sources[skill.name] = str(folder)
    return found


def _skill_folders(item: object) -> list[Path]:
    """The skill folders an item of `skills=` names: itself when it holds a `SKILL.md`, else its sub-folders."""
    if not isinstance(item, (str, os.PathLike)):
        raise TypeError(
            fix_message(
                f"skills= takes paths of skill folders (got: {item!r})",
                "pass each skill folder (or a folder of skill folders) as a string or a Path",
                'Agent(model, skills=["skills/pdf-forms", "team-skills"])',
            )
        )
    path = Path(os.fspath(item))  # pyright: ignore[reportArgumentType]  # a str or a PathLike of str
    example = 'Agent(model, skills=["skills/pdf-forms"])'
    if not path.exists():
        raise skill_error(
            f"skills= got {str(path)!r}, which does not exist",
            "pass the path of a skill folder (one that holds a SKILL.md), or of a folder of skill folders",
            example,
        )
    if not path.is_dir():
        raise skill_error(
            f"skills= got {str(path)!r}, which is a file, not a folder",
            f"pass the folder that holds the {SKILL_FILE}, not the file itself",
            example,
        )
    if (path / SKILL_FILE).exists():
        return [path]
    subs = sorted(sub for sub in path.iterdir() if sub.is_dir() and not sub.name.startswith((".", "_")))
    if not subs:
        raise skill_error(
            f"{path / SKILL_FILE} is missing, and {str(path)!r} has no skill folders in it",
            f"write a {SKILL_FILE} in the folder (front matter with name: and description:, then the instructions), "
            "or pass a folder whose sub-folders are skills",
        )
    for sub in subs:
        if not (sub / SKILL_FILE).exists():
            raise skill_error(
                f"{sub / SKILL_FILE} is missing: every folder inside the skills folder {str(path)!r} must be a skill",
                f"write a {SKILL_FILE} in {str(sub)!r} (front matter with name: and description:, then the "
                "instructions), or move the folder out (or start its name with _ to skip it)",
            )
    return subs


def read_skill(folder: Path) -> Skill:
    """Read and check one skill folder (see the module for the rules).

    Raises:
        ValueError: the `SKILL.md` cannot be read, or breaks a rule (the message names the file).
    """
    file = folder / SKILL_FILE
    root = os.path.realpath(folder)
    if not inside(root, os.path.realpath(file)):
        raise skill_error(
            f"{file} is a link to {os.path.realpath(file)}, outside the skill's folder",
            "copy the file into the folder instead of linking to it: a skill's files stay inside its folder",
            None,
        )
    try:
        size = file.stat().st_size
        if size > MAX_BYTES:
            raise skill_error(
                f"{file} has {size} bytes, more than the {MAX_BYTES} a skill file may have",
                "keep the instructions short and move the details into files of the skill's folder, which the "
                "model reads one at a time when it needs them",
                None,
            )
        text = file.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as error:
        raise skill_error(f"{file} is not UTF-8 text ({error})", "save it as UTF-8") from error
    except OSError as error:
        raise skill_error(f"{file} cannot be read ({type(error).__name__}: {error})", "check the file") from error
    front, body = _split(text, file)
    data = _front_matter(front, file)
    name = _name(data, file, folder)
    description = _description(data, file)
    return Skill(name, description, root, body.strip())


def _split(text: str, file: Path) -> tuple[str, str]:
    """The front matter and the body of a `SKILL.md`."""
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].strip() != "---":
        raise skill_error(
            f"{file} does not start with front matter",
            "start the file with a line ---, then name: and description:, then a line ---, then the instructions",
        )
    for index in range(1, len(lines)):
        if lines[index].strip() == "---":
            return "".join(lines[1:index]), "".join(lines[index + 1 :])
    raise skill_error(
        f"the front matter of {file} has no closing line ---",
        "end the front matter with a line that holds only ---",
    )


def _front_matter(front: str, file: Path) -> dict[Any, Any]:
    import yaml  # loaded only when an Agent has skills

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # the C parser when PyYAML has it: ~5x faster
    try:
        data = yaml.load(front, Loader=loader)  # noqa: S506 - a safe loader either way
    except yaml.YAMLError as error:
        shown = " ".join(str(error).split())
        raise skill_error(
            f"the front matter of {file} is not valid YAML ({shown})",
            "write it as YAML key: value lines; put a description that holds a colon in quotes",
        ) from error
    if not isinstance(data, dict):
        raise skill_error(
            f"the front matter of {file} is not a set of key: value lines (got: {type(data).__name__})",
            "write name: and description: between the two lines ---",
        )
    return data


def _name(data: dict[Any, Any], file: Path, folder: Path) -> str:
    name = data.get("name")
    if not isinstance(name, str) or not name:
        shown = "has no name:" if name is None else f"has name: {name!r}, which is not a text"
        raise skill_error(f"the front matter of {file} {shown}", f"add name: {_suggest(folder.name)}")
    if len(name) > MAX_NAME or not _NAME.fullmatch(name):
        raise skill_error(
            f"the skill name {name!r} in {file} is not allowed: a name is 1-{MAX_NAME} characters of lowercase "
            "letters, digits and hyphens, with no hyphen at either end and no two hyphens in a row",
            f"rename the skill (and its folder), e.g. name: {_suggest(name)}",
        )
    if name != folder.name:
        raise skill_error(
            f"the skill name {name!r} in {file} differs from its folder's name {folder.name!r}",
            "rename the folder or change name: so that they are the same",
        )
    return name


def _description(data: dict[Any, Any], file: Path) -> str:
    description = data.get("description")
    if not isinstance(description, str) or not description.strip():
        shown = "has no description:" if description is None else f"has description: {description!r}"
        raise skill_error(
            f"the front matter of {file} {shown}; a skill needs a description of 1-{MAX_DESCRIPTION} characters",
            "say what the skill does and when to use it: the model reads only this to decide",
        )
    description = description.strip()
    if len(description) > MAX_DESCRIPTION:
        raise skill_error(
            f"the description in {file} has {len(description)} characters, more than {MAX_DESCRIPTION}",
            "shorten it to what the skill does and when to use it; move the details into the instructions",
        )
    return description


def _suggest(name: str) -> str:
    """A name that follows the rules, made from `name`."""
    words = re.findall(r"[a-z0-9]+", name.lower())
    return "-".join(words)[:MAX_NAME].strip("-") or "my-skill"
