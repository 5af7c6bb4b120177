//! Custom-op plugins of a session: the libraries a package ships in `custom_op/`, loaded at
//! prepare only when the caller allows it ([`nnrt_custom_ops::ALLOW_PACKAGE_PLUGINS`]).

use std::path::Path;

use nnrt_core::Config;
use nnrt_custom_ops::{is_shared_library, PluginError, PluginLibrary, Registry, ALLOW_PACKAGE_PLUGINS, DEVICE_LIB};
use nnrt_loaders::Package;

/// Whether the caller allowed loading the package's plugins.
pub(crate) fn allowed(config: &Config) -> bool {
    matches!(config.get(ALLOW_PACKAGE_PLUGINS).map(|v| v.trim().to_ascii_lowercase()).as_deref(), Some("1" | "true" | "yes" | "on"))
}

/// Whether a package cfg key may be applied: the package cannot allow its own code to load.
pub(crate) fn package_may_set(key: &str) -> bool {
    if key.trim() == ALLOW_PACKAGE_PLUGINS {
        log::warn!("ignoring {ALLOW_PACKAGE_PLUGINS} in the package's cfg: only the caller can allow loading a package's plugins");
        return false;
    }
    if key.trim() == DEVICE_LIB {
        log::warn!("ignoring {DEVICE_LIB} in the package's cfg: only the caller can load a device driver");
        return false;
    }
    true
}

/// Loads the device driver at `path` into `registry` (replacing earlier kernels of its ops);
/// a library that registers no device op is refused. Returns the ops it drives.
pub(crate) fn load_device_library(registry: &mut Registry, path: &Path) -> Result<Vec<String>, PluginError> {
    let lib = PluginLibrary::load(path)?;
    if lib.device_ops().is_empty() {
        return Err(PluginError::Invalid {
            path: lib.path().to_string(),
            reason: format!(
                "it registers no device op (plugin ABI version 2's device_ops){}",
                if lib.op_names().is_empty() { String::new() } else { "; it is a custom-op plugin: load it with --custom-op-lib".to_string() }
            ),
        });
    }
    Ok(registry.add_plugin(&lib, true))
}

/// Loads the package's `custom_op/` libraries into `registry` when allowed (ops already
/// registered by the caller keep their kernels). `dir` is the package folder (None for zips and
/// bare model files); `needed` are the model's custom ops. Returns whether anything was loaded; a
/// package whose plugins are needed but not allowed is an error saying how to allow them.
pub(crate) fn load_package_plugins(package: &Package, dir: Option<&Path>, config: &Config, registry: &mut Registry, needed: &[String]) -> Result<bool, PluginError> {
    let libs: Vec<&String> = package.custom_op_files.iter().filter(|f| is_shared_library(f)).collect();
    if libs.is_empty() {
        return Ok(false);
    }
    let files = libs.iter().map(|f| format!("custom_op/{f}")).collect::<Vec<_>>().join(", ");
    let mut missing: Vec<&str> = needed.iter().map(String::as_str).filter(|n| !registry.contains(n)).collect();
    missing.sort_unstable();
    missing.dedup();
    if !allowed(config) {
        if missing.is_empty() {
            log::info!("the package ships custom-op plugins ({files}); not loaded: every custom op already has a kernel");
            return Ok(false);
        }
        return Err(PluginError::PackageNotAllowed { files, ops: missing.join(", ") });
    }
    let Some(dir) = dir else {
        return Err(PluginError::PackageUnsupported {
            files,
            reason: "plugins inside a zipped package (or a package built in memory) cannot be loaded; unzip the package and load its folder, or pass the library with --custom-op-lib".into(),
        });
    };
    for f in libs {
        let lib = PluginLibrary::load(&dir.join("custom_op").join(f))?;
        let added = registry.add_plugin(&lib, false);
        log::info!("loaded package plugin custom_op/{f} ('{}'): {}", lib.name(), added.join(", "));
    }
    Ok(true)
}
