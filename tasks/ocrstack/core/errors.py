"""One error base class; each subclass has its own exit code.

Every message says what went wrong *and* what to do next. Only
:func:`ocrstack.cli.main` catches these and turns them into exit codes, so the
codes below are the CLI contract (tests pin them).

Exit codes:
    0  success
    1  a check ran and failed, or a required check could not run (CheckFailed)
    2  usage error (argparse) or bad option value (UsageError)
    3  bad input file or directory (InputError)
    4  installed environment does not match envs/versions.yaml (EnvironmentMismatch)
    5  server unreachable / not ready in time (ServerUnreachable)
    6  server answered but rejected the request, 4xx (ServerRejected)
    7  partial success: some pages or blocks failed (PartialSuccess)
    8  an external step (build, install, download) failed (StepFailed)
    9  missing tool, model or configuration (ConfigError)
    10 a served model's layout answer cannot be read (LayoutAnswerError; per page in a run)
    11 one request kept failing while the servers answered others (RequestFailed; per block in a run)
"""

from __future__ import annotations


class OcrstackError(Exception):
    """Base class. ``str(err)`` is one line: the problem, then the remedy."""

    exit_code = 1

    def __init__(self, message: str, remedy: str | None = None) -> None:
        self.message = message
        self.remedy = remedy
        super().__init__(self.render())

    def render(self) -> str:
        """Return ``"message; fix: remedy"`` (or just the message) on one line."""
        text = " ".join(self.message.split())
        if self.remedy:
            text += f" -- fix: {' '.join(self.remedy.split())}"
        return text


class CheckFailed(OcrstackError):
    """A check ran and failed (preflight, verify, versions check), or a required one could not run.

    ``ocrstack preflight`` on a machine with no GPU: its GPU checks are not-run, which is no pass.
    """

    exit_code = 1


class UsageError(OcrstackError):
    """An option value is invalid (unknown kind, malformed page range, ...)."""

    exit_code = 2


class OutputLocked(UsageError):
    """Another ``ocrstack parse`` run holds the output document's lock (issue 10); names its pid.

    Exit code 2 (a usage conflict: two runs into the same ``-o``) when it is the only input; in a
    batch it is that document's failure and the others go on.
    """


class InputError(OcrstackError):
    """An input file is missing, unreadable, encrypted or too large."""

    exit_code = 3


class EnvironmentMismatch(OcrstackError):
    """Installed package versions differ from envs/versions.yaml."""

    exit_code = 4


class ServerUnreachable(OcrstackError):
    """Connection refused, timed out, or the server never became ready."""

    exit_code = 5


class ServerRejected(OcrstackError):
    """The server answered with a 4xx; never retried (guide 8)."""

    exit_code = 6

    def __init__(self, message: str, remedy: str | None = None, status: int | None = None) -> None:
        self.status = status
        super().__init__(message, remedy)


class PartialSuccess(OcrstackError):
    """Some pages or blocks failed; the rest was written."""

    exit_code = 7


class StepFailed(OcrstackError):
    """An external step (compile, pip install, download) exited non-zero."""

    exit_code = 8

    def __init__(self, message: str, remedy: str | None = None, returncode: int | None = None) -> None:
        self.returncode = returncode
        super().__init__(message, remedy)


class ConfigError(OcrstackError):
    """A required tool, model directory or configuration value is missing or wrong."""

    exit_code = 9


class DiskFull(ConfigError):
    """No space left (``ENOSPC``, ``EDQUOT``, SQLite "database or disk is full") where outputs, a
    page cache or a service's ``--data-dir`` are written (issue 25 item 3): the machine's setup,
    not the input, so exit 9 with the place to free; the HTTP service answers 507."""


class LayoutAnswerError(OcrstackError):
    """A served model's layout answer (``--layout vlm``) cannot be read: the page fails on its own.

    Raised per page (empty answer, ragged/truncated line, missing tag, box outside the page); the
    parse run goes on with the other pages and ends as a partial success (exit 7). Its own code 10
    is what a caller that lets it escape (one page, no batch) exits with.
    """

    exit_code = 10


class RequestFailed(OcrstackError):
    """One request (a layout block) kept failing while the servers answered others (issue 10).

    The parse marks that block failed (``status: failed`` in blocks.json, a visible line in the
    Markdown) and goes on; the document ends as a partial success (exit 7). Its own code 11 is
    what a caller that lets it escape exits with. Not a ``ServerUnreachable``: the servers are up.
    """

    exit_code = 11
