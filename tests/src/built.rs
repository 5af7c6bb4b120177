//! Artifacts Cargo builds beside a test executable (`target/<profile>/deps/<test>`): plugin
//! libraries and the CLI binaries.

use std::path::PathBuf;

/// The shared library `lib` (e.g. `nnrt_posenet_decoder`, without prefix or suffix) that Cargo
/// built for the running test: beside the test executable, else in `target/<profile>/`. Panics,
/// naming `package` to build, when it is in neither.
pub fn built_plugin(lib: &str, package: &str) -> PathBuf {
    let name = format!("{}{lib}{}", std::env::consts::DLL_PREFIX, std::env::consts::DLL_SUFFIX);
    let exe = std::env::current_exe().expect("test executable path");
    let deps = exe.parent().expect("deps folder");
    [deps.join(&name), deps.parent().expect("profile folder").join(&name)]
        .into_iter()
        .find(|p| p.is_file())
        .unwrap_or_else(|| panic!("{name} is not built next to {}: build the workspace (cargo build -p {package})", deps.display()))
}

/// `target/<profile>/<name>` (one of nnrt-cli's binaries), when built; otherwise prints that the
/// calling test is skipped and returns `None`.
pub fn cli_binary(name: &str) -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let p = exe.parent()?.parent()?.join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
    if p.is_file() {
        Some(p)
    } else {
        println!("skipped: {} is not built (run `cargo build -p nnrt-cli` with this test's profile)", p.display());
        None
    }
}
