"""The one exception hierarchy of aqmlab.

- :class:`AqmlabError`: base of everything aqmlab raises on purpose.
- :class:`ScenarioError`: the scenario (file, text, dict or argument) is wrong. ``field``
  is the dotted path of the offending key (``dumbbell.rate``, ``flow[2].to``; empty for
  whole-file problems such as malformed TOML) and ``message`` says what is wrong, with the
  bad value and what is allowed.
- :class:`SimulationError`: the simulator failed on a valid scenario (a Rust panic caught
  at the binding boundary): a bug to report, never a crash of the interpreter.
- :class:`StudyError`: a malformed study file; the message names the key.
- :class:`StoreError`: a result store is damaged, unreadable or not a store; the message
  names the file (and the run) and says how to repair it. :class:`StoreLocked`: another
  process is writing into the store.
- :class:`EnvironmentFailure`: the machine refused an operation (disk full, read-only file
  system, permission denied) on a path; the message names the path and what to do.

The Rust extension raises these classes too, so ``except aqmlab.ScenarioError`` catches
errors from every layer. Instances pickle (their ``args`` are the constructor arguments),
so they cross process pools intact.
"""

from __future__ import annotations

__all__ = ["AqmlabError", "ScenarioError", "SimulationError", "StudyError", "StoreError", "StoreLocked", "EnvironmentFailure"]


class AqmlabError(Exception):
    """Base class of all aqmlab errors."""


class ScenarioError(AqmlabError, ValueError):
    """Bad scenario input: ``field`` names the key, ``message`` what is wrong."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(field, message)
        self.field = field
        self.message = message

    def __str__(self) -> str:
        one_line = " ".join(self.message.split())
        return f"{self.field}: {one_line}" if self.field else one_line


class SimulationError(AqmlabError, RuntimeError):
    """The simulator failed on a valid scenario (an internal error)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return " ".join(self.message.split())


class StudyError(AqmlabError, ValueError):
    """A malformed study file; the message names the key."""


class StoreError(AqmlabError):
    """A result store that is damaged, unreadable or not a store (the message names the
    file and says how to repair it)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return " ".join(self.message.split())


class StoreLocked(StoreError):
    """Another process holds the store's write lock."""


class EnvironmentFailure(AqmlabError):
    """An operation on `path` failed for a reason outside aqmlab (disk full, read-only file
    system, permission denied, I/O error)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return " ".join(self.message.split())
