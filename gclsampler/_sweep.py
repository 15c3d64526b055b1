"""Check every value of a Hydra sweep before its first job starts.

Why: a misspelt key fails while Hydra composes the config, but a value a stage refuses
(``augment.node_drop=0.1,1.5``) was found only when its own job started, after the jobs
before it had run (minutes each on phi2), and the multirun then ended without a summary
of them. Composing the config once per sweep value, with the command line's other
overrides, and running the entry point's own checks on it costs a fraction of a second
per value. A rule between two swept keys still waits for the job that combines them.

Only Hydra's basic sweeper syntax (``key=a,b``, ``range``, ``choice``, globs) is expanded,
and only when the command line names no other config (``--config-dir`` and friends):
anything else is left to the jobs, as before.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Callable, Sequence

from gclsampler.errors import GclError

_OTHER_CONFIG = ("--config-dir", "-cd", "--config-path", "-cp", "--config-name", "-cn",
                 "--cfg", "-c", "--info", "-i", "--experimental-rerun")
"""Hydra options after which the plain compose below would not see the job's config."""


class SweepValueError(GclError):
    """A value of a ``-m`` sweep that its job would refuse (names the override and the key)."""


def hydra_value(text: str) -> str:
    """``text`` as one Hydra override value, quoted where Hydra would read it otherwise. Why:
    an override built from a path (``workload.dir=/data/run,1/app``) is parsed by Hydra's
    grammar, which took the comma for a sweep ("Ambiguous value") and a space, in a line
    pasted into a shell, for the end of the argument; a quoted value is read as it is."""
    if re.fullmatch(r"[\w./~+:@-]+", text):
        return text
    q = "'" if "'" not in text else '"'
    return q + text.replace(q, "\\" + q) + q


def _multirun(argv: Sequence[str]) -> bool:
    """Whether ``argv`` asks Hydra for a multirun: ``-m``/``--multirun``, or the override
    ``hydra.mode=MULTIRUN``, Hydra's other spelling of it (its enum's name, or its value 2).
    Why both: with ``hydra.mode=MULTIRUN augment.node_drop=0.1,1.5`` the sweep was not checked,
    and job 0 ran in full before job 1 refused 1.5."""
    for a in argv:
        if a in ("-m", "--multirun"):
            return True
        key, eq, value = a.partition("=")
        if eq and key.lstrip("+") == "hydra.mode" and value.strip().strip("'\"") in ("MULTIRUN", "2"):
            return True
    return False


def _overrides(argv: Sequence[str]) -> list[str] | None:
    """The overrides of a multirun command line; None when it is not one, or when it names
    another config or asks Hydra for help or information."""
    if not _multirun(argv):
        return None
    if any(a.split("=", 1)[0] in _OTHER_CONFIG or a in ("-h", "--help", "--hydra-help") for a in argv):
        return None
    return [a for a in argv if not a.startswith("-")]


def check_sweep_values(argv: Sequence[str], config_dir: str | Path, config_name: str,
                       check: Callable[[Any], Any]) -> int:
    """Compose the config once per value of each swept key and pass it to ``check``;
    returns how many configs were checked (0 when ``argv`` is not a basic multirun).

    Raises ``SweepValueError`` naming the first refused ``key=value`` and the reason."""
    overrides = _overrides(argv)
    if not overrides:
        return 0
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import HydraException

    from gclsampler._guard import prefixed_errors

    n = 0
    failed: list[tuple[str, SweepValueError]] = []
    with initialize_config_dir(config_dir=str(Path(config_dir).resolve()), version_base="1.3"):
        try:
            # the config loader lists a group's options for a glob (`augment=glob(*)`): without it the
            # glob raised "ConfigLoader is not set" and train.py stopped with that line, exit 2
            parsed = OverridesParser.create(config_loader=GlobalHydra.instance().config_loader()) \
                .parse_overrides(overrides)
        except HydraException:
            return 0  # Hydra's own parser reports it, in its words, when the multirun starts
        keep = [o for o in parsed if not o.key_or_group.startswith("hydra")]  # the launcher's, not the job's
        fixed = [o.input_line for o in keep if not o.is_sweep_override()]
        groups = [[f"{o.get_key_element()}={v}" for v in o.sweep_string_iterator()]
                  for o in keep if o.is_sweep_override()]
        swept = [(i, one) for i, values in enumerate(groups) for one in values]
        if not swept:
            return 0

        def refusal(one: str, others: list[str]) -> SweepValueError | None:
            try:
                with prefixed_errors(f"sweep value {one}", SweepValueError):
                    check(compose(config_name, overrides=[*fixed, *others, one]))
            except SweepValueError as exc:
                return exc
            return None

        alone: list[tuple[int, str, SweepValueError]] = []
        for i, one in swept:
            exc = refusal(one, [])
            if exc is not None:
                alone.append((i, one, exc))
            n += 1
        # Checked alone, a value meets the *defaults* of the other swept keys, which no job of the
        # sweep has: `augment.min_strategies=2,3 augment.max_strategies=3,4` refused min 3 for the
        # default max 2, though each of its four jobs is valid. A value refused alone is refused
        # only if a job of the sweep refuses it too: the one that takes every other swept key's
        # first value accepted alone (a key with none keeps its default, being refused itself).
        bad = {one for _, one, _ in alone}
        firsts = {j: next((v for v in values if v not in bad), None) for j, values in enumerate(groups)}
        for i, one, exc in alone:
            others = [v for j, v in firsts.items() if j != i and v is not None]
            if others:
                exc = refusal(one, others)
            if exc is not None:
                failed.append((one, exc))
    if failed:
        one, exc = failed[0]
        reasons = {str(e)[len(f"sweep value {v}: "):] for v, e in failed}
        keys = {v.split("=", 1)[0].lstrip("+~") for v, _ in failed}
        if len(failed) == len(swept) and len(reasons) == 1 and not any(k in next(iter(reasons)) for k in keys):
            # every value refused for one reason that names none of the swept keys: a fixed setting's
            # fault (suite.methods=[pka,bogus] was reported as "sweep value seed=0: suite.methods: ...")
            raise SweepValueError(reasons.pop())
        raise exc
    return n
