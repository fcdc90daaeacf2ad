"""A private PostgreSQL cluster: ``initdb`` + ``pg_ctl`` in a temp dir on a free loopback port (the
API tests and the replica fault table, ``ocrstack api replicas``; issue 23).

Debian's ``postgresql`` package puts the server binaries in ``/usr/lib/postgresql/<major>/bin``
(not on PATH). PostgreSQL refuses to run as root, so under root the cluster runs as ``nobody``
(``runuser``); its directory is a fresh ``/tmp`` dir owned by that user. Authentication is
``trust`` on 127.0.0.1 only; the socket directory is the cluster's own.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path


def bindir() -> Path | None:
    """The directory holding ``initdb`` and ``pg_ctl`` (newest major), or None when not installed."""
    found = shutil.which("initdb")
    if found:
        return Path(found).parent
    dirs = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4]))
    return Path(dirs[-1]).parent if dirs else None


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Cluster:
    """One cluster: :meth:`start` (initdb once), :meth:`restart`, :meth:`stop` (and remove its files).

    Args:
        bin_dir: from :func:`bindir`.
    """

    def __init__(self, bin_dir: Path) -> None:
        self.bin_dir = bin_dir
        self.root = Path(tempfile.mkdtemp(prefix="ocrstack-pg-"))
        self.data = self.root / "data"
        self.port = free_port()
        self.user = "nobody" if os.geteuid() == 0 else None
        if self.user:
            pw = pwd.getpwnam(self.user)
            os.chown(self.root, pw.pw_uid, pw.pw_gid)
        self.url = f"postgresql://ocrstack@127.0.0.1:{self.port}/postgres"

    def _run(self, *argv: str) -> None:
        cmd = [str(self.bin_dir / argv[0]), *argv[1:]]
        if self.user:
            cmd = ["runuser", "-u", self.user, "--", *cmd]
        subprocess.run(cmd, check=True, capture_output=True, cwd=self.root, timeout=120)

    def start(self) -> Cluster:
        """initdb (first time) and start; returns when it accepts connections.

        Raises:
            subprocess.CalledProcessError: ``initdb`` or ``pg_ctl`` failed (its output in ``stderr``).
        """
        if not self.data.exists():
            self._run("initdb", "-D", str(self.data), "-U", "ocrstack", "-A", "trust", "--no-sync")
        opts = (f"-c listen_addresses=127.0.0.1 -c port={self.port} -c unix_socket_directories={self.root}"
                " -c fsync=off -c max_connections=50")  # fmt: skip
        self._run(
            "pg_ctl", "-D", str(self.data), "-l", str(self.root / "server.log"), "-o", opts, "-w", "start"
        )
        return self

    def stop(self) -> None:
        """Fast shutdown (connections are dropped, like a database restart).

        Raises:
            subprocess.CalledProcessError: ``pg_ctl`` failed (e.g. the cluster is not running).
        """
        self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")

    def restart(self) -> None:
        """Stop and start on the same port and data."""
        self.stop()
        self.start()

    def destroy(self) -> None:
        """Stop (when running) and remove the directory."""
        try:
            self.stop()
        except subprocess.CalledProcessError:
            pass
        shutil.rmtree(self.root, ignore_errors=True)

    def database(self, name: str) -> str:
        """Create database ``name`` (a fresh one per test or table row) and return its URL.

        ``name`` is passed as a quoted identifier (:class:`psycopg.sql.Identifier`).
        """
        import psycopg
        from psycopg import sql

        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        return self.url.rsplit("/", 1)[0] + f"/{name}"
