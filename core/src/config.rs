//! Session configuration: the onert keys (`BACKENDS`, `NUM_THREADS`, `OP_BACKEND_*`) and any other
//! key=value a package's cfg file or the caller sets.

use std::collections::BTreeMap;

/// Key=value configuration, read from the environment, package configs and API calls.
#[derive(Clone, Debug, Default)]
pub struct Config {
    values: BTreeMap<String, String>,
}

/// Keys read from the environment when present, as onert does.
pub const ENV_KEYS: &[&str] = &["BACKENDS", "NUM_THREADS", "OP_BACKEND_ALLOPS", "OP_BACKEND_MAP", "EXECUTOR", "GPU_ADAPTER", "GPU_PRECISION"];

impl Config {
    /// Sets `key` to `value`, replacing any earlier value.
    pub fn set(&mut self, key: impl Into<String>, value: impl Into<String>) {
        self.values.insert(key.into(), value.into());
    }

    /// The value of `key`, if set.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.values.get(key).map(String::as_str)
    }

    /// Every key and value, sorted by key.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.values.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// Applies the environment's `BACKENDS`, `NUM_THREADS` and `OP_BACKEND_*` variables.
    pub fn apply_env(&mut self) {
        for (k, v) in std::env::vars() {
            if ENV_KEYS.contains(&k.as_str()) || k.starts_with("OP_BACKEND_") {
                self.set(k, v);
            }
        }
    }

    /// Applies `key=value` lines (a package's cfg file); `#` starts a comment line.
    pub fn apply_lines(&mut self, text: &str) {
        for line in text.lines() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            if let Some((k, v)) = line.split_once('=') {
                self.set(k.trim(), v.trim());
            }
        }
    }

    /// The backends in order of preference (`BACKENDS="cpu;gpu"`, `,` also accepted).
    pub fn backends(&self) -> Vec<String> {
        self.get("BACKENDS")
            .map(|v| v.split([';', ',']).map(str::trim).filter(|s| !s.is_empty()).map(String::from).collect())
            .unwrap_or_default()
    }

    /// The thread count (`NUM_THREADS`), if set to a positive integer.
    pub fn threads(&self) -> Option<usize> {
        self.get("NUM_THREADS").and_then(|v| v.trim().parse().ok()).filter(|&n: &usize| n > 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cfg_lines_and_lists() {
        let mut c = Config::default();
        c.apply_lines("# comment\nBACKENDS=cpu;gpu\n NUM_THREADS = 2 \nbad line\n");
        assert_eq!(c.backends(), vec!["cpu", "gpu"]);
        assert_eq!(c.threads(), Some(2));
    }
}
