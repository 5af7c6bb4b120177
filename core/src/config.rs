//! Session configuration: the onert keys (`BACKENDS`, `NUM_THREADS`, `OP_BACKEND_*`) and any other
//! key=value a package's cfg file or the caller sets.

use std::collections::BTreeMap;

/// Key=value configuration, read from the environment, package configs and API calls.
#[derive(Clone, Debug, Default)]
pub struct Config {
    values: BTreeMap<String, String>,
}

/// Keys read from the environment when present, as onert does.
pub const ENV_KEYS: &[&str] = &["BACKENDS", "NUM_THREADS", "MEMORY_LIMIT", "WHILE_MAX_ITERATIONS", "OP_BACKEND_ALLOPS", "OP_BACKEND_MAP", "EXECUTOR", "GPU_ADAPTER", "GPU_PRECISION"];

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

    /// The thread count (`NUM_THREADS`): `Ok(None)` when unset, an error naming the value when it
    /// is not a whole number in `1..=MAX_THREADS` (a typo must not silently mean "all cores").
    pub fn threads(&self) -> Result<Option<usize>, String> {
        self.get("NUM_THREADS").map(parse_threads).transpose()
    }

    /// The most iterations one WHILE op may run per call (`WHILE_MAX_ITERATIONS`, default
    /// [`DEFAULT_WHILE_MAX_ITERATIONS`]; `0` means no limit): a loop that never ends stops with a
    /// typed error naming the op instead of hanging the host.
    pub fn while_max_iterations(&self) -> Result<u64, String> {
        match self.get("WHILE_MAX_ITERATIONS") {
            None => Ok(DEFAULT_WHILE_MAX_ITERATIONS),
            Some(v) => match v.trim().parse::<u64>() {
                Ok(0) => Ok(u64::MAX),
                Ok(n) => Ok(n),
                Err(_) => Err(format!("'{}' is not an iteration count: use a whole number (0 = no limit)", v.trim())),
            },
        }
    }

    /// The most bytes the session's tensors may take (`MEMORY_LIMIT`, else
    /// [`default_memory_limit`]); an error naming the value when it is not a size.
    pub fn memory_limit(&self) -> Result<u64, String> {
        self.get("MEMORY_LIMIT").map_or(Ok(default_memory_limit()), parse_bytes)
    }
}

/// The `MEMORY_LIMIT` value: bytes, or a number with a `K`, `M` or `G` suffix (powers of 1024).
pub fn parse_bytes(value: &str) -> Result<u64, String> {
    let v = value.trim();
    let (num, scale) = match v.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => {
            let scale = match c.to_ascii_uppercase() {
                'K' => 1u64 << 10,
                'M' => 1 << 20,
                'G' => 1 << 30,
                _ => return Err(format!("'{v}' is not a size: use bytes or a number with K, M or G")),
            };
            (&v[..i], scale)
        }
        _ => (v, 1),
    };
    num.trim()
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(scale))
        .filter(|&n| n > 0)
        .ok_or_else(|| format!("'{v}' is not a size: use a positive number of bytes, or a number with K, M or G"))
}

/// The memory a session may use for its tensors when `MEMORY_LIMIT` is not set: three quarters of
/// the machine's physical memory where it can be read (Linux), else 4 GiB.
pub fn default_memory_limit() -> u64 {
    static LIMIT: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *LIMIT.get_or_init(|| physical_memory().map(|m| m / 4 * 3).unwrap_or(4 << 30))
}

/// `MemTotal` from `/proc/meminfo`, in bytes.
fn physical_memory() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kb.checked_mul(1024)
}

/// How many iterations a WHILE may run per call when `WHILE_MAX_ITERATIONS` is not set: far more
/// than real loops (an LSTM over its time steps, a decoder over its tokens) run, and well under a
/// second of a loop that never ends. Measured on the corpus's `op_while_loop` with its body
/// passing the counter through (six scalar ops an iteration) on the 2-vCPU machine nnrt is
/// tuned on: 1.2 µs an iteration, 2.5 µs while another build shares the cores, so the limit
/// stops it after 0.1–0.3 s (the earlier default of 1,000,000 took 1.2–2.6 s).
pub const DEFAULT_WHILE_MAX_ITERATIONS: u64 = 100_000;

/// The most kernel threads a session may use: far above any core count a model runs on, far below
/// what would exhaust the host when a caller passes a huge number.
pub const MAX_THREADS: usize = 256;

/// Parses a thread count: a whole number in `1..=MAX_THREADS`.
pub fn parse_threads(value: &str) -> Result<usize, String> {
    match value.trim().parse::<i128>() {
        Ok(n) if (1..=MAX_THREADS as i128).contains(&n) => Ok(n as usize),
        Ok(n) => Err(format!("thread count {n} is out of range: use 1..={MAX_THREADS}")),
        Err(_) => Err(format!("'{}' is not a thread count: use a whole number in 1..={MAX_THREADS}", value.trim())),
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
        assert_eq!(c.threads(), Ok(Some(2)));
    }

    #[test]
    fn thread_counts_out_of_range_are_errors() {
        for bad in ["0", "-5", "4294967296", "18446744073709551615", "257", "two", ""] {
            let mut c = Config::default();
            c.set("NUM_THREADS", bad);
            assert!(c.threads().is_err(), "{bad:?} accepted");
        }
        assert_eq!(parse_threads(" 256 "), Ok(256));
        assert_eq!(Config::default().threads(), Ok(None));
    }

    #[test]
    fn memory_limits() {
        assert_eq!(parse_bytes("1024"), Ok(1024));
        assert_eq!(parse_bytes("2G"), Ok(2 << 30));
        assert_eq!(parse_bytes(" 512m "), Ok(512 << 20));
        for bad in ["0", "-1", "1T", "x", "", "99999999999999999999G"] {
            assert!(parse_bytes(bad).is_err(), "{bad:?} accepted");
        }
        assert!(default_memory_limit() >= 1 << 20);
    }
}
