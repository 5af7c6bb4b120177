//! The wgpu device: adapter choice, limits, captured errors and the pipeline cache.
//!
//! One device per adapter choice is opened per process and shared by every session (opening a
//! device costs tens of milliseconds, and pipelines compiled for it are reused across sessions).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

/// An opened adapter and device with everything kernels need from it.
pub struct Gpu {
    pub(crate) device: wgpu::Device,
    pub(crate) queue: wgpu::Queue,
    pub(crate) info: wgpu::AdapterInfo,
    pub(crate) limits: wgpu::Limits,
    /// Whether WGSL `f16` can be used (the adapter has `SHADER_F16`).
    pub(crate) f16: bool,
    /// wgpu reports validation errors through a callback; they are kept here and turned into
    /// typed errors by whoever checks next (never a panic).
    errors: Arc<Mutex<Vec<String>>>,
    pipelines: Mutex<HashMap<PipelineKey, Arc<wgpu::ComputePipeline>>>,
}

/// What a pipeline is compiled from: a shader family and its override constants.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct PipelineKey {
    pub shader: &'static str,
    pub constants: Vec<(&'static str, u32)>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

type Opened = Result<Arc<Gpu>, String>;

/// The device for `adapter` (a case-insensitive substring of the adapter's name; `None` picks the
/// first high-performance adapter), opened once per process. The error says what was found.
pub fn open(adapter: Option<&str>) -> Opened {
    static OPENED: OnceLock<Mutex<HashMap<String, Opened>>> = OnceLock::new();
    let key = adapter.unwrap_or("").trim().to_lowercase();
    let mut all = lock(OPENED.get_or_init(Default::default));
    if let Some(r) = all.get(&key) {
        return r.clone();
    }
    let r = Gpu::new(&key).map(Arc::new);
    all.insert(key, r.clone());
    r
}

impl Gpu {
    fn new(want: &str) -> Result<Gpu, String> {
        let instance = wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle_from_env());
        let adapter = if want.is_empty() {
            let opts = wgpu::RequestAdapterOptions { power_preference: wgpu::PowerPreference::HighPerformance, ..Default::default() };
            pollster::block_on(instance.request_adapter(&opts)).map_err(|e| format!("no GPU adapter found ({e})"))?
        } else {
            let adapters = pollster::block_on(instance.enumerate_adapters(wgpu::Backends::all()));
            let names: Vec<String> = adapters.iter().map(|a| a.get_info().name).collect();
            adapters
                .into_iter()
                .find(|a| a.get_info().name.to_lowercase().contains(want))
                .ok_or_else(|| format!("no GPU adapter name contains '{want}' (GPU_ADAPTER); found: [{}]", names.join(", ")))?
        };
        let info = adapter.get_info();
        let limits = adapter.limits();
        let f16 = adapter.features().contains(wgpu::Features::SHADER_F16);
        let features = if f16 { wgpu::Features::SHADER_F16 } else { wgpu::Features::empty() };
        let desc = wgpu::DeviceDescriptor {
            label: Some("nnrt"),
            required_features: features,
            required_limits: limits.clone(),
            ..Default::default()
        };
        let (device, queue) = pollster::block_on(adapter.request_device(&desc)).map_err(|e| format!("cannot open a device on GPU adapter '{}': {e}", info.name))?;
        let errors = Arc::new(Mutex::new(Vec::new()));
        let sink = errors.clone();
        device.on_uncaptured_error(Arc::new(move |e: wgpu::Error| lock(&sink).push(e.to_string())));
        log::info!("gpu: adapter '{}' ({:?}, {:?}), f16 {}", info.name, info.backend, info.device_type, f16);
        Ok(Gpu { device, queue, info, limits, f16, errors, pipelines: Mutex::new(HashMap::new()) })
    }

    /// Whether the adapter can compute with `f16` in shaders.
    pub fn has_f16(&self) -> bool {
        self.f16
    }

    /// The adapter's name.
    pub fn adapter_name(&self) -> &str {
        &self.info.name
    }

    /// Errors wgpu reported since the last call, joined; `Ok` when there were none.
    pub(crate) fn take_errors(&self) -> Result<(), String> {
        let mut e = lock(&self.errors);
        if e.is_empty() {
            return Ok(());
        }
        let msg = e.join("; ");
        e.clear();
        Err(msg)
    }

    /// The pipeline for `key`, compiled on first use.
    pub(crate) fn pipeline(&self, key: &PipelineKey) -> Result<Arc<wgpu::ComputePipeline>, String> {
        if let Some(p) = lock(&self.pipelines).get(key) {
            return Ok(p.clone());
        }
        let source = crate::shaders::source(key.shader).ok_or_else(|| format!("no shader named {}", key.shader))?;
        let module = self.device.create_shader_module(wgpu::ShaderModuleDescriptor { label: Some(key.shader), source: wgpu::ShaderSource::Wgsl(source.into()) });
        let constants: Vec<(&str, f64)> = key.constants.iter().map(|&(k, v)| (k, f64::from(v))).collect();
        let pipeline = self.device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some(key.shader),
            layout: None,
            module: &module,
            entry_point: Some("main"),
            compilation_options: wgpu::PipelineCompilationOptions { constants: &constants, ..Default::default() },
            cache: None,
        });
        self.take_errors().map_err(|e| format!("shader {} {:?} does not compile on '{}': {e}", key.shader, key.constants, self.info.name))?;
        let p = Arc::new(pipeline);
        lock(&self.pipelines).insert(key.clone(), p.clone());
        Ok(p)
    }

    /// Number of pipelines compiled so far (for tests of the cache).
    pub fn pipeline_count(&self) -> usize {
        lock(&self.pipelines).len()
    }
}
