"""The store of a GPU worker under a host memory limit: device, host and disk tiers, each
result written to disk at most once.

dask-cuda's ``DeviceHostFile`` (two ``zict.Buffer`` s) deletes what it reads back, so a result
read back and evicted again is written again: on R-MAT 26 under a 12 GiB limit a count wrote
102 GB for about 17 GB of distinct results (``host-memory-folds-h100.jsonl``). A stage result
never changes while its key lives, so this store keeps its file until the key is deleted. A
result read back goes straight to its own tier, and stays there only where it fits beside what
the tier holds, or is read again soon (:meth:`Tier.admits`): a stage reads the results of the
stage before in turn, and least recently used is the worst order for such scans.

Each tier is least recently used first, its values weighed by ``sizeof``, as dask-cuda's are:

* device: results in GPU memory, up to ``device_memory_limit``; beyond it they are copied to
  the host tier (Dask's own device serializers), or only dropped where they have a file;
* host: host results and device results copied there, up to ``memory_limit``; beyond it they
  are written to disk (Dask's ``serialize_bytelist``, with
  ``distributed.worker.memory.spill-compression``), or only dropped where they have a file.

A disk that refuses a write (full, over quota) leaves the result in host memory, as Dask's
``SpillBuffer`` does, and logs why.

:meth:`TieredStore.read_ahead` reads the next task's inputs back on a thread of its own
while the current task runs (:class:`dtri.runtime.plugin.ReadAheadPlugin` tells it which),
into the host tier; a Dask worker would read them on its event loop while the GPU waits.
Files are written and read in slices of :data:`IO_SLICE` bytes on ``dtri.spill-io-threads``
threads (:func:`_in_slices`): one thread read back at about 1 GB/s on an H200 host.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, MutableMapping
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import wait as wait_for
from typing import Any

import dask
import numpy as np
from distributed.protocol import (
    dask_deserialize,
    dask_serialize,
    deserialize,
    deserialize_bytes,
    serialize,
    serialize_bytelist,
)
from distributed.sizeof import safe_sizeof

SPILL_LOGGER = logging.getLogger("distributed.spill")
READ_AHEAD_NAME = "dtri-read-ahead"
"""The name of :class:`dtri.runtime.plugin.ReadAheadPlugin` on the scheduler and workers."""
MOVES = ("disk-write", "disk-read", "to-host", "to-device")
"""What the store times: writing to disk, reading back (and deserializing), copying device
results to host memory and back."""


class HostCopy:
    """A device result copied to host memory: Dask's serialized header and frames."""

    def __init__(self, header: dict, frames: list) -> None:
        self.header = header
        self.frames = frames

    def __sizeof__(self) -> int:
        return sum(memoryview(frame).nbytes for frame in self.frames)

    def to_device(self) -> Any:
        return deserialize(self.header, self.frames)


@dask_serialize.register(HostCopy)
def _serialize_host_copy(copy: HostCopy) -> tuple[dict, list]:
    return {"device-header": copy.header}, copy.frames


@dask_deserialize.register(HostCopy)
def _deserialize_host_copy(header: dict, frames: list) -> HostCopy:
    return HostCopy(header["device-header"], frames)


def host_copy(value: Any) -> HostCopy:
    """A device result copied to host memory (as dask-cuda's ``device_to_host``)."""
    return HostCopy(*serialize(value, serializers=("dask", "pickle"), on_error="raise"))


class Tier:
    """Values by key, least recently used first, with their summed weight."""

    def __init__(self, limit: int | None) -> None:
        self.limit = limit
        self.values: OrderedDict[Any, Any] = OrderedDict()
        self.weights: dict[Any, int] = {}
        self.total = 0
        self.read_bytes = 0
        """Bytes read back from disk into this tier so far."""
        self.last_read: dict[Any, int] = {}
        """``read_bytes`` at each result's last read back into this tier."""

    def put(self, key: Any, value: Any) -> None:
        self.values[key] = value
        self.weights[key] = weight = safe_sizeof(value)
        self.total += weight

    def get(self, key: Any) -> Any:
        self.values.move_to_end(key)
        return self.values[key]

    def admits(self, key: Any, value: Any) -> bool:
        """Whether a result read back from disk should stay in this tier: where it fits
        beside the values held, or where it was read back before, fewer bytes of reads ago
        than the tier holds (its reuse distance: a result that every task of a stage reads,
        as the ranks are, which least recently used order keeps until its next read)."""
        weight = safe_sizeof(value)
        previous = self.last_read.get(key)
        self.last_read[key] = self.read_bytes
        self.read_bytes += weight
        if self.limit is None or self.total + weight <= self.limit:
            return True
        return previous is not None and self.read_bytes - weight - previous < self.limit

    def pop(self, key: Any) -> Any:
        self.total -= self.weights.pop(key)
        return self.values.pop(key)

    def over(self) -> bool:
        return self.limit is not None and self.total > self.limit

    def oldest(self) -> Any:
        return next(iter(self.values))

    def __contains__(self, key: object) -> bool:
        return key in self.values


def _device_predicates() -> tuple[Callable[[Any], bool], Callable[[Any], bool]]:
    """dask-cuda's tests of a device result and of one cuDF spills itself."""
    from dask_cuda.is_device_object import is_device_object
    from dask_cuda.is_spillable_object import is_spillable_object

    return is_device_object, is_spillable_object


class TieredStore(MutableMapping[Any, Any]):
    """A worker's ``data``: device, host and disk tiers (see the module docstring).
    ``is_device`` and ``spills_itself`` tell a device result and one that cuDF spills on its
    own (kept as it is); dask-cuda's by default."""

    def __init__(self, worker_local_directory: str, *, device_memory_limit: int | None,
                 memory_limit: int | None,
                 is_device: Callable[[Any], bool] | None = None,
                 spills_itself: Callable[[Any], bool] | None = None) -> None:
        if is_device is None or spills_itself is None:
            is_device, spills_itself = _device_predicates()
        self.is_device = is_device
        self.spills_itself = spills_itself
        self.directory = os.path.join(worker_local_directory, "storage")
        os.makedirs(self.directory, exist_ok=True)
        self.device = Tier(device_memory_limit or None)
        self.host = Tier(memory_limit or None)
        self.others: dict[Any, Any] = {}
        self.files: dict[Any, str] = {}
        self.file_bytes: dict[Any, int] = {}
        self._names = itertools.count()
        self._lock = threading.RLock()
        self.written_bytes = 0
        """Bytes written to disk so far."""
        self.read_back_bytes = 0
        """Bytes read back from disk so far."""
        self.to_host_bytes = 0
        """Bytes of device results copied to host memory so far."""
        self.seconds = dict.fromkeys(MOVES, 0.0)
        """Seconds spent so far on each move (:data:`MOVES`); the reads ahead count in
        ``disk-read``, though they run beside the tasks."""
        self.read_ahead_bytes = 0
        """Bytes read back from disk ahead of the task that reads them, so far."""
        self._ahead: dict[Any, Future] = {}
        self._read_ahead: set[Any] = set()
        self._reader: ThreadPoolExecutor | None = None
        threads = min(int(dask.config.get("dtri.spill-io-threads")),
                      len(os.sched_getaffinity(0)))
        self._io = (ThreadPoolExecutor(threads, thread_name_prefix="dtri-spill-io")
                    if threads > 1 else None)
        """The threads that write a file and read it back, a slice at a time (``None``: one)."""

    @contextlib.contextmanager
    def _timed(self, move: str) -> Iterator[None]:
        started = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[move] += time.perf_counter() - started

    @property
    def device_limit(self) -> int | None:
        return self.device.limit

    @property
    def fast(self) -> OrderedDict[Any, Any]:
        """The host tier's results (what Dask's memory manager asks of a store it may make
        evict: whether there is any)."""
        return self.host.values

    def __setitem__(self, key: Any, value: Any) -> None:
        with self._lock:
            if key in self:
                self._delete(key)
            if self.spills_itself(value):
                self.others[key] = value
            elif self.is_device(value):
                self._to_device(key, value)
            else:
                self._to_host(key, value)

    def __getitem__(self, key: Any) -> Any:
        pending = self._ahead.get(key)
        if pending is not None:  # its read ahead ends by putting it in the host tier
            wait_for([pending])
        with self._lock:
            if key in self.others:
                return self.others[key]
            if key in self.device:
                return self.device.get(key)
            if key in self.host:
                value = self.host.get(key)
                read_ahead = key in self._read_ahead
                self._read_ahead.discard(key)
                if not isinstance(value, HostCopy):
                    return value
                self.host.pop(key)
                if read_ahead:  # read from disk, as below
                    return self._read_to_device(key, value)
                return self._to_device(key, self._device_value(value))
            if key not in self.files:
                raise KeyError(key)
            value = self._read(key)
            if isinstance(value, HostCopy):
                return self._read_to_device(key, value)
            if self.host.admits(key, value):
                self._to_host(key, value)
            return value

    def _read_to_device(self, key: Any, copy: HostCopy) -> Any:
        """A device result read back from disk, on the device: kept in the device tier where
        the tier admits it (:meth:`Tier.admits`), else held by its reader only."""
        value = self._device_value(copy)
        if self.device.admits(key, value):
            self._to_device(key, value)
        return value

    def read_ahead(self, keys: Iterable[Any], running: Iterable[Any] = ()) -> list[Any]:
        """Start reading back, on a thread of the store's own, those of ``keys`` (the next
        task's inputs) that are only on disk, into the host tier; the keys started. They
        start only where they fit in the host tier beside ``running`` (the running task's
        inputs) and the other ``keys``, which are marked as just used first, so that the
        reads push out only results neither task reads."""
        with self._lock:
            keys, running = list(dict.fromkeys(keys)), list(dict.fromkeys(running))
            wanted = [key for key in keys if key in self.files and key not in self.host
                      and key not in self.device and key not in self.others
                      and key not in self._ahead]
            if not wanted:
                return []
            if self.host.limit is not None:
                held = sum(self.host.weights.get(key, self.file_bytes.get(key, 0))
                           for key in dict.fromkeys(keys + running)
                           if key not in self.device and key not in self.others)
                if held > self.host.limit:
                    return []
            for key in running + keys:
                if key in self.host:
                    self.host.get(key)
            if self._reader is None:
                self._reader = ThreadPoolExecutor(1, thread_name_prefix="dtri-read-ahead")
            for key in wanted:
                self._ahead[key] = self._reader.submit(self._read_into_host, key,
                                                       self.files[key])
            return wanted

    def _read_into_host(self, key: Any, path: str) -> None:
        """Read ``key``'s file back and put it in the host tier, unless the key was deleted
        or read meanwhile (the read ahead of :meth:`read_ahead`)."""
        try:
            try:
                with self._timed("disk-read"):
                    value, nbytes = _read_file(path, self._io)
            except FileNotFoundError:  # deleted meanwhile
                return
            with self._lock:
                if self.files.get(key) != path or key in self.host or key in self.device:
                    return
                self.read_back_bytes += nbytes
                self.read_ahead_bytes += nbytes
                if not isinstance(value, HostCopy):
                    self.host.admits(key, value)  # its reuse, as a read by a task
                self._read_ahead.add(key)
                self._to_host(key, value)
        finally:
            with self._lock:
                self._ahead.pop(key, None)

    def _device_value(self, copy: HostCopy) -> Any:
        with self._timed("to-device"):
            return copy.to_device()

    def __delitem__(self, key: Any) -> None:
        with self._lock:
            if key not in self:
                raise KeyError(key)
            self._delete(key)

    def __contains__(self, key: object) -> bool:
        return (key in self.device or key in self.host or key in self.files
                or key in self.others)

    def _keys(self) -> list[Any]:
        with self._lock:
            return list(dict.fromkeys(itertools.chain(
                self.device.values, self.host.values, self.files, self.others)))

    def __iter__(self) -> Iterator[Any]:
        return iter(self._keys())

    def __len__(self) -> int:
        return len(self._keys())

    def evict(self) -> int:
        """Evict the least recently used host result (Dask's memory manager calls this while
        the process is above its ``spill`` threshold): its bytes, or -1 where there is none or
        the disk refused it."""
        with self._lock:
            if not self.host.values:
                return -1
            key = self.host.oldest()
            weight = self.host.weights[key]
            return weight if self._evict_from_host(key) else -1

    def _to_device(self, key: Any, value: Any) -> Any:
        self.device.put(key, value)
        while self.device.over():
            oldest = self.device.oldest()
            evicted = self.device.pop(oldest)
            if oldest not in self.files:
                with self._timed("to-host"):
                    copy = host_copy(evicted)
                self.to_host_bytes += safe_sizeof(copy)
                self._to_host(oldest, copy)
        return value

    def _to_host(self, key: Any, value: Any) -> Any:
        self.host.put(key, value)
        while self.host.over():
            if not self._evict_from_host(self.host.oldest()):
                break
        return value

    def _evict_from_host(self, key: Any) -> bool:
        """Drop ``key``'s host copy, writing it to disk first unless it has a file; False
        (the copy kept) where the disk refuses it."""
        if key not in self.files:
            try:
                self._write(key, self.host.values[key])
            except OSError:
                SPILL_LOGGER.error("Spill to disk failed; keeping data in memory",
                                   exc_info=True)
                return False
        self.host.pop(key)
        return True

    def _write(self, key: Any, value: Any) -> None:
        frames = serialize_bytelist(
            value, compression=dask.config.get("distributed.worker.memory.spill-compression"),
            on_error="raise")
        path = os.path.join(self.directory, str(next(self._names)))
        try:
            with self._timed("disk-write"):
                _write_file(path, frames, self._io)
        except OSError:
            _remove(path)
            raise
        self.files[key] = path
        self.file_bytes[key] = nbytes = sum(memoryview(frame).nbytes for frame in frames)
        self.written_bytes += nbytes

    def _read(self, key: Any) -> Any:
        """A result read back from its file into writable memory: Dask's NumPy
        deserializer copies an array whose memory is read-only (as ``bytes`` are), which
        took 0.63 s of a 0.76 s read of 256 MB on this project's CPU machine, 0.19 s in
        all without it."""
        with self._timed("disk-read"):
            value, nbytes = _read_file(self.files[key], self._io)
        self.read_back_bytes += nbytes
        return value

    def _delete(self, key: Any) -> None:
        for tier in (self.device, self.host):
            tier.last_read.pop(key, None)
            if key in tier:
                tier.pop(key)
        self.others.pop(key, None)
        self._read_ahead.discard(key)
        self.file_bytes.pop(key, None)
        path = self.files.pop(key, None)
        if path is not None:
            _remove(path)

    def stop_reading_ahead(self) -> None:
        """Wait for the reads ahead started (at most one task's inputs), and let their thread
        go until the next read ahead."""
        if self._reader is not None:
            self._reader.shutdown(wait=True)
            self._reader = None


IO_SLICE = 16 << 20
"""The bytes of a file that one thread of :attr:`TieredStore._io` writes or reads at a time."""


def _in_slices(pool: ThreadPoolExecutor | None, move: Callable[[int, int], None],
               nbytes: int) -> None:
    """``move(start, end)`` over ``[0, nbytes)`` in slices of :data:`IO_SLICE` bytes, on the
    threads of ``pool`` (in one call without a pool). Each thread copies its slices between
    the page cache and the array, and faults the array's fresh pages in, beside the others."""
    step = IO_SLICE
    if pool is None or nbytes <= step:
        move(0, nbytes)
        return
    for done in [pool.submit(move, start, min(start + step, nbytes))
                 for start in range(0, nbytes, step)]:
        done.result()


def _write_file(path: str, frames: list, pool: ThreadPoolExecutor | None) -> None:
    """Write ``frames`` one after another to a new file at ``path``, in slices on the threads
    of ``pool`` (:func:`_in_slices`)."""
    data = [memoryview(frame).cast("B") for frame in frames]
    starts = list(itertools.accumulate((view.nbytes for view in data), initial=0))
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)

    def write(start: int, end: int) -> None:
        for view, offset in zip(data, starts, strict=False):
            low, high = max(start, offset), min(end, offset + view.nbytes)
            if low >= high:
                continue
            piece = view[low - offset:high - offset]
            while piece.nbytes:
                written = os.pwrite(descriptor, piece, low)
                piece, low = piece[written:], low + written

    try:
        _in_slices(pool, write, starts[-1])
    finally:
        os.close(descriptor)


def _read_file(path: str, pool: ThreadPoolExecutor | None) -> tuple[Any, int]:
    """The result in the file at ``path``, in writable memory (Dask's NumPy deserializer
    copies an array whose memory is read-only), and the file's bytes, read in slices on the
    threads of ``pool`` (:func:`_in_slices`)."""
    descriptor = os.open(path, os.O_RDONLY)
    try:
        data = np.empty(os.fstat(descriptor).st_size, np.uint8)
        view = data.data  # a memoryview of the array

        def read(start: int, end: int) -> None:
            while start < end:
                got = os.preadv(descriptor, [view[start:end]], start)
                if got == 0:
                    raise OSError(f"{path} ended at byte {start} of {len(data)}")
                start += got

        _in_slices(pool, read, len(data))
    finally:
        os.close(descriptor)
    return deserialize_bytes(view), len(data)


def _remove(path: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.remove(path)
