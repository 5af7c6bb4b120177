//! The session behind `nnfw_session *`: onert's state machine (INITIALIZED, MODEL_LOADED,
//! PREPARED, RUNNING, FINISHED_RUN) over an [`nnrt::Session`], the caller's I/O buffers and forms,
//! the asynchronous run's thread, and the last error message.
//!
//! Everything mutable sits behind mutexes, so the C side only ever holds a shared reference: two
//! threads misusing one session get serialized calls, not undefined behaviour. A run started by
//! `nnfw_run_async` holds the session's lock until it finishes; calls made meanwhile that must
//! refuse (INVALID_STATE while RUNNING) wait for it, then refuse.

use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;

use nnrt::EvalFn;

use crate::abi::*;
use crate::error::{ApiError, Context};
use crate::ffi::{InBuf, OutBuf};
use crate::io::{self, IoForm};

/// onert's session states.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Phase {
    /// Created, no model yet.
    #[default]
    Initialized,
    /// A model is loaded; configuration may change.
    ModelLoaded,
    /// Prepared; buffers may be set and the model run.
    Prepared,
    /// An `nnfw_run_async` has not been awaited yet.
    Running,
    /// At least one run finished.
    FinishedRun,
}

impl Phase {
    /// onert's name of the state.
    pub fn name(self) -> &'static str {
        match self {
            Phase::Initialized => "INITIALIZED",
            Phase::ModelLoaded => "MODEL_LOADED",
            Phase::Prepared => "PREPARED",
            Phase::Running => "RUNNING",
            Phase::FinishedRun => "FINISHED_RUN",
        }
    }
}

/// The states after nnfw_prepare in which buffers may be set and runs started.
pub const RUNNABLE: &[Phase] = &[Phase::Prepared, Phase::FinishedRun];
/// Every state with a model.
pub const LOADED: &[Phase] = &[Phase::ModelLoaded, Phase::Prepared, Phase::Running, Phase::FinishedRun];

/// Configuration keys `nnfw_set_config` accepts besides `OP_BACKEND_<Op>`.
const CONFIG_KEYS: &[&str] =
    &["BACKENDS", "NUM_THREADS", "MEMORY_LIMIT", "WHILE_MAX_ITERATIONS", "EXECUTOR", "OP_BACKEND_ALLOPS", "OP_BACKEND_MAP", "GRAPH_DOT_DUMP", "USE_SCHEDULER", "PROFILING_MODE", "ENABLE_LOG", "GPU_ADAPTER", "GPU_PRECISION"];

/// A model and what the caller set about its inputs and outputs.
struct Loaded {
    session: nnrt::Session,
    in_forms: Vec<IoForm>,
    out_forms: Vec<IoForm>,
    in_bufs: Vec<Option<InBuf>>,
    out_bufs: Vec<Option<OutBuf>>,
    /// Inputs whose shape the caller set (before prepare, the others report the model's signature).
    shape_set: Vec<bool>,
}

#[derive(Default)]
struct Inner {
    phase: Phase,
    /// The state to return to if the asynchronous run fails.
    phase_before_async: Phase,
    model: Option<Loaded>,
    workspace: Option<String>,
    custom_ops: Vec<(String, EvalFn)>,
    worker: Option<JoinHandle<Result<(), ApiError>>>,
}

/// One `nnfw_session`.
#[derive(Default)]
pub struct CSession {
    inner: Arc<Mutex<Inner>>,
    last_error: Mutex<String>,
    /// The loaded model's cancel handle, outside `inner` so another thread can use it while a
    /// run holds the session's lock.
    cancel: Mutex<Option<nnrt::CancelToken>>,
}

/// Locks, recovering from a poisoned lock: a panic is caught at the boundary and reported, and the
/// session's data stays memory-safe, so later calls may go on.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn check_index(call: &str, what: &str, index: u32, count: usize) -> Result<usize, ApiError> {
    let i = index as usize;
    if i >= count {
        return Err(ApiError::error(format!("{call}: {what} index {index} is out of range (the model has {count} {what}s)")));
    }
    Ok(i)
}

/// Fails `call` when a user buffer of `len` bytes is too small for its `what` (input or output)
/// `index`, described by `info` and exchanged in `form`.
fn check_buffer_len(call: &str, what: &str, index: u32, info: &nnrt::TensorInfo, form: IoForm, len: usize) -> Result<(), ApiError> {
    let need = io::user_size(info, form);
    if len < need {
        return Err(ApiError::error(format!(
            "{call}: {what} {index} ('{}') needs {need} bytes ({} {:?}) but the buffer has {len}",
            info.name,
            type_name(io::user_type(info, form).unwrap_or(-1)),
            info.dims
        )));
    }
    Ok(())
}

impl Inner {
    fn require(&self, call: &str, allowed: &[Phase], hint: &str) -> Result<(), ApiError> {
        if allowed.contains(&self.phase) {
            return Ok(());
        }
        Err(ApiError::state(call, self.phase, hint))
    }

    fn loaded(&mut self, call: &str) -> Result<&mut Loaded, ApiError> {
        let phase = self.phase;
        self.model.as_mut().ok_or_else(|| ApiError::state(call, phase, "load a model first"))
    }
}

impl CSession {
    /// Records `e` as the last error and returns its status.
    pub fn fail(&self, e: ApiError) -> NNFW_STATUS {
        *lock(&self.last_error) = e.message;
        e.status
    }

    /// The last error message ("" if no call failed yet).
    pub fn last_error(&self) -> String {
        lock(&self.last_error).clone()
    }

    /// Fails with INVALID_STATE unless the session is in one of `allowed` (used by the entry
    /// points to check the state before their pointer arguments, in onert's order).
    pub fn require(&self, call: &str, allowed: &[Phase], hint: &str) -> Result<(), ApiError> {
        lock(&self.inner).require(call, allowed, hint)
    }

    /// `nnfw_load_model_from_file`.
    pub fn load(&self, path: &str) -> Result<(), ApiError> {
        const CALL: &str = "nnfw_load_model_from_file";
        let mut g = lock(&self.inner);
        g.require(CALL, &[Phase::Initialized], "a session holds one model; create another session")?;
        let session = nnrt::Session::load(path).during(CALL)?;
        *lock(&self.cancel) = Some(session.cancel_handle());
        let (n_in, n_out) = (session.input_count(), session.output_count());
        g.model = Some(Loaded {
            session,
            in_forms: vec![IoForm::default(); n_in],
            out_forms: vec![IoForm::default(); n_out],
            in_bufs: (0..n_in).map(|_| None).collect(),
            out_bufs: (0..n_out).map(|_| None).collect(),
            shape_set: vec![false; n_in],
        });
        g.phase = Phase::ModelLoaded;
        Ok(())
    }

    /// `nnfw_prepare`.
    pub fn prepare(&self) -> Result<(), ApiError> {
        const CALL: &str = "nnfw_prepare";
        let mut g = lock(&self.inner);
        g.require(CALL, &[Phase::ModelLoaded], "prepare runs once, after nnfw_load_model_from_file")?;
        let ops = g.custom_ops.clone();
        let m = g.loaded(CALL)?;
        for (name, eval) in ops {
            m.session.register_custom_op(&name, eval).during(CALL)?;
        }
        m.session.prepare().during(CALL)?;
        g.phase = Phase::Prepared;
        Ok(())
    }

    /// `nnfw_run`.
    pub fn run(&self) -> Result<(), ApiError> {
        const CALL: &str = "nnfw_run";
        let mut g = lock(&self.inner);
        g.require(CALL, RUNNABLE, "call nnfw_prepare first (and nnfw_await after nnfw_run_async)")?;
        g.loaded(CALL)?.execute(CALL)?;
        g.phase = Phase::FinishedRun;
        Ok(())
    }

    /// `nnfw_run_async`: the run happens on a new thread that holds the session's lock.
    pub fn run_async(&self) -> Result<(), ApiError> {
        const CALL: &str = "nnfw_run_async";
        let mut g = lock(&self.inner);
        g.require(CALL, RUNNABLE, "call nnfw_prepare first; one asynchronous run at a time, then nnfw_await")?;
        let inner = Arc::clone(&self.inner);
        let worker = std::thread::Builder::new()
            .name("nnfw-run-async".into())
            .spawn(move || {
                let mut g = lock(&inner);
                let m = g.loaded(CALL)?;
                nnrt::catch_quietly(|| m.execute(CALL))
                    .unwrap_or_else(|p| Err(ApiError::error(format!("{CALL}: internal error: {}", crate::panic_message(p.as_ref())))))
            })
            .map_err(|e| ApiError::error(format!("{CALL}: cannot start a thread: {e}")))?;
        g.worker = Some(worker);
        g.phase_before_async = g.phase;
        g.phase = Phase::Running;
        Ok(())
    }

    /// `nnfw_cancel`: stops the run in progress on another thread (it returns ERROR, "run
    /// cancelled"), or else the session's next run. Never waits for the session's lock.
    pub fn cancel(&self) -> Result<(), ApiError> {
        match lock(&self.cancel).as_ref() {
            Some(t) => {
                t.cancel();
                Ok(())
            }
            None => Err(ApiError::state("nnfw_cancel", lock(&self.inner).phase, "load a model first")),
        }
    }

    /// `nnfw_await`: ERROR (not INVALID_STATE, as onert) when no asynchronous run is in flight.
    pub fn await_run(&self) -> Result<(), ApiError> {
        const CALL: &str = "nnfw_await";
        let worker = {
            let mut g = lock(&self.inner);
            if g.phase != Phase::Running {
                return Err(ApiError::error(format!("{CALL}: no nnfw_run_async to wait for (state {})", g.phase.name())));
            }
            g.worker.take()
        };
        let result = match worker.map(JoinHandle::join) {
            Some(Ok(r)) => r,
            Some(Err(p)) => Err(ApiError::error(format!("{CALL}: the run's thread panicked: {}", crate::panic_message(p.as_ref())))),
            None => Err(ApiError::error(format!("{CALL}: the run's thread is missing"))),
        };
        let mut g = lock(&self.inner);
        g.phase = if result.is_ok() { Phase::FinishedRun } else { g.phase_before_async };
        result
    }

    /// `nnfw_set_input`: `buf` None unsets the input (NULL buffer, length 0).
    pub fn set_input(&self, index: u32, buf: Option<InBuf>) -> Result<(), ApiError> {
        const CALL: &str = "nnfw_set_input";
        let mut g = lock(&self.inner);
        g.require(CALL, RUNNABLE, "set buffers after nnfw_prepare (and not while an asynchronous run is in flight)")?;
        let m = g.loaded(CALL)?;
        let i = check_index(CALL, "input", index, m.in_bufs.len())?;
        if let Some(b) = &buf {
            check_buffer_len(CALL, "input", index, &m.session.input_info(i).during(CALL)?, m.in_forms[i], b.len())?;
        }
        m.in_bufs[i] = buf;
        Ok(())
    }

    /// `nnfw_set_output`: as [`CSession::set_input`].
    pub fn set_output(&self, index: u32, buf: Option<OutBuf>) -> Result<(), ApiError> {
        const CALL: &str = "nnfw_set_output";
        let mut g = lock(&self.inner);
        g.require(CALL, RUNNABLE, "set buffers after nnfw_prepare (and not while an asynchronous run is in flight)")?;
        let m = g.loaded(CALL)?;
        let i = check_index(CALL, "output", index, m.out_bufs.len())?;
        if let Some(b) = &buf {
            check_buffer_len(CALL, "output", index, &m.session.output_info(i).during(CALL)?, m.out_forms[i], b.len())?;
        }
        m.out_bufs[i] = buf;
        Ok(())
    }

    /// `nnfw_input_size` / `nnfw_output_size`.
    pub fn io_count(&self, call: &str, input: bool) -> Result<u32, ApiError> {
        let mut g = lock(&self.inner);
        g.require(call, LOADED, "load a model first")?;
        let m = g.loaded(call)?;
        let n = if input { m.session.input_count() } else { m.session.output_count() };
        Ok(n as u32)
    }

    /// `nnfw_set_input_layout` / `nnfw_set_output_layout`.
    pub fn set_layout(&self, call: &str, input: bool, index: u32, layout: NNFW_LAYOUT) -> Result<(), ApiError> {
        let mut g = lock(&self.inner);
        g.require(call, &[Phase::ModelLoaded], "set layouts after loading and before nnfw_prepare")?;
        let channels_first = match layout {
            NNFW_LAYOUT_NONE | NNFW_LAYOUT_CHANNELS_LAST => false,
            NNFW_LAYOUT_CHANNELS_FIRST => true,
            other => return Err(ApiError::error(format!("{call}: {other} is not an NNFW_LAYOUT"))),
        };
        let m = g.loaded(call)?;
        let forms = if input { &mut m.in_forms } else { &mut m.out_forms };
        let i = check_index(call, if input { "input" } else { "output" }, index, forms.len())?;
        forms[i].channels_first = channels_first;
        Ok(())
    }

    /// `nnfw_set_input_type` / `nnfw_set_output_type`.
    pub fn set_type(&self, call: &str, input: bool, index: u32, ty: NNFW_TYPE) -> Result<(), ApiError> {
        let mut g = lock(&self.inner);
        g.require(call, &[Phase::ModelLoaded], "set types after loading and before nnfw_prepare")?;
        let m = g.loaded(call)?;
        let what = if input { "input" } else { "output" };
        let i = check_index(call, what, index, if input { m.in_forms.len() } else { m.out_forms.len() })?;
        let info = if input { m.session.input_info(i) } else { m.session.output_info(i) }.during(call)?;
        let own = io::nnfw_type(info.dtype, &info.quant).map_err(|e| ApiError::error(format!("{call}: {e}")))?;
        let float = if ty == own {
            false
        } else if ty == NNFW_TYPE_TENSOR_FLOAT32 {
            io::float_io_allowed(&info).map_err(|e| ApiError::error(format!("{call}: {e}")))?
        } else {
            return Err(ApiError::error(format!(
                "{call}: {what} {index} ('{}') is {}; its buffer can be {} or float32 (for quantized tensors), not {}",
                info.name,
                type_name(own),
                type_name(own),
                type_name(ty)
            )));
        };
        let forms = if input { &mut m.in_forms } else { &mut m.out_forms };
        forms[i].float = float;
        Ok(())
    }

    /// `nnfw_set_input_tensorinfo` (dims already checked positive, rank within NNFW_MAX_RANK).
    pub fn set_input_shape(&self, index: u32, dims: &[usize]) -> Result<(), ApiError> {
        const CALL: &str = "nnfw_set_input_tensorinfo";
        let mut g = lock(&self.inner);
        g.require(CALL, &[Phase::ModelLoaded, Phase::Prepared, Phase::FinishedRun], "load a model first; not while an asynchronous run is in flight")?;
        let m = g.loaded(CALL)?;
        let i = check_index(CALL, "input", index, m.shape_set.len())?;
        m.session.set_input_shape(i, dims).during(CALL)?;
        m.shape_set[i] = true;
        Ok(())
    }

    /// `nnfw_input_tensorinfo` / `nnfw_output_tensorinfo`.
    pub fn tensorinfo(&self, call: &str, input: bool, index: u32) -> Result<nnfw_tensorinfo, ApiError> {
        let mut g = lock(&self.inner);
        g.require(call, LOADED, "load a model first")?;
        let prepared = g.phase != Phase::ModelLoaded;
        let m = g.loaded(call)?;
        let what = if input { "input" } else { "output" };
        let i = check_index(call, what, index, if input { m.in_forms.len() } else { m.out_forms.len() })?;
        let info = if input { m.session.input_info(i) } else { m.session.output_info(i) }.during(call)?;
        let form = if input { m.in_forms[i] } else { m.out_forms[i] };
        let err = |e: String| ApiError::error(format!("{call}: {what} {index} ('{}'): {e}", info.name));
        // Before prepare: the model's declared type, and its shape signature unless the caller
        // set the input's shape (-1 for dims unknown until run time). After: what runs.
        let (dtype, dims): (NNFW_TYPE, Vec<i64>) = if prepared {
            (io::user_type(&info, form).map_err(err)?, info.dims.iter().map(|&d| d as i64).collect())
        } else if input && m.shape_set[i] {
            (io::nnfw_type(info.dtype, &info.quant).map_err(err)?, info.dims.iter().map(|&d| d as i64).collect())
        } else {
            (io::nnfw_type(info.dtype, &info.quant).map_err(err)?, info.signature.iter().map(|d| d.map_or(-1, |n| n as i64)).collect())
        };
        if dims.len() > NNFW_MAX_RANK {
            return Err(err(format!("rank {} is above NNFW_MAX_RANK ({NNFW_MAX_RANK})", dims.len())));
        }
        let mut t = nnfw_tensorinfo { dtype, rank: dims.len() as i32, dims: [0; NNFW_MAX_RANK] };
        for (d, &n) in t.dims.iter_mut().zip(&dims) {
            *d = i32::try_from(n).map_err(|_| err(format!("dimension {n} does not fit an int32_t")))?;
        }
        Ok(t)
    }

    /// `nnfw_input_tensorindex` / `nnfw_output_tensorindex`.
    pub fn tensorindex(&self, call: &str, input: bool, name: &str) -> Result<u32, ApiError> {
        let mut g = lock(&self.inner);
        g.require(call, LOADED, "load a model first")?;
        let m = g.loaded(call)?;
        let n = if input { m.session.input_count() } else { m.session.output_count() };
        for i in 0..n {
            let info = if input { m.session.input_info(i) } else { m.session.output_info(i) }.during(call)?;
            if info.name == name {
                return Ok(i as u32);
            }
        }
        Err(ApiError::error(format!("{call}: the model has no {} named '{name}'", if input { "input" } else { "output" })))
    }

    /// `nnfw_signature_count`: the model's named entry points (TFLite SignatureDefs, ExecuTorch
    /// methods).
    pub fn signature_count(&self, call: &str) -> Result<u32, ApiError> {
        let mut g = lock(&self.inner);
        g.require(call, LOADED, "load a model first")?;
        Ok(g.loaded(call)?.session.signatures().len() as u32)
    }

    /// `nnfw_signature_name`: the key of entry point `index`.
    pub fn signature_name(&self, call: &str, index: u32) -> Result<String, ApiError> {
        let mut g = lock(&self.inner);
        g.require(call, LOADED, "load a model first")?;
        let names = g.loaded(call)?.session.signatures();
        let i = check_index(call, "signature", index, names.len())?;
        Ok(names[i].clone())
    }

    /// `nnfw_select_signature`: runs entry point `name` instead of the first subgraph; its
    /// inputs and outputs become the session's. After loading, before prepare.
    pub fn select_signature(&self, name: &str) -> Result<(), ApiError> {
        const CALL: &str = "nnfw_select_signature";
        let mut g = lock(&self.inner);
        g.require(CALL, &[Phase::ModelLoaded], "select a signature after loading and before nnfw_prepare")?;
        let m = g.loaded(CALL)?;
        m.session.select_signature(name).during(CALL)?;
        let (n_in, n_out) = (m.session.input_count(), m.session.output_count());
        m.in_forms = vec![IoForm::default(); n_in];
        m.out_forms = vec![IoForm::default(); n_out];
        m.in_bufs = (0..n_in).map(|_| None).collect();
        m.out_bufs = (0..n_out).map(|_| None).collect();
        m.shape_set = vec![false; n_in];
        Ok(())
    }

    /// `nnfw_set_available_backends`.
    pub fn set_backends(&self, list: &str) -> Result<(), ApiError> {
        self.set_config_checked("nnfw_set_available_backends", "BACKENDS", list)
    }

    /// `nnfw_set_config`.
    pub fn set_config(&self, key: &str, value: &str) -> Result<(), ApiError> {
        const CALL: &str = "nnfw_set_config";
        self.require(CALL, &[Phase::ModelLoaded], "configure after loading and before nnfw_prepare")?;
        if !CONFIG_KEYS.contains(&key) && !key.starts_with("OP_BACKEND_") {
            return Err(ApiError::error(format!("{CALL}: unknown key '{key}' (known: {}, OP_BACKEND_<OpName>)", CONFIG_KEYS.join(", "))));
        }
        self.set_config_checked(CALL, key, value)
    }

    fn set_config_checked(&self, call: &str, key: &str, value: &str) -> Result<(), ApiError> {
        let mut g = lock(&self.inner);
        g.require(call, &[Phase::ModelLoaded], "configure after loading and before nnfw_prepare")?;
        g.loaded(call)?.session.set_config(key, value).during(call)
    }

    /// `nnfw_set_backends_per_operation`: `"0=cpu;1=cpu"`, optionally written
    /// `OP_BACKEND_MAP="0=cpu;1=cpu"` as onert's header shows.
    pub fn set_backends_per_operation(&self, settings: &str) -> Result<(), ApiError> {
        let v = settings.trim();
        let v = v.strip_prefix("OP_BACKEND_MAP=").unwrap_or(v).trim_matches('"');
        self.set_config_checked("nnfw_set_backends_per_operation", "OP_BACKEND_MAP", v)
    }

    /// `nnfw_get_config`: `None` where onert returns NO_ERROR without writing (BACKENDS unset).
    pub fn get_config(&self, key: &str) -> Result<Option<String>, ApiError> {
        const CALL: &str = "nnfw_get_config";
        let mut g = lock(&self.inner);
        g.require(CALL, &[Phase::ModelLoaded], "read configuration after loading and before nnfw_prepare")?;
        let config = g.loaded(CALL)?.session.config();
        match key {
            "BACKENDS" => Ok(config.get(key).map(String::from)),
            "EXECUTOR" => Ok(Some(config.get(key).unwrap_or("Linear").to_string())),
            _ => match config.get(key) {
                Some(v) if CONFIG_KEYS.contains(&key) || key.starts_with("OP_BACKEND_") => Ok(Some(v.to_string())),
                _ => Err(ApiError::error(format!("{CALL}: key '{key}' is unknown or not set"))),
            },
        }
    }

    /// `nnfw_register_custom_op_info`: kept and handed to the Rust API at nnfw_prepare.
    pub fn register_custom_op(&self, name: &str, eval: EvalFn) {
        lock(&self.inner).custom_ops.push((name.to_string(), eval));
    }

    /// `nnfw_set_workspace`.
    pub fn set_workspace(&self, dir: &str) -> Result<(), ApiError> {
        const CALL: &str = "nnfw_set_workspace";
        let mut g = lock(&self.inner);
        g.require(CALL, &[Phase::Initialized], "set the workspace before nnfw_load_model_from_file")?;
        g.workspace = Some(dir.to_string());
        Ok(())
    }
}

impl Drop for CSession {
    /// Waits for a run in flight: it writes into the caller's buffers.
    fn drop(&mut self) {
        // Taken in its own statement: the lock must be released before joining the thread
        // that needs it.
        let worker = lock(&self.inner).worker.take();
        if let Some(w) = worker {
            let _ = w.join();
        }
    }
}

impl Loaded {
    /// Copies the caller's inputs in (converted), runs, copies the outputs out (converted).
    fn execute(&mut self, call: &str) -> Result<(), ApiError> {
        for i in 0..self.in_bufs.len() {
            let info = self.session.input_info(i).during(call)?;
            let form = self.in_forms[i];
            let need = io::user_size(&info, form);
            let user: &[u8] = match &self.in_bufs[i] {
                Some(b) if b.len() >= need => &b.bytes()[..need],
                Some(b) => {
                    return Err(ApiError::error(format!(
                        "{call}: input {i} ('{}') now needs {need} bytes for dims {:?} but its buffer has {}; set a larger one with nnfw_set_input",
                        info.name,
                        info.dims,
                        b.len()
                    )))
                }
                None if need == 0 => &[],
                None => return Err(ApiError::error(format!("{call}: input {i} ('{}') has no buffer; call nnfw_set_input after nnfw_prepare", info.name))),
            };
            let bytes = io::to_model(&info, form, user).map_err(|e| ApiError::error(format!("{call}: input {i}: {e}")))?;
            self.session.set_input(i, &bytes).during(call)?;
        }
        self.session.run().during(call)?;
        for i in 0..self.out_bufs.len() {
            let Some(buf) = &self.out_bufs[i] else { continue };
            let info = self.session.output_info(i).during(call)?;
            let form = self.out_forms[i];
            let need = io::user_size(&info, form);
            if buf.len() < need {
                return Err(ApiError::insufficient(format!(
                    "{call}: output {i} ('{}') needs {need} bytes for dims {:?} but its buffer has {}",
                    info.name,
                    info.dims,
                    buf.len()
                )));
            }
            let src = self.session.output(i).during(call)?;
            let bytes = io::to_user(&info, form, src).map_err(|e| ApiError::error(format!("{call}: output {i}: {e}")))?;
            buf.write(&bytes);
        }
        Ok(())
    }
}

/// The C name of an `NNFW_TYPE` value.
pub fn type_name(t: NNFW_TYPE) -> &'static str {
    match t {
        NNFW_TYPE_TENSOR_FLOAT32 => "NNFW_TYPE_TENSOR_FLOAT32",
        NNFW_TYPE_TENSOR_INT32 => "NNFW_TYPE_TENSOR_INT32",
        NNFW_TYPE_TENSOR_QUANT8_ASYMM => "NNFW_TYPE_TENSOR_QUANT8_ASYMM",
        NNFW_TYPE_TENSOR_BOOL => "NNFW_TYPE_TENSOR_BOOL",
        NNFW_TYPE_TENSOR_UINT8 => "NNFW_TYPE_TENSOR_UINT8",
        NNFW_TYPE_TENSOR_INT64 => "NNFW_TYPE_TENSOR_INT64",
        NNFW_TYPE_TENSOR_QUANT8_ASYMM_SIGNED => "NNFW_TYPE_TENSOR_QUANT8_ASYMM_SIGNED",
        NNFW_TYPE_TENSOR_QUANT16_SYMM_SIGNED => "NNFW_TYPE_TENSOR_QUANT16_SYMM_SIGNED",
        _ => "an unknown NNFW_TYPE",
    }
}
