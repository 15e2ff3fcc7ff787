"""The Hydra config groups every ``om-eval`` command composes from, shipped inside the package.

``om-eval run`` finds them on Hydra's package search path (``pkg://om_eval.configs``), so an installed wheel runs
from any folder. A user's own folder of configs is added with ``om-eval run --config-dir <folder>``: it may add
presets, models, datasets and memory options under new names; a file that would shadow a shipped one is refused
(see :func:`shadowed`), so a run never silently composes the package's file where the user meant theirs.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["CONFIG_DIR", "USER_CONFIG_ENV", "checked_user_dir", "config_dirs", "hydra_quoted", "searchpath_override",
           "shadowed", "user_config_dir", "using_user_dir"]

#: The shipped config groups (``model/``, ``experiment/``...).
CONFIG_DIR = Path(__file__).resolve().parent
#: Set by ``om-eval run --config-dir``, so name lookups outside Hydra (a judge panel's model names) and the sweep's
#: worker processes see the user's folder too.
USER_CONFIG_ENV = "OM_EVAL_USER_CONFIG_DIR"


def user_config_dir() -> Path | None:
    """The user's config folder of this run (``--config-dir``), if one was given."""
    value = os.environ.get(USER_CONFIG_ENV)
    return Path(value) if value else None


@contextmanager
def using_user_dir(folder: str | Path | None) -> Iterator[None]:
    """Name lookups outside Hydra see ``folder`` (``None``: no user folder) while the block runs; the setting it
    found is put back after, so a later command or ``evaluate`` in the same process does not inherit it."""
    before = os.environ.pop(USER_CONFIG_ENV, None)
    if folder is not None:
        os.environ[USER_CONFIG_ENV] = str(folder)
    try:
        yield
    finally:
        os.environ.pop(USER_CONFIG_ENV, None)
        if before is not None:
            os.environ[USER_CONFIG_ENV] = before


def config_dirs() -> tuple[Path, ...]:
    """The folders a config name is looked up in, in order: the shipped configs, then the user's folder."""
    user = user_config_dir()
    return (CONFIG_DIR,) if user is None else (CONFIG_DIR, user)


def shadowed(user_dir: Path) -> list[str]:
    """The files of ``user_dir`` (relative paths) that have the name of a shipped config.

    >>> shadowed(CONFIG_DIR)[:1]
    ['baseline/full_context.yaml']
    """
    return sorted(str(path.relative_to(user_dir)) for path in user_dir.rglob("*.yaml")
                  if (CONFIG_DIR / path.relative_to(user_dir)).is_file())


def checked_user_dir(value: str | Path, option: str = "--config-dir") -> Path:
    """``value`` as the absolute path of a user's config folder.

    Raises:
        ValueError: the folder does not exist, or a file in it has the name of a shipped config (Hydra would
            compose the shipped one and ignore the user's without a word).
    """
    folder = Path(os.path.expanduser(value)).resolve()
    if not folder.is_dir():
        raise ValueError(f"{option} {value}: no such folder (it should hold config groups such as experiment/ or "
                         "model/)")
    clashes = shadowed(folder)
    if clashes:
        raise ValueError(f"{option} {folder}: {', '.join(clashes)} would shadow the shipped config of the same name "
                         f"({CONFIG_DIR}); give yours a new name (e.g. experiment/my_smoke.yaml) and select it by that "
                         "name")
    return folder


def hydra_quoted(text: str) -> str:
    """``text`` as a quoted value in a Hydra override: a path may hold commas (a sweep, unquoted), spaces,
    parentheses, ``=`` or ``${`` (an interpolation), which the override grammar would read.

    >>> hydra_quoted("/tmp/a b,c")
    "'/tmp/a b,c'"
    """
    escaped = text.replace("\\", "\\\\").replace("'", "\\'").replace("${", "\\${")
    return f"'{escaped}'"


def searchpath_override(folder: Path) -> str:
    """The Hydra override that adds ``folder`` to a composition's search path (quoted, :func:`hydra_quoted`)."""
    return f"hydra.searchpath=[{hydra_quoted(f'file://{folder}')}]"
