//! nnrt's errors as the Python exceptions of `nnrt._errors`, tensor facts as plain Python
//! values, and the last guard against panics.

use nnrt::{CompileError, Quantization, RunError, TensorInfo};
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// Which `nnrt._errors` class an error becomes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `nnrt.Error`: anything else (an internal error, a bug to report).
    Error,
    /// `nnrt.LoadError`: the model (or a plugin library) could not be read.
    Load,
    /// `nnrt.PrepareError`: partitioning, compiling kernels or planning memory failed.
    Prepare,
    /// `nnrt.RunError`: the run failed (a kernel, a loop limit, memory, cancelled).
    Run,
    /// `nnrt.InvalidArgumentError` (also a `ValueError`): the caller's argument is wrong.
    InvalidArgument,
}

impl Kind {
    fn class_name(self) -> &'static str {
        match self {
            Kind::Error => "Error",
            Kind::Load => "LoadError",
            Kind::Prepare => "PrepareError",
            Kind::Run => "RunError",
            Kind::InvalidArgument => "InvalidArgumentError",
        }
    }
}

/// The exception class an nnrt error maps to: by stage, except for errors about the caller's
/// own values (a configuration value, an input shape or buffer, an index), which are
/// `InvalidArgumentError`s whatever the stage.
pub fn kind_of(e: &nnrt::Error) -> Kind {
    match e {
        // A package's own plugins, not allowed (or in a zip), fail its prepare.
        nnrt::Error::Plugin(nnrt::PluginError::PackageNotAllowed { .. } | nnrt::PluginError::PackageUnsupported { .. }) => Kind::Prepare,
        nnrt::Error::Load(_) | nnrt::Error::Plugin(_) => Kind::Load,
        nnrt::Error::Compile(CompileError::Config { .. } | CompileError::InputShape { .. }) => Kind::InvalidArgument,
        nnrt::Error::Compile(_) | nnrt::Error::NoDeviceDriver { .. } => Kind::Prepare,
        nnrt::Error::Run(RunError::BufferSize { .. } | RunError::BadIndex { .. }) => Kind::InvalidArgument,
        nnrt::Error::Run(_) => Kind::Run,
        nnrt::Error::InvalidState { .. } => Kind::InvalidArgument,
        nnrt::Error::Internal { .. } => Kind::Error,
    }
}

/// An exception of class `kind` carrying `message`. If `nnrt._errors` cannot be imported (the
/// native module used without its package), a plain `RuntimeError` says so with the message.
pub fn raise(py: Python<'_>, kind: Kind, message: String) -> PyErr {
    let made = py.import("nnrt._errors").and_then(|m| m.getattr(kind.class_name())).and_then(|class| class.call1((message.clone(),)));
    match made {
        Ok(exc) => PyErr::from_value(exc),
        Err(_) => pyo3::exceptions::PyRuntimeError::new_err(format!("nnrt.{}: {message}", kind.class_name())),
    }
}

/// An nnrt error as its Python exception, with nnrt's message.
pub fn to_py(py: Python<'_>, e: nnrt::Error) -> PyErr {
    raise(py, kind_of(&e), e.to_string())
}

/// Runs `body`; a panic inside it becomes `nnrt.Error` ("internal error in CALL: ...").
pub fn guard<T>(py: Python<'_>, call: &str, body: impl FnOnce() -> PyResult<T>) -> PyResult<T> {
    match nnrt::catch_quietly(body) {
        Ok(r) => r,
        Err(payload) => {
            let message = nnrt::panic_message(payload.as_ref());
            Err(raise(py, Kind::Error, format!("internal error in {call}: {message} (please report it with the model)")))
        }
    }
}

/// A tensor's facts as a dict: `name`, `dtype` (NumPy's name), `shape` (concrete dims now),
/// `signature` (declared dims, `None` where unknown until run time), `quantization` (`None`,
/// or `scales`, `zero_points`, `axis`).
pub fn info_dict<'py>(py: Python<'py>, info: &TensorInfo) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("name", &info.name)?;
    d.set_item("dtype", info.dtype.numpy_name())?;
    d.set_item("shape", info.dims.clone())?;
    d.set_item("signature", info.signature.clone())?;
    match &info.quant {
        Quantization::None => d.set_item("quantization", py.None())?,
        Quantization::PerTensor { scale, zero_point } => {
            let q = PyDict::new(py);
            q.set_item("scales", vec![*scale])?;
            q.set_item("zero_points", vec![*zero_point])?;
            q.set_item("axis", py.None())?;
            d.set_item("quantization", q)?;
        }
        Quantization::PerAxis { scales, zero_points, axis } => {
            let q = PyDict::new(py);
            q.set_item("scales", scales.clone())?;
            q.set_item("zero_points", zero_points.clone())?;
            q.set_item("axis", *axis)?;
            d.set_item("quantization", q)?;
        }
    }
    Ok(d)
}
