"""The engine's revision: a number that moves whenever what the engine builds from the same input changes.

Every memory key holds it, so a memory built by an earlier engine is never reused as if this one had built it.
``tests/om/test_engine_revision.py`` replays a fixed conversation under each rules profile and compares the memory
with a golden file: when the engine's behaviour moves, that test fails until this number is bumped and
``CHANGELOG.md`` says why (the history of earlier revisions lives there).
"""

ENGINE_REVISION = 1
