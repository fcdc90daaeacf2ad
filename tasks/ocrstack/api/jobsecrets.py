"""A job's secrets stay in the memory of the service process that took the request, never in the
job database (issue 25 item 7: ``jobs.sqlite3`` held PDF passwords in plain text).

A request's :data:`SECRET_FIELDS` (the PDF ``password``) are stored with the job as ``null``;
the job's stored options carry only :data:`REF`, a random reference to the values this process
keeps (:class:`JobSecrets`). A job run by this process gets them back; a job taken after a
restart, or by another replica on PostgreSQL, finds none and fails with :class:`SecretLost`: a
one-line reason and the fix (submit it again), instead of the password ever reaching the disk.
"""

from __future__ import annotations

import dataclasses
import secrets
import threading
from collections.abc import Mapping

from ocrstack.core.errors import UsageError
from ocrstack.parsing.options import ParseOptions

#: Request-settable options whose values never reach the job database.
SECRET_FIELDS = ("password",)
#: The stored options' key of the reference to this process's copy of a job's secrets.
REF = "secrets_ref"


class SecretLost(UsageError):
    """The job's secrets were kept by a service process that is gone (the API answers 400)."""


class JobSecrets:
    """The secrets of this process's jobs, by reference (thread-safe; a few bytes per job that has
    one, dropped when the job is deleted)."""

    def __init__(self) -> None:
        self._kept: dict[str, dict[str, str]] = {}
        self._lock = threading.Lock()

    def keep(self, opts: ParseOptions) -> dict[str, str]:
        """Keep ``opts``'s secrets; returns what the stored options carry instead (``{REF: ref}``,
        or ``{}`` when the request has none)."""
        values = {name: getattr(opts, name) for name in SECRET_FIELDS if getattr(opts, name)}
        if not values:
            return {}
        ref = secrets.token_hex(12)
        with self._lock:
            self._kept[ref] = values
        return {REF: ref}

    def restore(self, stored: Mapping, opts: ParseOptions) -> ParseOptions:
        """``opts`` with the secrets of the job whose stored options are ``stored``.

        Raises:
            SecretLost: the job has secrets and this process does not hold them.
        """
        ref = stored.get(REF)
        if not ref:
            return opts
        with self._lock:
            values = self._kept.get(str(ref))
        if values is None:
            raise SecretLost(
                "the job's PDF password was kept only in the memory of the service process that "
                "took the upload, which is gone (restarted, or another replica took the job)",
                "submit the document again with its password",
            )
        return dataclasses.replace(opts, **values)

    def drop(self, stored: Mapping) -> None:
        """Forget the secrets of the job whose stored options are ``stored`` (it was deleted)."""
        with self._lock:
            self._kept.pop(str(stored.get(REF)), None)
