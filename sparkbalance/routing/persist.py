"""Plans reused across runs: a fitted partition function as a small JSON file.

A recurring job fits once, saves the plan (routing table, key-group layout, splitting
parameters) and loads it on the next run instead of gathering statistics again::

    f.save("plan.json")            # or save(f, "plan.json")
    f = load("plan.json")          # routes exactly as the saved function did

The file records the hash family the plan was made under (:data:`~sparkbalance.hashing.
FAMILY_SEED`, :data:`~sparkbalance.hashing.GROUP_HASH` and a fingerprint of the hash values
themselves): a table of keys routed away from their home partition is only valid under the
hash that defined "home", so a file from another family is refused with a clear error.

Keys are stored with a type tag so that ``1``, ``"1"``, ``1.5``, ``b"1"`` and tuples come
back as the same Python values (JSON alone would turn every key into a string).
"""
from __future__ import annotations

import base64
import json
import os
import zlib
from typing import Any, Callable

import numpy as np

from ..hashing import FAMILY_SEED, GROUP_HASH, HASH_FAMILY_SIZE, hash_family
from .base import PartitionFunction
from .choices import ChoicesPartitioner
from .hash import HashPartitioner
from .keygroups import GroupMapPartitioner, KeyGroupPartitioner
from .pkg import PKGPartitioner
from .table import RoutingTable, RoutingTablePartitioner
from .tag import TimeAwarePartitioner

__all__ = ["save", "load", "to_dict", "from_dict", "hash_family_id", "FORMAT", "VERSION"]

FORMAT = "sparkbalance-plan"
VERSION = 1
_PROBE = ("sparkbalance", 0, 1.5, ("t", 2))


def hash_family_id() -> dict[str, Any]:
    """What a plan depends on: the family's seed, the group member, and probe hashes.

    The probes catch a change of the formula even under an unchanged seed.

    Examples
    --------
    >>> hash_family_id()["seed"]
    20261121
    """
    probe = [hash_family(k, i) for k in _PROBE for i in range(HASH_FAMILY_SIZE)]
    return {"seed": FAMILY_SEED, "group_hash": GROUP_HASH,
            "fingerprint": format(zlib.crc32(",".join(map(str, probe)).encode()), "08x")}


def _key_out(k: Any) -> Any:
    t = type(k)
    if t is bool:
        return {"i": int(k)}
    if t is int or isinstance(k, np.integer):
        return {"i": int(k)}
    if t is str:
        return {"s": k}
    if t is float or isinstance(k, np.floating):
        return {"f": float(k)}
    if isinstance(k, (bytes, bytearray)):
        return {"b": base64.b64encode(bytes(k)).decode("ascii")}
    if isinstance(k, tuple):
        return {"t": [_key_out(e) for e in k]}
    raise TypeError(f"key {k!r:.60} of type {t.__name__} cannot be saved; expected int, str, "
                    "float, bytes or tuples of these")


def _key_in(d: Any) -> Any:
    if not isinstance(d, dict) or len(d) != 1:
        raise ValueError(f"plan file: key entry {d!r:.60}; expected one of "
                         "{'i': ...}, {'s': ...}, {'f': ...}, {'b': ...}, {'t': [...]}")
    (tag, v), = d.items()
    if tag == "i":
        return int(v)
    if tag == "s":
        return str(v)
    if tag == "f":
        return float(v)
    if tag == "b":
        return base64.b64decode(v)
    if tag == "t":
        return tuple(_key_in(e) for e in v)
    raise ValueError(f"plan file: key tag {tag!r}; expected i, s, f, b or t")


def _pairs_out(m: Any) -> list:
    return [[_key_out(k), v if not isinstance(v, tuple) else list(v)] for k, v in m.items()]


def _pairs_in(rows: list) -> dict:
    return {_key_in(k): v for k, v in rows}


# type name -> (to fields, from fields)
_CODECS: dict[str, tuple[type, Callable[[Any], dict], Callable[[int, dict], PartitionFunction]]] = {
    "hash": (HashPartitioner, lambda f: {}, lambda n, d: HashPartitioner(n)),
    "table": (RoutingTablePartitioner,
              lambda f: {"table_version": f.table.version, "routes": _pairs_out(f.table.routes)},
              lambda n, d: RoutingTablePartitioner(
                  n, RoutingTable(_pairs_in(d["routes"]), int(d["table_version"])))),
    "keygroups": (KeyGroupPartitioner,
                  lambda f: {"num_groups": f.num_groups, "bounds": f.bounds.tolist()},
                  lambda n, d: KeyGroupPartitioner(n, int(d["num_groups"]),
                                                   np.asarray(d["bounds"], dtype=np.int64))),
    "groupmap": (GroupMapPartitioner, lambda f: {"owner": f.owner_of_group.tolist()},
                 lambda n, d: GroupMapPartitioner(n, np.asarray(d["owner"], dtype=np.int64))),
    "pkg": (PKGPartitioner, lambda f: {}, lambda n, d: PKGPartitioner(n)),
    "choices": (ChoicesPartitioner,
                lambda f: {"mode": f.mode, "headroom": f.headroom,
                           "heavy_keys": _pairs_out(f.heavy_keys)},
                lambda n, d: ChoicesPartitioner(n, _pairs_in(d["heavy_keys"]), d["mode"],
                                                headroom=float(d["headroom"]))),
    "tag": (TimeAwarePartitioner,
            lambda f: {"completion_times": f.completion_times.tolist(),
                       "heavy": _pairs_out(f.heavy), "segment_size": f.segment_size,
                       "seed": f.seed, "placement": f.placement},
            lambda n, d: TimeAwarePartitioner(n, d["completion_times"], _pairs_in(d["heavy"]),
                                              segment_size=d["segment_size"],
                                              seed=int(d["seed"]), placement=d["placement"])),
}


def to_dict(f: PartitionFunction) -> dict[str, Any]:
    """The JSON-ready description of ``f`` (format, version, hash family, fields).

    Examples
    --------
    >>> to_dict(HashPartitioner(4))["type"]
    'hash'
    """
    for name, (cls, out, _) in _CODECS.items():
        if type(f) is cls:
            return {"format": FORMAT, "version": VERSION, "hash_family": hash_family_id(),
                    "type": name, "num_partitions": f.num_partitions, **out(f)}
    raise TypeError(f"cannot save a {type(f).__name__}; expected one of "
                    f"{', '.join(c.__name__ for c, _, _ in _CODECS.values())}")


def from_dict(d: dict[str, Any]) -> PartitionFunction:
    """Rebuild a partition function from :func:`to_dict`'s output (checks format and family).

    Examples
    --------
    >>> from_dict(to_dict(KeyGroupPartitioner(2, 8))) == KeyGroupPartitioner(2, 8)
    True
    """
    if not isinstance(d, dict) or d.get("format") != FORMAT:
        raise ValueError(f"not a sparkbalance plan: format={d.get('format') if isinstance(d, dict) else None!r}; "
                         f"expected {FORMAT!r}")
    if d.get("version") != VERSION:
        raise ValueError(f"plan file version {d.get('version')!r}; this sparkbalance reads "
                         f"version {VERSION}")
    family, ours = d.get("hash_family"), hash_family_id()
    if family != ours:
        raise ValueError(f"plan was made under another hash family ({family!r}); this "
                         f"sparkbalance hashes with {ours!r}: its routes would send keys to "
                         "other partitions. Refit the plan (fit_partitioner) and save it again.")
    kind = d.get("type")
    if kind not in _CODECS:
        raise ValueError(f"plan type {kind!r}; expected one of {', '.join(_CODECS)}")
    return _CODECS[kind][2](int(d["num_partitions"]), d)


def save(f: PartitionFunction, path: str | os.PathLike) -> None:
    """Write ``f`` to ``path`` as JSON (atomically: a new file renamed over the old one).

    Examples
    --------
    >>> save(HashPartitioner(4), "/tmp/plan.json")  # doctest: +SKIP
    """
    text = json.dumps(to_dict(f), separators=(",", ":"))
    tmp = f"{os.fspath(path)}.tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(text)
    os.replace(tmp, path)


def load(path: str | os.PathLike) -> PartitionFunction:
    """Read a partition function saved by :func:`save`.

    Raises ``ValueError`` for a file of another format, version or hash family.

    Examples
    --------
    >>> load("/tmp/plan.json").num_partitions  # doctest: +SKIP
    4
    """
    with open(path, encoding="utf-8") as fh:
        return from_dict(json.load(fh))


PartitionFunction._saver = save  # the method form, f.save(path), without an import circle
#: The names ``import sparkbalance as sb`` exports (``sb.save_plan(f, path)``, ``sb.load_plan``).
save_plan, load_plan = save, load
