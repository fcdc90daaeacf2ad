"""Serve profiles checked by the engines' own argument parsers (issue 14).

For each profile: the argument list ``ocrstack serve`` would run (:meth:`Profile.argv`, plus the
restart policy's enforce-eager flag) is parsed by the parser of the release the profile targets:

- vLLM profiles: vLLM ``upstream.vllm`` (the api_server parser, ``engine_probe.py``), and the
  ``--speculative-config`` JSON keys against ``SpeculativeConfig``'s fields and methods;
- SGLang profiles: upstream SGLang ``engine-check.sglang`` (``ServerArgs`` CLI);
- transformers profiles: ``transformers serve --help`` of the running environment.

vLLM and SGLang are installed ``--no-deps`` in throwaway virtual environments under
``.ocrstack/engines/<engine>-<release>`` (reused while their marker matches), with only the
packages their parser import path needs (``data/engine_parsers.yaml``) and the running
environment's site-packages behind them for torch/transformers/pydantic.

A flag counts as known only if the parser defines exactly that option string: argparse would
accept an unambiguous abbreviation (``--max-model`` for ``--max-model-len``), the engine's
behaviour with it is not what the data file says, so it is reported as unknown too.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ocrstack import versions
from ocrstack.backends import registry
from ocrstack.backends.profiles import Profile, ProfileSet
from ocrstack.core import paths
from ocrstack.core.errors import ConfigError, EnvironmentMismatch

PROBE = Path(__file__).with_name("engine_probe.py")
_MARK = "@@ENGINE-PROBE@@"
_HELP_FLAG = re.compile(r"(?<![\w-])(--?[A-Za-z][\w-]*)")


@dataclass(frozen=True)
class Engine:
    """One engine from ``data/engine_parsers.yaml``: its dist, release and parser import needs."""

    name: str
    dist: str
    release: str
    parser_imports: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    how: str = ""


@dataclass
class ProfileCheck:
    """Result for one profile: what parsed it and what it refused (empty lists = accepted)."""

    profile: str
    engine: str
    release: str
    how: str
    argv: list[str]
    error: str | None = None
    unknown: list[str] = field(default_factory=list)
    speculative: list[str] = field(default_factory=list)
    note: str | None = None

    @property
    def ok(self) -> bool:
        """True when the parser accepted the argv and every flag/key is one the engine defines."""
        return self.error is None and not self.unknown and not self.speculative

    def describe(self) -> str:
        """One line: ``profile: engine release: OK`` or the problems, flags named."""
        if self.ok:
            return f"{self.profile}: {self.engine} {self.release}: OK" + (
                f" ({self.note})" if self.note else ""
            )
        probs = [f"unknown flag {f}" for f in self.unknown] + self.speculative
        if self.error:
            probs.append(f"parser error: {self.error}")
        return f"{self.profile}: {self.engine} {self.release}: " + "; ".join(probs)


def engines(path: Path | None = None) -> dict[str, Engine]:
    """Read ``data/engine_parsers.yaml``; releases come from envs/versions.yaml pins.

    Raises:
        ConfigError: missing file or an engine without ``dist``/``release-pin``.
    """
    p = path or paths.data_file("engine_parsers.yaml")
    data = paths.read_yaml(p, "engine parsers")
    out: dict[str, Engine] = {}
    for name, e in (data.get("engines") or {}).items():
        if not isinstance(e, dict) or "dist" not in e or "release-pin" not in e:
            raise ConfigError(f"{p}: engine '{name}' needs 'dist' and 'release-pin'", "fix the file")
        release = str(versions.pin(e["release-pin"]))
        out[name] = Engine(
            name,
            e["dist"],
            release,
            tuple(e.get("parser-imports") or ()),
            {str(k): str(v) for k, v in (e.get("env") or {}).items()},
            str(e.get("how", "")).format(release=release),
        )
    return out


def profile_flags(profile: Profile) -> list[str]:
    """Every flag ``serve`` may pass: args, listen flags and the enforce-eager restart flag."""
    flags = [item[0] for item in profile.args]
    flags += [x for x in profile.listen if x.startswith("-")]
    if profile.enforce_eager_flag:
        flags.append(profile.enforce_eager_flag)
    return flags


def profile_argv(profile: Profile) -> list[str]:
    """The argv after the program prefix, with defaults filled in and the enforce-eager flag added."""
    argv = profile.argv()[len(profile.program) :]
    if profile.enforce_eager_flag:
        argv.append(profile.enforce_eager_flag)
    return argv


def unknown_flags(flags: Iterable[str], options: Iterable[str]) -> list[str]:
    """Flags (``--name`` or ``--name=value``) that are not exactly one of the parser's option strings."""
    known = set(options)
    return [f for f in flags if f.split("=", 1)[0] not in known]


def speculative_problems(profile: Profile, fields: Iterable[str], methods: Iterable[str]) -> list[str]:
    """Check the rendered ``--speculative-config`` JSON against vLLM's SpeculativeConfig.

    Returns one message per key that is not a ``SpeculativeConfig`` field and for a ``method``
    that is not a ``SpeculativeMethod`` value; [] when the profile has no such flag.
    """
    argv = profile.argv(listen=False)
    if "--speculative-config" not in argv:
        return []
    cfg = json.loads(argv[argv.index("--speculative-config") + 1])
    known = set(fields)
    out = [f"--speculative-config key '{k}' is not a SpeculativeConfig field" for k in cfg if k not in known]
    if "method" in cfg and cfg["method"] not in set(methods):
        out.append(f"--speculative-config method '{cfg['method']}' is not a SpeculativeMethod")
    return out


def help_options(text: str) -> list[str]:
    """Option strings listed in a ``--help`` text (click/typer ``--a / --no-a`` pairs included)."""
    return sorted(set(_HELP_FLAG.findall(text)))


def _uv() -> str:
    found = shutil.which(
        "uv", path=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    )
    if not found:
        raise EnvironmentMismatch(
            "uv not found next to this Python or on PATH", "pip install uv (it is in the dev lock)"
        )
    return found


def _engine_requirements(venv: Path, dist: str) -> dict[str, str]:
    """``{normalized name: requirement string}`` from the installed wheel's Requires-Dist (no extras)."""
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    metas = list(venv.glob(f"lib/python*/site-packages/{dist}-*.dist-info/METADATA"))
    out: dict[str, str] = {}
    for line in metas[0].read_text().splitlines() if metas else ():
        if line.startswith("Requires-Dist:"):
            req = Requirement(line.split(":", 1)[1].strip())
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                out[canonicalize_name(req.name)] = f"{req.name}{req.specifier}"
    return out


def ensure_env(engine: Engine, cache_root: Path, run: Any = subprocess.run) -> Path:
    """Create (or reuse) ``cache_root/<engine>-<release>`` and return its python.

    Installs ``dist==release`` and the parser-import packages ``--no-deps`` (each with the
    engine's own specifier), then a ``.pth`` line pointing at this interpreter's site-packages.

    Raises:
        EnvironmentMismatch: uv missing, or an install failed (message has uv's last line).
    """
    from packaging.utils import canonicalize_name

    venv = cache_root / f"{engine.name}-{engine.release}"
    python = venv / "bin" / "python"
    base = sysconfig.get_paths()["purelib"]
    want = {"release": engine.release, "imports": list(engine.parser_imports), "base": base}
    marker = venv / ".ocrstack-engine.json"
    if marker.is_file() and python.exists() and json.loads(marker.read_text()) == want:
        return python

    def sh(argv: list[str]) -> None:
        done = run(argv, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            last = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["?"]
            raise EnvironmentMismatch(
                f"{' '.join(argv[:4])} ... failed: {last[0]}", f"rerun; or remove {venv}"
            )

    uv = _uv()
    sh([uv, "venv", "-q", "--clear", "-p", sys.executable, str(venv)])
    sh([uv, "pip", "install", "-q", "-p", str(python), "--no-deps", f"{engine.dist}=={engine.release}"])
    reqs = _engine_requirements(venv, engine.dist)
    extra = [reqs.get(canonicalize_name(n), n) for n in engine.parser_imports]
    if extra:
        sh([uv, "pip", "install", "-q", "-p", str(python), "--no-deps", *extra])
    site = next(venv.glob("lib/python*/site-packages"))
    (site / "zz_ocrstack_base.pth").write_text(base + "\n")
    marker.write_text(json.dumps(want))
    return python


def run_probe(
    python: Path, engine: Engine, argvs: Mapping[str, list[str]], run: Any = subprocess.run
) -> dict[str, Any]:
    """Run ``engine_probe.py`` in the engine's environment; return its JSON answer.

    Raises:
        EnvironmentMismatch: the probe did not answer (its stderr tail is in the message).
    """
    env = {**os.environ, **engine.env}
    done = run(
        [str(python), str(PROBE), engine.name],
        input=json.dumps({"argvs": dict(argvs)}),
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    for line in reversed(done.stdout.splitlines()):
        if line.startswith(_MARK):
            return json.loads(line[len(_MARK) :])
    tail = " | ".join(done.stderr.strip().splitlines()[-3:])
    raise EnvironmentMismatch(
        f"{engine.name} parser probe failed (exit {done.returncode}): {tail}",
        f"inspect {python.parent.parent}; remove it to rebuild",
    )


def judge(profile: Profile, engine: Engine, answer: Mapping[str, Any]) -> ProfileCheck:
    """Turn a probe answer (see engine_probe.py) into a :class:`ProfileCheck` for ``profile``."""
    res = answer["results"][profile.name]
    check = ProfileCheck(
        profile.name,
        engine.name,
        answer["release"],
        engine.how,
        profile_argv(profile),
        error=res.get("error"),
        unknown=unknown_flags(profile_flags(profile), answer["options"]),
    )
    if res.get("post_init"):
        check.note = f"ServerArgs post-init (needs GPU/model, not a flag problem): {res['post_init']}"
    spec = answer.get("speculative")
    if spec:
        check.speculative = speculative_problems(profile, spec["fields"], spec["methods"])
    return check


def check_transformers(
    profiles: list[Profile], engine: Engine, run: Any = subprocess.run
) -> list[ProfileCheck]:
    """Check transformers profiles' flags against ``transformers serve --help`` (running environment)."""
    exe = shutil.which(
        "transformers", path=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    )
    if not exe:
        raise EnvironmentMismatch("the transformers CLI is not installed here", "install the dev lock")
    done = run([exe, "serve", "--help"], capture_output=True, text=True, check=False)
    options = help_options(done.stdout)
    release = versions.installed("transformers") or engine.release
    out = []
    for p in profiles:
        err = None if done.returncode == 0 else f"`transformers serve --help` exited {done.returncode}"
        if p.positional and "[FORCE_MODEL]" not in done.stdout:
            err = "transformers serve takes no positional model argument"
        out.append(
            ProfileCheck(
                p.name,
                engine.name,
                release,
                engine.how.replace(engine.release, release),
                profile_argv(p),
                error=err,
                unknown=unknown_flags(profile_flags(p), options),
            )
        )
    return out


def check_profiles(
    pset: ProfileSet, cache_root: Path, names: Iterable[str] | None = None
) -> list[ProfileCheck]:
    """Parse every (or each named) profile with its engine's parser.

    How is the back-end's :attr:`~ocrstack.backends.base.Backend.parser_check`: ``"help"``
    (``transformers serve --help``), ``"probe"`` (the engine's parser, vLLM and SGLang) or None
    (not checked, llama.cpp).

    Raises:
        EnvironmentMismatch: an engine environment could not be built or its probe failed.
    """
    specs = engines()
    by_engine: dict[str, list[Profile]] = {}
    for name in names or pset.profiles:
        p = pset.get(name)
        by_engine.setdefault(pset.builds[p.build].engine, []).append(p)
    out: list[ProfileCheck] = []
    for eng, profs in by_engine.items():
        how = registry.get(eng).parser_check
        if how == "help":
            out += check_transformers(profs, specs[eng])
        elif how == "probe":
            python = ensure_env(specs[eng], cache_root)
            answer = run_probe(python, specs[eng], {p.name: profile_argv(p) for p in profs})
            out += [judge(p, specs[eng], answer) for p in profs]
    return out
