//! The backends this build of nnrt was compiled with (cargo features `cpu` and `gpu`, both on by
//! default), and creating one by id.

use nnrt_core::{Backend, Config};

/// Every backend id nnrt knows, whether or not this build has it.
pub const KNOWN_BACKENDS: &[&str] = &["cpu", "gpu"];

/// The backends this build of nnrt can create, by id (its enabled cargo features).
pub fn available_backends() -> &'static [&'static str] {
    &[
        #[cfg(feature = "cpu")]
        "cpu",
        #[cfg(feature = "gpu")]
        "gpu",
    ]
}

/// The backends of this build as one phrase: `cpu, gpu`, or `no backends`.
pub fn built_with() -> String {
    match available_backends() {
        [] => "no backends".into(),
        list => list.join(", "),
    }
}

/// Creates backend `id`; the error says why it cannot be used here (unknown id, not compiled
/// into this build, no GPU adapter).
pub(crate) fn create_backend(id: &str, config: &Config) -> Result<Box<dyn Backend>, String> {
    let _ = config; // only the gpu backend reads the configuration
    match id {
        #[cfg(feature = "cpu")]
        "cpu" => Ok(Box::new(nnrt_backend_cpu::CpuBackend::new())),
        #[cfg(feature = "gpu")]
        "gpu" => Ok(Box::new(nnrt_backend_gpu::GpuBackend::new(config.get("GPU_ADAPTER"))?)),
        known if KNOWN_BACKENDS.contains(&known) => Err(format!("backend '{id}' is not in this build (built with: {})", built_with())),
        _ => Err(format!("no backend is named '{id}' (known: {})", KNOWN_BACKENDS.join(", "))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_build_lists_its_features() {
        assert_eq!(available_backends().contains(&"cpu"), cfg!(feature = "cpu"));
        assert_eq!(available_backends().contains(&"gpu"), cfg!(feature = "gpu"));
        assert!(available_backends().iter().all(|b| KNOWN_BACKENDS.contains(b)));
    }

    #[test]
    fn a_backend_left_out_of_the_build_is_named_as_such() {
        let config = Config::default();
        for id in KNOWN_BACKENDS.iter().filter(|id| !available_backends().contains(id)) {
            let err = create_backend(id, &config).err().expect("not compiled in");
            assert_eq!(err, format!("backend '{id}' is not in this build (built with: {})", built_with()));
        }
        #[cfg(feature = "cpu")]
        assert_eq!(create_backend("cpu", &config).map(|b| b.id().to_string()).ok().as_deref(), Some("cpu"));
        let err = create_backend("npu", &config).err().expect("unknown");
        assert_eq!(err, "no backend is named 'npu' (known: cpu, gpu)");
    }
}
