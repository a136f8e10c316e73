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


_INT_WORDS = {
    "u8": "a whole number from 0 to 255", "u16": "a whole number from 0 to 65535",
    "u32": "a whole number from 0 to 4294967295", "u64": "a whole number from 0 to 18446744073709551615",
    "usize": "a whole number of 0 or more", "i32": "a whole number", "i64": "a whole number",
    "f32": "a number", "f64": "a number",
}


def plain_words(message: str) -> str:
    """A deserialiser's type error in plain words: ``invalid type: string "x", expected
    u32`` → ``"x" is text, not a whole number from 0 to 4294967295``."""
    import re

    def kind(m: str) -> str:
        return _INT_WORDS.get(m, m)

    rules = [
        (r'invalid type: string "(.*?)", expected (\w+)\b', lambda m: f'"{m[1]}" is text, not {kind(m[2])}'),
        (r"invalid type: floating point `(.*?)`, expected (u\d+|i\d+|usize)\b", lambda m: f"{m[1]} is not {kind(m[2])}"),
        (r"invalid value: integer `(-\d+)`, expected (u\d+|usize)\b", lambda m: f"{m[1]} is negative, not {kind(m[2])}"),
        (r"invalid value: integer `(\d+)`, expected (u\d+|i\d+)\b", lambda m: f"{m[1]} is too large, not {kind(m[2])}"),
        (r"invalid type: boolean `(\w+)`, expected (\w+)\b", lambda m: f"{m[1]} is true/false, not {kind(m[2])}"),
        (r"invalid type: integer `(-?\d+)`, expected a string", lambda m: f"{m[1]} is a number, not text (write it in quotes)"),
        (r"\bexpected (u\d+|i\d+|f\d+|usize)\b", lambda m: f"expected {kind(m[1])}"),
        (r"allowed for this kind:", lambda m: "keys of this kind:"),
        # limit = "100" is 100 bytes, below one MTU: most likely meant as 100 packets
        (r"^(\d+)B is not allowed \(at least one MTU \((\d+) bytes\) or a packet count\)(?!; )",
         lambda m: f"{m[0]}; a quoted number is a size in bytes: write limit = {m[1]} without quotes for {m[1]} packets"),
        # binary-float noise in a duration: 15.000000000000002s → 15s
        (r"(?<![\w.])(\d+\.\d{9,})(?=(?:s|ms|us|ns)\b)", lambda m: f"{float(m[1]):.9g}"),
    ]
    for pat, rep in rules:
        message = re.sub(pat, rep, message)
    return _suggest_known(message)


def _suggest_known(message: str) -> str:
    """``unknown field `duraton`, expected one of `name`, `duration`, …`` (or a flow's
    ``unknown field for this kind `byte`, keys of this kind: …``) gains the closest
    allowed name: ``unknown field `duraton` (did you mean `duration`?), expected …``.
    Applied once: the result no longer has the comma the pattern needs."""
    import re

    from aqmlab._naming import closest

    m = re.search(r"unknown (?:field|variant|field for this kind) `([^`]*)`(?=, (?:expected |keys of this kind: ))", message)
    if not m:
        return message
    listed = re.match(r", (?:expected (?:one of )?|keys of this kind: )((?:`[^`]*`(?:, | or )?)+)", message[m.end():])
    if not listed:
        return message
    names = re.findall(r"`([^`]*)`", listed[1])
    common = re.match(r"; common keys: ([\w, ]+)", message[m.end() + listed.end():])
    if common:
        names += [n.strip() for n in common[1].split(",") if n.strip()]
    bad = m[1]
    # `fq-codel` is `fq_codel` written with the hyphen of Linux's tc
    same = [n for n in names if n.lower() == bad.lower().replace("-", "_")]
    best = same[0] if same else closest(bad, names)
    if best is None:
        return message
    return f"{message[:m.end()]} (did you mean `{best}`?){message[m.end():]}"


class ScenarioError(AqmlabError, ValueError):
    """Bad scenario input: ``field`` names the key, ``message`` what is wrong."""

    def __init__(self, field: str, message: str) -> None:
        # the core's deserialiser says "expected u32": said in words here, once, so
        # that ``message`` and ``str()`` agree (and a pickled copy reads the same)
        message = plain_words(message) if isinstance(message, str) else message
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
