"""The riding map task's Python side without Spark: the stream ``StateRide`` writes (frames,
an empty separator, the batch as its deserializer wrote it) read back in order, and the
leaving items of marked frames written per destination, in bounded chunks, exactly once."""
from __future__ import annotations

import io
import pickle
import struct

import pytest

pytest.importorskip("pyspark")

from pyspark.serializers import (BatchedSerializer, CPickleSerializer,  # noqa: E402
                                 SpecialLengths, read_long)

from sparkbalance.routing.table import RoutingTable  # noqa: E402
from sparkbalance.state.control.layout import GroupLayout, TableLayout  # noqa: E402
from sparkbalance.state.frames import format as fr  # noqa: E402
from sparkbalance.state.frames import riding  # noqa: E402
from sparkbalance.state.frames.framed_state import move_of  # noqa: E402
from sparkbalance.state.frames.riding import (BATCH_FOLLOWS, CarryWriter,  # noqa: E402
                                              RideDeserializer)


def _framed(items: list[bytes]) -> bytes:
    return b"".join(struct.pack(">i", len(b)) + b for b in items)


@pytest.mark.parametrize("frames", [[], [b"S-one"], [b"S-one", b"S-two"]])
def test_the_frames_then_the_marker_then_the_batch_as_its_serializer_wrote_it(frames):
    batch = BatchedSerializer(CPickleSerializer(), 2)
    records = [(k, k * 10) for k in range(5)]
    out = io.BytesIO()
    batch.dump_stream(iter(records), out)
    stream = io.BytesIO(_framed([*frames, b""]) + out.getvalue()
                        + struct.pack(">i", SpecialLengths.END_OF_DATA_SECTION))
    got = list(RideDeserializer(batch).load_stream(stream))
    assert got == [*frames, BATCH_FOLLOWS, *records]


def test_a_stream_without_its_separator_is_an_error():
    stream = io.BytesIO(_framed([b"S-one"]) + struct.pack(">i", SpecialLengths.END_OF_DATA_SECTION))
    with pytest.raises(RuntimeError, match="separator"):
        list(RideDeserializer(CPickleSerializer()).load_stream(stream))


class _Count:
    def __init__(self) -> None:
        self.value = 0

    def add(self, n: int) -> None:
        self.value += n


def _chunks(out: list) -> list[tuple[int, list]]:
    """(destination, items) of what a CarryWriter wrote."""
    pairs = []
    for to, chunk in zip(out[::2], out[1::2]):
        pairs.append((read_long(io.BytesIO(to)), fr.chunk_records(chunk)))
    return pairs


@pytest.mark.parametrize("chunk", [1, 8 << 20])
def test_leaving_entries_are_written_once_to_their_new_partition(monkeypatch, chunk):
    """A routing table moving three keys: each leaves once, to the table's partition, in
    one chunk per destination or one per frame read (chunk = 1 byte)."""
    monkeypatch.setattr(riding, "CARRY_CHUNK", chunk)
    n, G = 3, 4
    src = TableLayout(n, n, RoutingTable())
    keys = list(range(30))
    homes = src.fn.assign(keys)
    moving = {k: (int(homes[k]) + 1) % n for k in keys[:3]}
    dst = TableLayout(n, n, RoutingTable(moving))
    move = move_of(src, dst, G)
    from sparkbalance.routing.keygroups import key_groups
    groups = key_groups(keys, G)
    frames, per_frame = [], 0
    for p in range(n):
        for g in range(G):
            block = {k: [k, 1.0, None] for k in keys if homes[k] == p and groups[k] == g}
            if block and move.marked(p, g):
                frames.append(fr.state_frame(g, block))
                per_frame += len({moving[k] for k in block if k in moving})
    read = _Count()
    out = list(CarryWriter(move, CPickleSerializer(), float("inf"), read)(frames))
    got = {}
    for to, items in _chunks(out):
        for carry, (kind, k, entry) in items:
            assert kind == "e" and carry.pid == to and k not in got
            got[k] = (to, entry)
    assert got == {k: (q, [k, 1.0, None]) for k, q in moving.items()}
    assert read.value == len(frames)
    # a chunk per destination, or (written after every frame) per frame and destination
    assert len(out) // 2 == (per_frame if chunk == 1 else len(set(moving.values())))


def test_key_groups_move_whole_frames_as_bytes():
    n, G = 2, 4
    import numpy as np
    a = GroupLayout.initial(n, G)                      # groups on [0, 0, 1, 1]
    b = GroupLayout(n, n, G, np.array([0, 1, 4]), np.array([0, 1]), 1)   # [0, 1, 1, 1]
    move = move_of(a, b, G)
    frame = fr.state_frame(1, {"x": [1, 1.0, None]})
    out = list(CarryWriter(move, CPickleSerializer(), float("inf"))([frame]))
    ((to, items),) = _chunks(out)
    assert to == 1 and items[0][1] == ("f", frame)
    assert pickle.loads(pickle.dumps(move)).mask == move.mask    # shipped to the tasks
