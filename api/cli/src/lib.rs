//! Shared pieces of nnrt's command-line tools: `.npy` file I/O, argument parsing, logging, a
//! classifier's top-k report, Graphviz output.

#![forbid(unsafe_code)]

pub mod args;
pub mod classify;
pub mod compile;
pub mod darwinn_view;
pub mod dot;
pub mod logger;
pub mod npy;

/// The line `--version` prints: the tool, nnrt's version and the backends of this build
/// (its cargo features `cpu` and `gpu`).
pub fn version_line(tool: &str) -> String {
    format!("{tool} {} (nnrt; backends in this build: {})", env!("CARGO_PKG_VERSION"), nnrt::built_with())
}

#[cfg(test)]
mod tests {
    #[test]
    fn version_names_the_backends_of_the_build() {
        let line = super::version_line("nnpackage_run");
        assert!(line.starts_with(&format!("nnpackage_run {} ", env!("CARGO_PKG_VERSION"))), "{line}");
        assert!(line.ends_with(&format!("backends in this build: {})", nnrt::available_backends().join(", "))), "{line}");
    }
}
