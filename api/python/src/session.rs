//! `nnrt._nnrt.NativeSession`: one [`nnrt::Session`], loaded, configured and prepared at
//! construction, behind a mutex so Python threads may share it (their runs take turns).

use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard, PoisonError};

use numpy::{PyArray1, PyReadonlyArray1};
use pyo3::prelude::*;
use pyo3::sync::MutexExt;
use pyo3::types::PyDict;

use crate::convert::{guard, info_dict, raise, to_py, Kind};

/// One output of a run: its bytes (a `uint8` array owning them), dtype name and dims.
type RunOutput<'py> = (Bound<'py, PyArray1<u8>>, &'static str, Vec<usize>);
/// An op's time: (op index in the model, kind, backend, total seconds).
type OpTime = (usize, String, String, f64);
/// An op's placement: (op index in the model, kind, backend, fallback reason).
type OpPlacement = (usize, String, String, Option<String>);

/// A prepared session. Built by `nnrt.Session`; the methods take and return plain values
/// (byte views, dims, dicts) that the Python layer turns into arrays and objects.
#[pyclass(module = "nnrt._nnrt")]
pub struct NativeSession {
    /// `None` once closed.
    inner: Mutex<Option<Inner>>,
    /// Cancels the run in progress from any thread, without taking the lock.
    cancel: nnrt::CancelToken,
}

struct Inner {
    session: nnrt::Session,
    /// The method (signature) selected at construction.
    method: Option<String>,
    /// Runs since profiling was switched on.
    profiled_runs: usize,
    profiling: bool,
}

/// How a session is configured before its first prepare.
struct Options {
    backends: Option<String>,
    threads: Option<usize>,
    method: Option<String>,
    custom_op_libs: Vec<PathBuf>,
    device_libs: Vec<PathBuf>,
    allow_package_plugins: bool,
    config: Vec<(String, String)>,
}

fn open(path: PathBuf, o: Options) -> Result<nnrt::Session, nnrt::Error> {
    let mut s = nnrt::Session::load(&path)?;
    if let Some(b) = &o.backends {
        s.set_backends(b)?;
    }
    if let Some(n) = o.threads {
        s.set_threads(n)?;
    }
    for (k, v) in &o.config {
        s.set_config(k, v)?;
    }
    for lib in &o.custom_op_libs {
        s.load_custom_op_library(lib)?;
    }
    for lib in &o.device_libs {
        s.load_device_library(lib)?;
    }
    if o.allow_package_plugins {
        s.set_config(nnrt::ALLOW_PACKAGE_PLUGINS, "1")?;
    }
    if let Some(m) = &o.method {
        s.select_signature(m)?;
    }
    s.prepare()?;
    Ok(s)
}

impl NativeSession {
    /// Takes the lock, detached from Python while waiting: a thread whose run holds the lock
    /// and waits for the GIL cannot deadlock with one that holds the GIL and waits for the lock.
    fn lock(&self, py: Python<'_>) -> MutexGuard<'_, Option<Inner>> {
        // A panic is caught before it leaves a locked section (`guard`), so a poisoned lock
        // still holds a consistent session.
        self.inner.lock_py_attached(py).unwrap_or_else(PoisonError::into_inner)
    }
}

/// The error for a call on a closed session.
fn closed(py: Python<'_>, call: &str) -> PyErr {
    raise(py, Kind::InvalidArgument, format!("{call}: the session is closed"))
}

/// Runs `body` on the open session under the lock and the panic guard.
fn with_open<T>(py: Python<'_>, this: &NativeSession, call: &'static str, body: impl FnOnce(&mut Inner) -> PyResult<T>) -> PyResult<T> {
    guard(py, call, || {
        let mut g = this.lock(py);
        let inner = g.as_mut().ok_or_else(|| closed(py, call))?;
        body(inner)
    })
}

#[pymethods]
impl NativeSession {
    /// Loads `path`, applies the options and prepares. The GIL is released meanwhile.
    #[new]
    #[pyo3(signature = (path, backends=None, threads=None, method=None, custom_op_libs=Vec::new(), device_libs=Vec::new(), allow_package_plugins=false, config=Vec::new()))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        path: PathBuf,
        backends: Option<String>,
        threads: Option<usize>,
        method: Option<String>,
        custom_op_libs: Vec<PathBuf>,
        device_libs: Vec<PathBuf>,
        allow_package_plugins: bool,
        config: Vec<(String, String)>,
    ) -> PyResult<Self> {
        let o = Options { backends, threads, method: method.clone(), custom_op_libs, device_libs, allow_package_plugins, config };
        let opened = guard(py, "Session()", || Ok(py.detach(|| open(path, o))))?;
        let session = opened.map_err(|e| to_py(py, e))?;
        let cancel = session.cancel_handle();
        Ok(NativeSession { inner: Mutex::new(Some(Inner { session, method, profiled_runs: 0, profiling: false })), cancel })
    }

    /// Facts of every input: a list of dicts (see `convert::info_dict`).
    fn inputs<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyDict>>> {
        with_open(py, self, "inputs", |inner| {
            (0..inner.session.input_count()).map(|i| inner.session.input_info(i).map_err(|e| to_py(py, e)).and_then(|t| info_dict(py, &t))).collect()
        })
    }

    /// Facts of every output (shapes as of the last prepare or run).
    fn outputs<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyDict>>> {
        with_open(py, self, "outputs", |inner| {
            (0..inner.session.output_count()).map(|i| inner.session.output_info(i).map_err(|e| to_py(py, e)).and_then(|t| info_dict(py, &t))).collect()
        })
    }

    /// The model's methods (ExecuTorch) or signature keys (TFLite SignatureDefs), in file order.
    fn methods(&self, py: Python<'_>) -> PyResult<Vec<String>> {
        with_open(py, self, "methods", |inner| Ok(inner.session.signatures()))
    }

    /// The method selected at construction, or `None` for the model's entry.
    fn method(&self, py: Python<'_>) -> PyResult<Option<String>> {
        with_open(py, self, "method", |inner| Ok(inner.method.clone()))
    }

    /// The session's thread count and backend list.
    fn threads(&self, py: Python<'_>) -> PyResult<usize> {
        with_open(py, self, "threads", |inner| Ok(inner.session.threads()))
    }

    /// Sets the shape of input `index` (prepares again for it; an earlier plan for the same
    /// shapes is reused).
    fn resize(&self, py: Python<'_>, index: usize, dims: Vec<usize>) -> PyResult<()> {
        with_open(py, self, "resize", |inner| {
            let s = &mut inner.session;
            py.detach(|| s.set_input_shape(index, &dims)).map_err(|e| to_py(py, e))
        })
    }

    /// Runs once. `inputs[i]` is a 1-D `uint8` view of input `i`'s bytes and `shapes[i]` its
    /// dims (an input whose dims differ from the current ones is resized first). Returns, per
    /// output, its bytes (a `uint8` array owning them), its dtype name and its dims.
    fn run<'py>(
        &self,
        py: Python<'py>,
        inputs: Vec<PyReadonlyArray1<'py, u8>>,
        shapes: Vec<Vec<usize>>,
    ) -> PyResult<Vec<RunOutput<'py>>> {
        let produced = with_open(py, self, "run", |inner| {
            let s = &mut inner.session;
            let count = s.input_count();
            if inputs.len() != count || shapes.len() != count {
                return Err(raise(py, Kind::InvalidArgument, format!("run: the model has {count} inputs, got {}", inputs.len())));
            }
            for (i, dims) in shapes.iter().enumerate() {
                let current = s.input_info(i).map_err(|e| to_py(py, e))?;
                if current.dims != *dims {
                    py.detach(|| s.set_input_shape(i, dims)).map_err(|e| to_py(py, e))?;
                }
            }
            for (i, bytes) in inputs.iter().enumerate() {
                let bytes = bytes.as_slice().map_err(|e| raise(py, Kind::InvalidArgument, format!("run: input {i}: {e}")))?;
                // The one copy of the input: into the session's arena, with the GIL held so the
                // caller's array cannot change under it.
                s.set_input(i, bytes).map_err(|e| to_py(py, e))?;
            }
            py.detach(|| {
                s.run()?;
                (0..s.output_count())
                    .map(|j| {
                        let info = s.output_info(j)?;
                        // Copied out of the arena, which the next run overwrites.
                        Ok((s.output(j)?.to_vec(), info.dtype.numpy_name(), info.dims))
                    })
                    .collect::<Result<Vec<_>, nnrt::Error>>()
            })
            .map_err(|e| to_py(py, e))
            .inspect(|_| {
                if inner.profiling {
                    inner.profiled_runs += 1;
                }
            })
        })?;
        Ok(produced.into_iter().map(|(bytes, dtype, dims)| (PyArray1::from_vec(py, bytes), dtype, dims)).collect())
    }

    /// Switches per-op timing on (clearing earlier times) or off.
    fn set_profiling(&self, py: Python<'_>, on: bool) -> PyResult<()> {
        with_open(py, self, "set_profiling", |inner| {
            inner.session.set_profiling(on).map_err(|e| to_py(py, e))?;
            inner.profiling = on;
            inner.profiled_runs = 0;
            Ok(())
        })
    }

    /// Per-op times since profiling was switched on: (runs, [(op index, kind, backend, total
    /// seconds)]).
    fn op_times(&self, py: Python<'_>) -> PyResult<(usize, Vec<OpTime>)> {
        with_open(py, self, "profile", |inner| {
            let times = inner.session.op_times().into_iter().map(|(op, kind, backend, t)| (op, kind, backend, t.as_secs_f64())).collect();
            Ok((inner.profiled_runs, times))
        })
    }

    /// Where each op runs: (op index, kind, backend, fallback reason).
    fn placements(&self, py: Python<'_>) -> PyResult<Vec<OpPlacement>> {
        with_open(py, self, "placements", |inner| {
            let list = inner.session.placements().map_err(|e| to_py(py, e))?;
            Ok(list.into_iter().map(|p| (p.index, p.kind, p.backend, p.fallback_reason)).collect())
        })
    }

    /// Stops the run in progress (from another thread), or else the next one, with `RunError`.
    fn cancel(&self) {
        self.cancel.cancel();
    }

    /// Frees the session; later calls raise `InvalidArgumentError`. Closing twice is allowed.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        guard(py, "close", || {
            let taken = self.lock(py).take();
            py.detach(move || drop(taken));
            Ok(())
        })
    }

    /// Whether `close()` was called.
    fn closed(&self, py: Python<'_>) -> bool {
        self.lock(py).is_none()
    }
}
