"""Subcommand registry: each name is a module here with ``register(subparsers)``.

Add one line per verb; keep the modules thin (argument parsing -> options -> stage call).
"""

COMMANDS: list[str] = [
    "versions",
    "doctor",
    "preflight",
    "fetch",
    "verify",
    "lock",
    "toolchain",
    "build",
    "parse",
    "serve",
    "wait_ready",
    "bench",
    "deploy",
    "api",
]
