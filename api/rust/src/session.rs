//! The session: load → (configure) → prepare → run, repeatable, with the order enforced.

use std::path::Path;

use nnrt_core::shape::{fmt_dims, num_elements};
use nnrt_core::{Backend, CompileError, Config, DType, LoadError, Model, OpKind, Prepared, Quantization, RunError, SubgraphId};
use nnrt_loaders::Package;

use crate::backends::create_backend;
use thiserror::Error;

/// Every error the API returns: the stage's typed error, or a call made in the wrong state.
#[derive(Debug, Error)]
pub enum Error {
    /// Loading failed.
    #[error(transparent)]
    Load(#[from] LoadError),
    /// Preparing failed.
    #[error(transparent)]
    Compile(#[from] CompileError),
    /// Running (or setting inputs, reading outputs) failed.
    #[error(transparent)]
    Run(#[from] RunError),
    /// A custom-op plugin could not be loaded, or a package's plugins were not allowed.
    #[error(transparent)]
    Plugin(#[from] nnrt_custom_ops::PluginError),
    /// The call is not allowed in the session's current state.
    #[error("{call} is not allowed in state {state:?}: {hint}")]
    InvalidState {
        /// The call made.
        call: &'static str,
        /// The state the session was in.
        state: State,
        /// What to do instead.
        hint: &'static str,
    },
    /// An op runs on an accelerator and no driver for it is loaded (an Edge TPU model's
    /// `edgetpu-custom-op` without an Edge TPU driver).
    #[error(
        "subgraph {subgraph} op {op} ('{name}') runs on an {device}: it was compiled for chip '{chip}' and needs a device driver for DarwiNN runtime version {min_runtime_version} or later, \
         and no {device} driver is loaded. Load one with nnpackage_run --device-lib PATH (session config DEVICE_LIB=PATH, Session::load_device_library), \
         or run the CPU version of the model (the .tflite before edgetpu_compiler); nnrt-inspect shows the package without a driver"
    )]
    NoDeviceDriver {
        /// The subgraph holding the op.
        subgraph: usize,
        /// The op's index in it.
        op: usize,
        /// The custom op's name.
        name: String,
        /// The device ("Edge TPU").
        device: &'static str,
        /// The chip the package was compiled for ("beagle").
        chip: String,
        /// The package's minimum runtime version.
        min_runtime_version: i32,
    },
    /// A check inside nnrt failed (a panic, caught here): a bug to report with the model. The
    /// session stays usable in the state it was in before the call.
    #[error("internal error in {call}: {message} (please report it with the model)")]
    Internal {
        /// The call made.
        call: &'static str,
        /// The panic's message.
        message: String,
    },
}

/// Runs `body`, turning a panic inside it into [`Error::Internal`], so no panic leaves the API.
/// The panic is reported once, as that error: the host's stderr gets no panic message or
/// backtrace for it (see [`quiet_panics`]).
fn guarded<T>(call: &'static str, body: impl FnOnce() -> Result<T, Error>) -> Result<T, Error> {
    match catch_quietly(body) {
        Ok(r) => r,
        Err(payload) => Err(Error::Internal { call, message: panic_message(payload.as_ref()) }),
    }
}

/// The message of a panic caught by [`catch_quietly`] (its `String` or `&str` payload).
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "a panic without a message".into())
}

/// `catch_unwind` for API layers over nnrt (the C ABI): a panic inside `body` comes back as the
/// payload, and the host's stderr gets no panic message or backtrace for it.
pub fn catch_quietly<R>(body: impl FnOnce() -> R) -> std::thread::Result<R> {
    quiet_panics();
    let outer = GUARDED.with(|g| g.replace(true));
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(body));
    GUARDED.with(|g| g.set(outer));
    result
}

std::thread_local! {
    /// Whether this thread is inside a [`guarded`] call.
    static GUARDED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Installs, once, a panic hook that keeps quiet about panics nnrt catches and reports as
/// [`Error::Internal`]: those on a thread inside a [`guarded`] call and on nnrt's kernel threads
/// (named `nnrt-N`), which it logs at debug level instead. Every other panic goes to the hook
/// that was installed before (by default, the message and backtrace on stderr).
fn quiet_panics() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let ours = GUARDED.with(|g| g.get()) || std::thread::current().name().is_some_and(|n| n.starts_with("nnrt-"));
            if ours {
                log::debug!("caught inside nnrt: {info}");
            } else {
                previous(info);
            }
        }));
    });
}

/// Where a session is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    /// A model is loaded; configuration and input shapes may change.
    Loaded,
    /// Kernels are compiled and memory planned; inputs may be set and the model run.
    Prepared,
    /// At least one run finished; outputs are readable.
    FinishedRun,
}

/// Name, type, shape and quantization of an input or output.
#[derive(Clone, Debug, PartialEq)]
pub struct TensorInfo {
    /// Tensor name from the model.
    pub name: String,
    /// Element type.
    pub dtype: DType,
    /// Concrete dims as currently set (inputs) or last computed (outputs).
    pub dims: Vec<usize>,
    /// The declared shape, with `None` for dims unknown until run time.
    pub signature: Vec<Option<usize>>,
    /// Quantization parameters.
    pub quant: Quantization,
}

impl TensorInfo {
    /// Bytes a buffer for this tensor must have.
    pub fn byte_size(&self) -> usize {
        num_elements(&self.dims).unwrap_or(0) * self.dtype.size()
    }
}

/// Where an op of the prepared graph runs (for `nnrt-inspect --partition`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpPlacement {
    /// The op's index in the model.
    pub index: usize,
    /// The op's kind name.
    pub kind: String,
    /// The backend id.
    pub backend: String,
    /// Why it is not on the backend the configuration asked for.
    pub fallback_reason: Option<String>,
}

/// How many plans for other input shapes a session keeps.
const SHAPE_CACHE: usize = 4;

/// A loaded model and everything prepared for it.
pub struct Session {
    model: Model,
    package: Package,
    config: Config,
    input_dims: Vec<Vec<usize>>,
    /// The subgraph that runs (0, or a signature's).
    entry: SubgraphId,
    prepared: Option<Prepared>,
    /// Plans prepared for other input shapes, most recent last (see `set_input_shape`).
    shape_cache: Vec<(Vec<Vec<usize>>, Prepared)>,
    state: State,
    custom_ops: nnrt_custom_ops::Registry,
    /// The package folder (for its `custom_op/` plugins); None for zips, bare files, IR models.
    package_dir: Option<std::path::PathBuf>,
    /// Whether the package's plugins were loaded (once allowed, at the first prepare).
    package_plugins_loaded: bool,
    /// Whether the config's DEVICE_LIB libraries were loaded (at the first prepare).
    device_libs_loaded: bool,
    /// Stops this session's runs from another thread.
    cancel: nnrt_core::CancelToken,
}

impl Session {
    /// Loads an nnpackage (folder or zip) or a bare `.tflite`/`.circle` file. The package's cfg
    /// files, then the environment's `BACKENDS`/`NUM_THREADS`/`OP_BACKEND_*`, become the session's
    /// configuration; later API calls override both.
    pub fn load(path: impl AsRef<Path>) -> Result<Session, Error> {
        let package = nnrt_loaders::load(path.as_ref())?;
        let mut s = Session::from_package(package)?;
        s.package_dir = path.as_ref().is_dir().then(|| path.as_ref().to_path_buf());
        Ok(s)
    }

    /// Builds a session from a package already loaded.
    pub fn from_package(mut package: Package) -> Result<Session, Error> {
        // One model, or several joined by the MANIFEST's pkg-inputs/pkg-outputs/model-connect.
        let model = match package.models.len() {
            // The single model moves out (a copy would hold the IR twice while loading).
            1 => package.models.remove(0),
            _ => nnrt_loaders::join(&package)?,
        };
        package.models.clear();
        let mut config = Config::default();
        for (k, v) in package.config.iter().filter(|(k, _)| crate::plugins::package_may_set(k)) {
            config.set(k.clone(), v.clone());
        }
        config.apply_env();
        Ok(Session::from_parts(model, package, config))
    }

    /// Builds a session from an IR model (e.g. one built in memory by tests).
    pub fn from_model(model: Model) -> Result<Session, Error> {
        if model.subgraphs.is_empty() {
            return Err(Error::Load(LoadError::Malformed { path: model.source.clone(), format: "IR", reason: "the model has no subgraphs".into() }));
        }
        Ok(Session::from_parts(model, Package::default(), Config::default()))
    }

    fn from_parts(model: Model, package: Package, config: Config) -> Session {
        let input_dims = model.entry().inputs.iter().map(|&i| model.entry().operand(i).default_dims.clone()).collect();
        Session { model, package, config, input_dims, entry: SubgraphId(0), prepared: None, shape_cache: Vec::new(), state: State::Loaded, custom_ops: Default::default(), package_dir: None, package_plugins_loaded: false, device_libs_loaded: false, cancel: Default::default() }
    }

    /// The subgraph that runs: the model's entry, or the one a signature selected.
    fn graph(&self) -> &nnrt_core::Subgraph {
        self.model.subgraph(self.entry).unwrap_or_else(|| self.model.entry())
    }

    /// Signature keys the model declares (TFLite SignatureDefs), in file order.
    pub fn signatures(&self) -> Vec<String> {
        self.model.signatures.iter().map(|s| s.key.clone()).collect()
    }

    /// Runs signature `key` instead of the entry subgraph: its subgraph becomes the one that runs,
    /// with inputs and outputs in the signature's order. Only before [`Session::prepare`].
    pub fn select_signature(&mut self, key: &str) -> Result<(), Error> {
        self.require_loaded("select_signature")?;
        let sig = self.model.signatures.iter().find(|s| s.key == key).cloned().ok_or_else(|| {
            let known = self.signatures();
            Error::Compile(CompileError::Config {
                key: "signature".into(),
                value: key.into(),
                reason: if known.is_empty() { "the model declares no signatures".into() } else { format!("the model's signatures are: {}", known.join(", ")) },
            })
        })?;
        let g = self.model.subgraphs.get_mut(sig.subgraph.index()).ok_or_else(|| {
            Error::Load(LoadError::Malformed { path: self.model.source.clone(), format: "TFLite", reason: format!("signature '{key}' names a missing subgraph") })
        })?;
        g.inputs = sig.inputs.iter().map(|(_, id)| *id).collect();
        g.outputs = sig.outputs.iter().map(|(_, id)| *id).collect();
        self.entry = sig.subgraph;
        self.input_dims = g.inputs.iter().map(|&i| g.operand(i).default_dims.clone()).collect();
        Ok(())
    }

    /// The session's state.
    pub fn state(&self) -> State {
        self.state
    }

    /// The loaded model.
    pub fn model(&self) -> &Model {
        &self.model
    }

    /// The package the model came from (MANIFEST, cfg values, `custom_op/` files).
    pub fn package(&self) -> &Package {
        &self.package
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.config
    }

    fn require_loaded(&self, call: &'static str) -> Result<(), Error> {
        if self.state != State::Loaded {
            return Err(Error::InvalidState { call, state: self.state, hint: "configure the session before prepare()" });
        }
        Ok(())
    }

    /// Sets a configuration key (onert's names: `BACKENDS`, `NUM_THREADS`, `OP_BACKEND_ALLOPS`,
    /// `OP_BACKEND_<Op>`, `OP_BACKEND_MAP`; and `ALLOW_PACKAGE_PLUGINS=1`, which lets prepare load
    /// the shared libraries in the package's `custom_op/` folder). Only before [`Session::prepare`].
    pub fn set_config(&mut self, key: &str, value: &str) -> Result<(), Error> {
        self.require_loaded("set_config")?;
        if key == "NUM_THREADS" {
            nnrt_core::parse_threads(value).map_err(|reason| CompileError::Config { key: key.into(), value: value.into(), reason })?;
        }
        self.config.set(key, value);
        Ok(())
    }

    /// Registers the kernel of custom op `name` (as `nnfw_register_custom_op_info` does). Only
    /// before [`Session::prepare`]; ops of that name then run on the `custom` backend.
    pub fn register_custom_op(&mut self, name: &str, eval: nnrt_custom_ops::EvalFn) -> Result<(), Error> {
        self.require_loaded("register_custom_op")?;
        self.custom_ops.register(name, eval);
        Ok(())
    }

    /// Loads the custom-op plugin at `path` (a shared library implementing
    /// `custom_ops/include/nnrt_plugin.h`) and registers every op it provides, replacing earlier
    /// kernels of the same names; returns their names. Only before [`Session::prepare`]. The
    /// library's code runs in this process: load only libraries you trust.
    pub fn load_custom_op_library(&mut self, path: impl AsRef<Path>) -> Result<Vec<String>, Error> {
        self.require_loaded("load_custom_op_library")?;
        Ok(self.custom_ops.load_library(path)?)
    }

    /// Loads the device driver at `path` (a shared library registering device ops through
    /// plugin ABI version 2, e.g. an Edge TPU driver for `edgetpu-custom-op`); returns the ops it
    /// drives. Only before [`Session::prepare`]. Its code runs in this process: load only
    /// libraries you trust. The session config key `DEVICE_LIB` does the same at prepare.
    pub fn load_device_library(&mut self, path: impl AsRef<Path>) -> Result<Vec<String>, Error> {
        self.require_loaded("load_device_library")?;
        Ok(crate::plugins::load_device_library(&mut self.custom_ops, path.as_ref())?)
    }

    /// The error for an Edge TPU op of the model that no driver runs, if there is one.
    fn missing_device_driver(&self) -> Option<Error> {
        let op = self.package.formats.iter().flat_map(|f| &f.edgetpu).next()?;
        if self.custom_ops.contains(nnrt_loaders::format::EDGETPU_CUSTOM_OP) {
            return None;
        }
        let package = op.options.packages.first()?;
        Some(Error::NoDeviceDriver {
            subgraph: op.subgraph,
            op: op.op,
            name: nnrt_loaders::format::EDGETPU_CUSTOM_OP.to_string(),
            device: "Edge TPU",
            chip: package.chip().unwrap_or("unknown").to_string(),
            min_runtime_version: package.min_runtime_version,
        })
    }

    /// Sets the backends in order of preference, e.g. `"cpu"` or `"gpu;cpu"`.
    pub fn set_backends(&mut self, list: &str) -> Result<(), Error> {
        self.set_config("BACKENDS", list)
    }

    /// Sets how many threads kernels may use (1 = the calling thread's pool of one), at most
    /// [`nnrt_core::MAX_THREADS`]; 0 or more is an error.
    pub fn set_threads(&mut self, n: usize) -> Result<(), Error> {
        self.set_config("NUM_THREADS", &n.to_string())
    }

    /// Number of graph inputs.
    pub fn input_count(&self) -> usize {
        self.graph().inputs.len()
    }

    /// Number of graph outputs.
    pub fn output_count(&self) -> usize {
        self.graph().outputs.len()
    }

    fn info(&self, what: &'static str, index: usize) -> Result<TensorInfo, Error> {
        let g = self.graph();
        let list = if what == "input" { &g.inputs } else { &g.outputs };
        let &id = list.get(index).ok_or(RunError::BadIndex { what, index, count: list.len() })?;
        let o = g.operand(id);
        let dims = match (&self.prepared, what) {
            (Some(p), _) => p.dims(id).to_vec(),
            (None, "input") => self.input_dims[index].clone(),
            (None, _) => o.default_dims.clone(),
        };
        let signature = o.shape.0.iter().map(|d| match d {
            nnrt_core::Dim::Known(n) => Some(*n),
            nnrt_core::Dim::Unknown => None,
        });
        Ok(TensorInfo { name: o.name.clone(), dtype: o.dtype, dims, signature: signature.collect(), quant: o.quant.clone() })
    }

    /// Name, type and shape of input `index`.
    pub fn input_info(&self, index: usize) -> Result<TensorInfo, Error> {
        self.info("input", index)
    }

    /// Name, type and shape of output `index` (shapes as of the last prepare or run).
    pub fn output_info(&self, index: usize) -> Result<TensorInfo, Error> {
        self.info("output", index)
    }

    /// Sets the concrete shape of input `index`; it must fit the declared shape (unknown dims are
    /// free). After prepare, the session is prepared again for the new shape and inputs must be
    /// set again.
    pub fn set_input_shape(&mut self, index: usize, dims: &[usize]) -> Result<(), Error> {
        let g = self.graph();
        let &id = g.inputs.get(index).ok_or(RunError::BadIndex { what: "input", index, count: g.inputs.len() })?;
        let o = g.operand(id);
        if !o.shape.admits(dims) {
            return Err(Error::Compile(CompileError::InputShape { index, name: o.name.clone(), got: fmt_dims(dims), expected: o.shape.to_string() }));
        }
        if self.input_dims[index] == dims {
            return Ok(());
        }
        let old_dims = self.input_dims.clone();
        self.input_dims[index] = dims.to_vec();
        if let Some(p) = self.prepared.take() {
            // Keep the plan for the old shapes: callers that alternate shapes get the prepared
            // kernels and arena back instead of re-packing weights, and memory stays bounded.
            self.shape_cache.push((old_dims, p));
            if self.shape_cache.len() > SHAPE_CACHE {
                self.shape_cache.remove(0);
            }
            if let Some(k) = self.shape_cache.iter().position(|(d, _)| *d == self.input_dims) {
                self.prepared = Some(self.shape_cache.remove(k).1);
                self.state = State::Prepared;
            } else {
                self.state = State::Loaded;
                self.prepare()?;
            }
        }
        Ok(())
    }

    /// Thread count from the configuration, else the machine's cores (at most
    /// [`nnrt_core::MAX_THREADS`]). A configured count that is not valid reads as the default
    /// here; [`Session::prepare`] refuses it.
    pub fn threads(&self) -> usize {
        let cores = || std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1).min(nnrt_core::MAX_THREADS);
        self.config.threads().ok().flatten().unwrap_or_else(cores)
    }

    /// Validates, partitions over the configured backends, compiles kernels (packing weights)
    /// and plans memory. Only from [`State::Loaded`].
    pub fn prepare(&mut self) -> Result<(), Error> {
        guarded("prepare", || self.prepare_unguarded())
    }

    fn prepare_unguarded(&mut self) -> Result<(), Error> {
        self.require_loaded("prepare")?;
        if let Err(reason) = self.config.threads() {
            let value = self.config.get("NUM_THREADS").unwrap_or_default().to_string();
            return Err(Error::Compile(CompileError::Config { key: "NUM_THREADS".into(), value, reason }));
        }
        let mut names = self.config.backends();
        if names.is_empty() {
            names = vec!["cpu".to_string()];
        }
        let mut backends: Vec<Box<dyn Backend>> = Vec::new();
        let mut skipped = Vec::new();
        for n in &names {
            match create_backend(n, &self.config) {
                Ok(b) => backends.push(b),
                Err(why) => {
                    log::warn!("backend '{n}' skipped: {why}");
                    skipped.push(format!("{n}: {why}"));
                }
            }
        }
        if backends.is_empty() {
            return Err(Error::Compile(CompileError::Config {
                key: "BACKENDS".into(),
                value: names.join(";"),
                reason: format!("none of these backends can be used ({})", skipped.join("; ")),
            }));
        }
        if !self.package_plugins_loaded {
            let needed = self.custom_ops();
            self.package_plugins_loaded =
                crate::plugins::load_package_plugins(&self.package, self.package_dir.as_deref(), &self.config, &mut self.custom_ops, &needed)?;
        }
        if !self.device_libs_loaded {
            let libs = self.config.get(nnrt_custom_ops::DEVICE_LIB).map(str::to_string).unwrap_or_default();
            for lib in libs.split(';').map(str::trim).filter(|l| !l.is_empty()) {
                let ops = crate::plugins::load_device_library(&mut self.custom_ops, Path::new(lib))?;
                log::info!("{}={lib}: device ops {}", nnrt_custom_ops::DEVICE_LIB, ops.join(", "));
            }
            self.device_libs_loaded = true;
        }
        if let Some(e) = self.missing_device_driver() {
            return Err(e);
        }
        if !self.custom_ops.is_empty() {
            backends.push(Box::new(nnrt_custom_ops::CustomOpBackend::new(self.custom_ops.clone())));
        }
        nnrt_core::validate_model(&self.model)?;
        let prepared = Prepared::with_cancel(&self.model, self.entry, &self.input_dims, backends, &self.config, self.threads(), self.cancel.clone())?;
        self.prepared = Some(prepared);
        self.state = State::Prepared;
        Ok(())
    }

    fn prepared_mut(&mut self, call: &'static str) -> Result<&mut Prepared, Error> {
        let state = self.state;
        self.prepared.as_mut().ok_or(Error::InvalidState { call, state, hint: "call prepare() first" })
    }

    /// Copies `bytes` into input `index`; the length must match the input's type and shape.
    pub fn set_input(&mut self, index: usize, bytes: &[u8]) -> Result<(), Error> {
        let info = self.input_info(index)?;
        let dst = self.prepared_mut("set_input")?.input_mut(index)?;
        if dst.len() != bytes.len() {
            return Err(Error::Run(RunError::BufferSize {
                what: "input",
                index,
                name: info.name,
                got: bytes.len(),
                expected: dst.len(),
                dtype: info.dtype.to_string(),
                shape: fmt_dims(&info.dims),
            }));
        }
        dst.copy_from_slice(bytes);
        Ok(())
    }

    /// A handle that cancels this session's runs from any thread ([`nnrt_core::CancelToken::cancel`]):
    /// the run in progress, or else the next one, stops with `RunError::Cancelled`, and the session
    /// stays usable. Valid for the session's whole life, across prepares.
    pub fn cancel_handle(&self) -> nnrt_core::CancelToken {
        self.cancel.clone()
    }

    /// Runs the model on the inputs set. Repeatable.
    pub fn run(&mut self) -> Result<(), Error> {
        guarded("run", || self.prepared_mut("run")?.run().map_err(Error::from))?;
        self.state = State::FinishedRun;
        Ok(())
    }

    /// The bytes of output `index` after a run.
    pub fn output(&self, index: usize) -> Result<&[u8], Error> {
        if self.state != State::FinishedRun {
            return Err(Error::InvalidState { call: "output", state: self.state, hint: "call run() first" });
        }
        let p = self.prepared.as_ref().ok_or(Error::InvalidState { call: "output", state: self.state, hint: "call run() first" })?;
        Ok(p.output(index)?)
    }

    /// Copies output `index` into `dst`, whose length must match.
    pub fn read_output(&self, index: usize, dst: &mut [u8]) -> Result<(), Error> {
        let src = self.output(index)?;
        if src.len() != dst.len() {
            let info = self.output_info(index)?;
            return Err(Error::Run(RunError::BufferSize {
                what: "output",
                index,
                name: info.name,
                got: dst.len(),
                expected: src.len(),
                dtype: info.dtype.to_string(),
                shape: fmt_dims(&info.dims),
            }));
        }
        dst.copy_from_slice(src);
        Ok(())
    }

    /// The prepared plan of the subgraph that runs (constants folded, activations fused, each
    /// op assigned to a backend, partitions in order), after prepare; `None` before. For tools
    /// that show the plan (`nnrt-inspect --dot`).
    pub fn prepared(&self) -> Option<&Prepared> {
        self.prepared.as_ref()
    }

    /// The subgraph that runs: the model's entry, or the one a signature selected.
    pub fn entry(&self) -> SubgraphId {
        self.entry
    }

    /// Where each op runs, after prepare (ops folded at prepare are not listed).
    pub fn placements(&self) -> Result<Vec<OpPlacement>, Error> {
        let state = self.state;
        let p = self.prepared.as_ref().ok_or(Error::InvalidState { call: "placements", state, hint: "call prepare() first" })?;
        Ok(p.assignments()
            .zip(p.origin())
            .zip(&p.graph().ops)
            .map(|(((backend, why), origin), op)| OpPlacement {
                index: origin.index(),
                kind: op.kind.name().to_string(),
                backend: backend.to_string(),
                fallback_reason: why.map(String::from),
            })
            .collect())
    }

    /// Switches per-op timing on (clearing earlier measurements) or off. Only after prepare.
    pub fn set_profiling(&mut self, on: bool) -> Result<(), Error> {
        self.prepared_mut("set_profiling")?.set_profiling(on);
        Ok(())
    }

    /// Time spent per op since profiling was switched on: (op index in the model, kind, backend,
    /// time). Empty before prepare.
    pub fn op_times(&self) -> Vec<(usize, String, String, std::time::Duration)> {
        self.prepared.as_ref().map_or_else(Vec::new, |p| p.op_times().into_iter().map(|(op, k, b, t)| (op.index(), k, b, t)).collect())
    }

    /// Arena bytes of the prepared plan.
    pub fn arena_size(&self) -> Option<usize> {
        self.prepared.as_ref().map(|p| p.arena_size())
    }

    /// Names of custom ops the model uses.
    pub fn custom_ops(&self) -> Vec<String> {
        self.model
            .subgraphs
            .iter()
            .flat_map(|g| g.ops.iter())
            .filter_map(|op| match &op.kind {
                OpKind::Custom { name, .. } => Some(name.clone()),
                _ => None,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_caught_panic_keeps_its_message() {
        let p = super::catch_quietly(|| panic!("boom {}", 7)).expect_err("it panicked");
        assert_eq!(super::panic_message(p.as_ref()), "boom 7");
        let p = super::catch_quietly(|| std::panic::panic_any(3u8)).expect_err("it panicked");
        assert_eq!(super::panic_message(p.as_ref()), "a panic without a message");
    }
}
