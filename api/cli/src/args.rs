//! Command-line parsing in onert_run's style: `--opt VALUE`, `--opt=VALUE`, short aliases.

use anyhow::{bail, Context, Result};

/// A parsed command line: positional arguments and options in order.
#[derive(Debug, Default)]
pub struct Args {
    /// Positional arguments.
    pub positional: Vec<String>,
    opts: Vec<(String, Option<String>)>,
}

/// How an option takes its value.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Takes {
    /// A flag without value.
    Nothing,
    /// Always one value.
    Value,
    /// An optional value, taken only when the next argument looks like one (number/bool).
    Maybe,
}

/// One known option: names (long with `--`, short with `-`), canonical key and value kind.
pub struct Spec {
    /// Spellings, e.g. `["-r", "--num_runs"]`.
    pub names: &'static [&'static str],
    /// The key the value is stored under.
    pub key: &'static str,
    /// Value kind.
    pub takes: Takes,
    /// Help text.
    pub help: &'static str,
}

/// The options every tool takes besides its own: `-h, --help` and `-V, --version` (which prints
/// [`crate::version_line`]). [`Args::parse`] knows them; usage texts list them after the tool's.
pub const COMMON: &[Spec] = &[
    Spec { names: &["-h", "--help"], key: "help", takes: Takes::Nothing, help: "print this help" },
    Spec { names: &["-V", "--version"], key: "version", takes: Takes::Nothing, help: "print the version and the backends of this build" },
];

fn looks_like_value(s: &str) -> bool {
    s.parse::<f64>().is_ok() || matches!(s, "true" | "false" | "True" | "False")
}

impl Args {
    /// Parses `argv` (without the program name) against `specs` and [`COMMON`].
    pub fn parse(argv: impl IntoIterator<Item = String>, specs: &[Spec]) -> Result<Args> {
        let mut out = Args::default();
        let mut it = argv.into_iter().peekable();
        while let Some(a) = it.next() {
            if !a.starts_with('-') || a == "-" {
                out.positional.push(a);
                continue;
            }
            let (name, inline) = match a.split_once('=') {
                Some((n, v)) if n.starts_with("--") => (n.to_string(), Some(v.to_string())),
                _ => (a.clone(), None),
            };
            let spec = specs.iter().chain(COMMON).find(|s| s.names.contains(&name.as_str())).with_context(|| format!("unknown option '{name}' (see --help)"))?;
            let value = match (spec.takes, inline) {
                (Takes::Nothing, Some(_)) => bail!("option '{name}' takes no value"),
                (Takes::Nothing, None) => None,
                (_, Some(v)) => Some(v),
                (Takes::Value, None) => Some(it.next().with_context(|| format!("option '{name}' needs a value"))?),
                (Takes::Maybe, None) => match it.peek() {
                    Some(v) if looks_like_value(v) => it.next(),
                    _ => None,
                },
            };
            out.opts.push((spec.key.to_string(), value));
        }
        Ok(out)
    }

    /// Whether option `key` was given.
    pub fn has(&self, key: &str) -> bool {
        self.opts.iter().any(|(k, _)| k == key)
    }

    /// The last value of `key`.
    pub fn value(&self, key: &str) -> Option<&str> {
        self.opts.iter().rev().find(|(k, _)| k == key).and_then(|(_, v)| v.as_deref())
    }

    /// Every value of a repeatable option.
    pub fn values(&self, key: &str) -> Vec<&str> {
        self.opts.iter().filter(|(k, _)| k == key).filter_map(|(_, v)| v.as_deref()).collect()
    }

    /// The last value of `key` parsed as `T`.
    pub fn parsed<T: std::str::FromStr>(&self, key: &str) -> Result<Option<T>> {
        match self.value(key) {
            None => Ok(None),
            Some(v) => v.trim().parse().map(Some).map_err(|_| anyhow::anyhow!("option {key}: '{v}' is not a valid value")),
        }
    }
}

/// Parses onert_run's shape syntax `[idx,[d0,d1,...],idx,[...]]` (also without the outer
/// brackets) into (input index, dims) pairs.
pub fn parse_shapes(s: &str) -> Result<Vec<(usize, Vec<usize>)>> {
    let t: String = s.chars().filter(|c| !c.is_whitespace()).collect();
    let t = t.strip_prefix('[').and_then(|x| x.strip_suffix(']')).filter(|x| x.contains('[')).unwrap_or(&t);
    let mut out = Vec::new();
    let mut rest = t;
    while !rest.is_empty() {
        let (idx, after) = rest.split_once(",[").with_context(|| format!("bad shape list '{s}': expected idx,[dims]"))?;
        let (dims, after) = after.split_once(']').with_context(|| format!("bad shape list '{s}': missing ']'"))?;
        let idx: usize = idx.trim_start_matches(',').parse().with_context(|| format!("bad input index '{idx}' in '{s}'"))?;
        let dims = dims
            .split(',')
            .filter(|d| !d.is_empty())
            .map(|d| d.parse::<usize>().with_context(|| format!("bad dim '{d}' in '{s}'")))
            .collect::<Result<Vec<_>>>()?;
        out.push((idx, dims));
        rest = after.trim_start_matches(',');
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPECS: &[Spec] = &[
        Spec { names: &["-r", "--num_runs"], key: "num_runs", takes: Takes::Value, help: "" },
        Spec { names: &["-m", "--mem_poll"], key: "mem_poll", takes: Takes::Maybe, help: "" },
        Spec { names: &["--load:npy"], key: "load_npy", takes: Takes::Value, help: "" },
    ];

    #[test]
    fn parses_onert_style() {
        let a = Args::parse(["m.tflite", "-r", "5", "--load:npy=in", "-m", "x"].map(String::from), SPECS).unwrap();
        assert_eq!(a.positional, vec!["m.tflite", "x"]);
        assert_eq!(a.parsed::<u32>("num_runs").unwrap(), Some(5));
        assert_eq!(a.value("load_npy"), Some("in"));
        assert!(a.has("mem_poll"));
        assert!(Args::parse(["--nope".to_string()], SPECS).is_err());
        assert!(Args::parse(["-r".to_string()], SPECS).is_err());
    }

    #[test]
    fn every_tool_takes_help_and_version() {
        let a = Args::parse(["-V", "--help"].map(String::from), SPECS).unwrap();
        assert!(a.has("version") && a.has("help"));
        assert!(Args::parse(["--version=1".to_string()], SPECS).is_err());
    }

    #[test]
    fn shapes() {
        assert_eq!(parse_shapes("[0,[1,3],1,[2]]").unwrap(), vec![(0, vec![1, 3]), (1, vec![2])]);
        assert_eq!(parse_shapes("0,[4,12]").unwrap(), vec![(0, vec![4, 12])]);
        assert!(parse_shapes("[0,1]").is_err());
    }
}
