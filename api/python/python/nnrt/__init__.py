"""nnrt: an on-device neural-network inference runtime, from Python.

    import numpy as np, nnrt
    with nnrt.Session("model.tflite", backends="cpu", threads=2) as s:
        print(s.inputs, s.outputs)
        (probs,) = s.run([np.zeros(s.inputs[0].shape, s.inputs[0].dtype)])

A `Session` loads any model nnrt loads (an nnpackage folder or zip, `.tflite`, `.circle`,
ExecuTorch `.pte`, TOSA), prepares it for the backends asked for and runs it as often as needed.

Copies: an input array that is C-contiguous and of the input's dtype is read where it lies (no
conversion copy); nnrt copies it once into its own memory before the run. Other arrays of the
right dtype are made contiguous first (one more copy). Each output is copied once out of the
session's memory, which the next run overwrites, into an array that owns it.

The GIL is released while a session prepares and runs: sessions on different Python threads
run at the same time. Calls on one session from several threads take turns.

Errors are `nnrt.Error`s carrying nnrt's message: `LoadError`, `PrepareError`, `RunError`,
and `InvalidArgumentError` (also a `ValueError`) for a caller's mistake.
"""

from dataclasses import dataclass
import os
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

from ._errors import Error, InvalidArgumentError, LoadError, PrepareError, RunError
from . import _nnrt

__all__ = [
    "Session",
    "TensorInfo",
    "Quantization",
    "OpTime",
    "Placement",
    "Error",
    "LoadError",
    "PrepareError",
    "RunError",
    "InvalidArgumentError",
    "available_backends",
    "__version__",
]

__version__: str = _nnrt.version()

PathLike = Union[str, "os.PathLike[str]"]


def available_backends() -> List[str]:
    """The backends this build of nnrt has, e.g. ``["cpu", "gpu"]``."""
    return _nnrt.available_backends()


@dataclass(frozen=True)
class Quantization:
    """How a quantized tensor's integers map to real numbers: ``real = scale * (q - zero_point)``.

    Per-tensor quantization has one scale and zero point and ``axis`` None; per-channel has one
    of each per slice along ``axis``."""

    scales: Tuple[float, ...]
    zero_points: Tuple[int, ...]
    axis: Optional[int]

    def dequantize(self, q: np.ndarray) -> np.ndarray:
        """``q`` as float32 real values."""
        scale = np.asarray(self.scales, np.float32)
        zero = np.asarray(self.zero_points, np.float32)
        if self.axis is not None:
            shape = [1] * q.ndim
            shape[self.axis] = -1
            scale, zero = scale.reshape(shape), zero.reshape(shape)
        return ((q.astype(np.float32) - zero) * scale).astype(np.float32)


@dataclass(frozen=True)
class TensorInfo:
    """An input or output of a session.

    ``shape`` holds the concrete dims now (inputs: as set; outputs: as of the last prepare or
    run); ``signature`` the model's declared dims, with None where a dim is known only at run
    time."""

    name: str
    shape: Tuple[int, ...]
    signature: Tuple[Optional[int], ...]
    dtype: np.dtype
    quantization: Optional[Quantization]


@dataclass(frozen=True)
class OpTime:
    """Time spent in one op, as ``nnpackage_run --profile`` prints it: ``ms`` per run (the mean
    over the profiled runs), ``total_ms`` over all of them."""

    op: int
    kind: str
    backend: str
    ms: float
    total_ms: float


@dataclass(frozen=True)
class Placement:
    """Where an op runs, and why it is not on the first backend asked for (None if it is)."""

    op: int
    kind: str
    backend: str
    fallback_reason: Optional[str]


def _info(d: Dict[str, Any]) -> TensorInfo:
    q = d["quantization"]
    quant = None if q is None else Quantization(tuple(q["scales"]), tuple(q["zero_points"]), q["axis"])
    return TensorInfo(d["name"], tuple(d["shape"]), tuple(d["signature"]), np.dtype(d["dtype"]), quant)


Inputs = Union[np.ndarray, Sequence[Any], Mapping[str, Any]]


class Session:
    """A model loaded, configured and prepared; run it with :meth:`run`.

    :param path: an nnpackage folder or zip, or a model file (``.tflite``, ``.circle``,
        ``.pte``, TOSA).
    :param backends: backends in order of preference, e.g. ``"cpu"`` or ``"gpu;cpu"``; None
        keeps the package's cfg or the ``BACKENDS`` environment variable.
    :param threads: kernel threads (1..256); None: ``NUM_THREADS``, else every core.
    :param method: the ExecuTorch method or TFLite signature to run (see :attr:`methods`);
        None runs the model's entry (the first method).
    :param custom_op_libs: custom-op plugins (shared libraries implementing ``nnrt_plugin.h``)
        to load; their code runs in this process.
    :param allow_package_plugins: let the package's own ``custom_op/`` libraries load (they are
        code: off by default).
    :param device_libs: device drivers (plugin ABI 2), e.g. for Edge TPU models.
    :param config: more session configuration keys (onert's ``OP_BACKEND_*``, ``MEMORY_LIMIT``,
        ``WHILE_MAX_ITERATIONS``, ...).
    :raises LoadError: the model or a library cannot be read.
    :raises PrepareError: the model cannot be prepared for these backends.
    :raises InvalidArgumentError: a configuration value is not valid.
    """

    def __init__(
        self,
        path: PathLike,
        backends: Optional[str] = "cpu",
        threads: Optional[int] = None,
        method: Optional[str] = None,
        custom_op_libs: Sequence[PathLike] = (),
        allow_package_plugins: bool = False,
        device_libs: Sequence[PathLike] = (),
        config: Optional[Mapping[str, str]] = None,
    ) -> None:
        if threads is not None and (isinstance(threads, bool) or not isinstance(threads, int) or threads < 1):
            raise InvalidArgumentError(f"threads must be a positive integer, got {threads!r}")
        if isinstance(custom_op_libs, (str, os.PathLike)) or isinstance(device_libs, (str, os.PathLike)):
            raise InvalidArgumentError("custom_op_libs and device_libs are lists of paths")
        self._native = _nnrt.NativeSession(
            os.fspath(path),
            backends,
            threads,
            method,
            [os.fspath(p) for p in custom_op_libs],
            [os.fspath(p) for p in device_libs],
            bool(allow_package_plugins),
            [(str(k), str(v)) for k, v in (config or {}).items()],
        )
        self._path = os.fspath(path)

    def __repr__(self) -> str:
        state = "closed" if self.closed else f"{len(self.inputs)} inputs, {len(self.outputs)} outputs"
        return f"<nnrt.Session {self._path!r} ({state})>"

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def inputs(self) -> List[TensorInfo]:
        """Name, shape, declared signature, dtype and quantization of each input."""
        return [_info(d) for d in self._native.inputs()]

    @property
    def outputs(self) -> List[TensorInfo]:
        """The same for each output (shapes as of the last prepare or run)."""
        return [_info(d) for d in self._native.outputs()]

    @property
    def methods(self) -> List[str]:
        """The model's methods (ExecuTorch) or signature keys (TFLite), in file order."""
        return self._native.methods()

    @property
    def method(self) -> Optional[str]:
        """The method this session runs (None: the model's entry)."""
        return self._native.method()

    @property
    def threads(self) -> int:
        """How many threads kernels use."""
        return self._native.threads()

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._native.closed()

    def _index(self, key: Union[int, str]) -> int:
        infos = self.inputs
        if isinstance(key, str):
            names = [i.name for i in infos]
            if key not in names:
                raise InvalidArgumentError(f"no input named {key!r}; the inputs are {names}")
            return names.index(key)
        if isinstance(key, bool) or not isinstance(key, int) or not 0 <= key < len(infos):
            raise InvalidArgumentError(f"input index {key!r} is out of range: the model has {len(infos)} inputs")
        return key

    def resize(self, shapes: Mapping[Union[int, str], Sequence[int]]) -> None:
        """Sets input shapes (by index or name) within the declared signatures, and prepares
        again for them (a plan prepared earlier for the same shapes is reused). :meth:`run`
        also resizes by itself to the shapes of the arrays it is given."""
        for key, shape in shapes.items():
            dims = [int(d) for d in shape]
            if any(d < 0 for d in dims):
                raise InvalidArgumentError(f"input {key!r}: dims must not be negative, got {list(shape)}")
            self._native.resize(self._index(key), dims)

    def run(self, inputs: Inputs) -> List[np.ndarray]:
        """Runs the model once and returns its outputs as NumPy arrays.

        :param inputs: one array per input, in order (a list or tuple), or a dict from input
            name to array; a single array for a model with one input. Each array must have the
            input's dtype (``s.inputs[i].dtype``); lists and scalars are converted to it. An
            array whose shape differs from the input's current shape resizes the input, when
            the model's signature allows it.
        :raises InvalidArgumentError: wrong number of inputs, a wrong dtype or shape.
        :raises RunError: the run failed (the session stays usable).
        """
        infos = self.inputs
        if isinstance(inputs, np.ndarray):
            inputs = [inputs]
        if isinstance(inputs, Mapping):
            names = [i.name for i in infos]
            unknown = [k for k in inputs if k not in names]
            missing = [n for n in names if n not in inputs]
            if unknown or missing:
                raise InvalidArgumentError(f"run: inputs by name must name each input once: unknown {unknown}, missing {missing}; the inputs are {names}")
            ordered = [inputs[n] for n in names]
        elif isinstance(inputs, (list, tuple)):
            ordered = list(inputs)
        else:
            raise InvalidArgumentError(f"run: inputs must be a list, a tuple, a dict or an array, got {type(inputs).__name__}")
        if len(ordered) != len(infos):
            raise InvalidArgumentError(f"run: the model has {len(infos)} inputs, got {len(ordered)}")
        views, shapes = [], []
        for i, (info, value) in enumerate(zip(infos, ordered)):
            if isinstance(value, np.ndarray):
                a = value
                if a.dtype != info.dtype:
                    raise InvalidArgumentError(
                        f"run: input {i} ('{info.name}') is {info.dtype}, got an array of {a.dtype} (convert it with .astype(np.{info.dtype.name}))"
                    )
            else:
                a = np.asarray(value, dtype=info.dtype)
            if not a.flags.c_contiguous:
                a = np.ascontiguousarray(a)
            shapes.append([int(d) for d in a.shape])
            views.append(a.reshape(-1).view(np.uint8))
        results = self._native.run(views, shapes)
        return [raw.view(np.dtype(dtype)).reshape(dims) for raw, dtype, dims in results]

    def set_profiling(self, on: bool = True) -> None:
        """Switches per-op timing on (clearing earlier times) or off."""
        self._native.set_profiling(bool(on))

    def profile(self) -> List[OpTime]:
        """Per-op times over the runs since :meth:`set_profiling` switched timing on, slowest
        first: what ``nnpackage_run --profile`` prints."""
        runs, times = self._native.op_times()
        per = max(runs, 1)
        out = [OpTime(op, kind, backend, 1e3 * secs / per, 1e3 * secs) for op, kind, backend, secs in times]
        return sorted(out, key=lambda t: -t.total_ms)

    def placements(self) -> List[Placement]:
        """Where each op runs (``nnrt-inspect --partition``); ops folded at prepare are not
        listed."""
        return [Placement(*p) for p in self._native.placements()]

    def cancel(self) -> None:
        """Stops the run in progress (call it from another thread), or else the next one: that
        run raises :class:`RunError` and the session stays usable."""
        self._native.cancel()

    def close(self) -> None:
        """Frees the model and its memory; later calls raise :class:`InvalidArgumentError`."""
        self._native.close()
