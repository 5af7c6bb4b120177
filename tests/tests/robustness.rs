//! Truncated and corrupted model files must give a typed error, or load, prepare and run: never
//! a panic, and in bounded time. Models: the 6 smallest corpus models nnrt loads (from
//! `../shared/corpus/tflite`, skipped with a message when absent) and the example model.
//!
//! Each corruption is seeded; a failure names the model, the corruption and the seed. Set
//! `NNRT_ROBUSTNESS_SEED` to explore other corruptions and `NNRT_ROBUSTNESS_MODELS` to take more
//! corpus models than 6.

mod common;

use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::{Duration, Instant};

use common::exercise::{exercise, panic_message, Outcome};
use nnrt_tests::{example, XorShift};

const TRUNCATIONS: usize = 40;
const SINGLE_BYTE: usize = 300;
const MULTI_BYTE: usize = 50;
/// A case that takes longer than this (load + prepare + run of a model under 100 KB) is a hang.
const MAX_CASE_TIME: Duration = Duration::from_secs(20);
const DEFAULT_SEED: u64 = 0x5EED_0000_2025;

#[derive(Clone, Debug)]
enum Corruption {
    Truncate(usize),
    Bytes(Vec<(usize, u8)>),
}

impl fmt::Display for Corruption {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Corruption::Truncate(n) => write!(f, "truncated to {n} bytes"),
            Corruption::Bytes(v) if v.len() <= 8 => {
                let list: Vec<String> = v.iter().map(|(at, b)| format!("[{at}]=0x{b:02x}")).collect();
                write!(f, "bytes {}", list.join(" "))
            }
            Corruption::Bytes(v) => write!(f, "{} bytes from offset {} (first [{}]=0x{:02x})", v.len(), v[0].0, v[0].0, v[0].1),
        }
    }
}

impl Corruption {
    fn apply(&self, bytes: &[u8]) -> Vec<u8> {
        match self {
            Corruption::Truncate(n) => bytes[..*n].to_vec(),
            Corruption::Bytes(changes) => {
                let mut out = bytes.to_vec();
                for &(at, b) in changes {
                    out[at] = b;
                }
                out
            }
        }
    }
}

/// A byte that breaks things: random, one bit flipped, or an extreme value.
fn nasty_byte(rng: &mut XorShift, old: u8) -> u8 {
    match rng.below(6) {
        0 => rng.next_u64() as u8,
        1 => old ^ (1 << rng.below(8)),
        2 => 0x00,
        3 => 0xFF,
        4 => 0x7F,
        _ => 0x80,
    }
}

/// ~40 truncations, 300 single-byte and 50 multi-byte corruptions of a `len`-byte file.
fn corruptions(bytes: &[u8], rng: &mut XorShift) -> Vec<Corruption> {
    let len = bytes.len();
    let mut cuts: Vec<usize> = vec![0, 1, 4, 7, 8, 12, 16, 20, 24, 32, 48, 64, 128, 256];
    cuts.extend((1..8).map(|k| len * k / 8));
    cuts.extend([1, 2, 3, 4, 8, 16, 64].iter().filter_map(|d| len.checked_sub(*d)));
    cuts.retain(|&c| c < len);
    cuts.sort_unstable();
    cuts.dedup();
    while cuts.len() < TRUNCATIONS {
        cuts.push(rng.below(len));
    }
    let mut out: Vec<Corruption> = cuts.into_iter().map(Corruption::Truncate).collect();
    for k in 0..SINGLE_BYTE {
        // A quarter hit the root table, vtables and file identifier near the start.
        let at = if k % 4 == 0 { rng.below(len.min(128)) } else { rng.below(len) };
        out.push(Corruption::Bytes(vec![(at, nasty_byte(rng, bytes[at]))]));
    }
    for k in 0..MULTI_BYTE {
        let changes = match k % 4 {
            // A 4-byte word (an offset, a length, a dim, a buffer index) set to an extreme.
            0 | 1 => {
                let at = rng.below(len / 4) * 4;
                let word: u32 = [0xFFFF_FFFF, 0x7FFF_FFFF, 0x8000_0000, 0x0001_0000, rng.next_u64() as u32][rng.below(5)];
                word.to_le_bytes().iter().enumerate().filter(|(i, _)| at + i < len).map(|(i, &b)| (at + i, b)).collect()
            }
            // A run of 8 to 64 bytes zeroed or scrambled.
            2 => {
                let (at, n, zero) = (rng.below(len), 8 + rng.below(57), rng.below(2) == 0);
                (at..(at + n).min(len)).map(|i| (i, if zero { 0 } else { rng.next_u64() as u8 })).collect()
            }
            // 2 to 16 scattered bytes.
            _ => (0..2 + rng.below(15))
                .map(|_| {
                    let at = rng.below(len);
                    (at, nasty_byte(rng, bytes[at]))
                })
                .collect(),
        };
        out.push(Corruption::Bytes(changes));
    }
    out
}

fn seed() -> u64 {
    std::env::var("NNRT_ROBUSTNESS_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(DEFAULT_SEED)
}

/// Runs every corruption of one model; returns a line per failure (panic or hang).
fn check_model(name: &str, bytes: &[u8], seed: u64) -> Vec<String> {
    let mut rng = XorShift::new(seed);
    let cases = corruptions(bytes, &mut rng);
    let mut counts = std::collections::BTreeMap::<Outcome, usize>::new();
    let mut failures = Vec::new();
    let mut slowest = (Duration::ZERO, String::new());
    for c in &cases {
        let data = c.apply(bytes);
        let start = Instant::now();
        let result = catch_unwind(AssertUnwindSafe(|| exercise(name, data)));
        let took = start.elapsed();
        match result {
            Ok(outcome) => *counts.entry(outcome).or_default() += 1,
            Err(panic) => {
                failures.push(format!("{name}: {c} (seed {seed:#x}): panicked: {}", panic_message(&*panic)));
            }
        }
        if took > MAX_CASE_TIME {
            failures.push(format!("{name}: {c} (seed {seed:#x}): took {took:?}"));
        }
        if took > slowest.0 {
            slowest = (took, c.to_string());
        }
    }
    println!("{name} ({} bytes, seed {seed:#x}): {} cases: {counts:?}; slowest {:?} ({})", bytes.len(), cases.len(), slowest.0, slowest.1);
    failures
}

fn assert_no_failures(failures: &[String]) {
    assert!(failures.is_empty(), "{} corrupted models panicked or hung:\n{}", failures.len(), failures.iter().take(30).cloned().collect::<Vec<_>>().join("\n"));
}

#[test]
fn example_model_survives_corruption() {
    let bytes = example::tiny_mobilenet();
    assert_eq!(exercise("tiny_mobilenet.tflite", bytes.clone()), Outcome::Ran, "the uncorrupted example must run");
    assert_no_failures(&check_model("tiny_mobilenet.tflite", &bytes, seed()));
}

/// The `count` smallest corpus models that load uncorrupted, as (name, bytes).
fn smallest_loadable_corpus_models(count: usize) -> Option<Vec<(String, Vec<u8>)>> {
    let dir = nnrt_tests::corpus_dir()?.join("tflite");
    let mut models: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .ok()?
        .flatten()
        .filter_map(|e| {
            let bytes = std::fs::read(e.path().join("model.tflite")).ok()?;
            Some((e.file_name().to_string_lossy().into_owned(), bytes))
        })
        .collect();
    models.sort_by_key(|(name, b)| (b.len(), name.clone()));
    Some(models.into_iter().filter(|(name, b)| nnrt_loaders::tflite::load_bytes(name, b.clone()).is_ok()).take(count).collect())
}

#[test]
fn corpus_models_survive_corruption() {
    let count = std::env::var("NNRT_ROBUSTNESS_MODELS").ok().and_then(|s| s.parse().ok()).unwrap_or(6);
    let Some(models) = smallest_loadable_corpus_models(count) else {
        println!("skipped: ../shared/corpus not found");
        return;
    };
    let seed = seed();
    let mut failures = Vec::new();
    for (i, (name, bytes)) in models.iter().enumerate() {
        failures.extend(check_model(name, bytes, seed.wrapping_add(i as u64)));
    }
    assert_no_failures(&failures);
}


/// A panic inside a kernel (here a registered custom op's) comes back from `run` as
/// `Error::Internal` naming the call, and the session keeps working.
#[test]
fn a_panicking_kernel_is_an_internal_error_not_a_crash() {
    use nnrt_tests::{ModelBuilder, TempDir, TensorType};
    let mut b = ModelBuilder::new();
    let x = b.input("x", TensorType::FLOAT32, &[4]);
    let y = b.tensor("y", TensorType::FLOAT32, &[4]);
    b.custom_op("Explode", &[x], &[y], &[]);
    b.output(y);
    let dir = TempDir::new("panicking-kernel").unwrap();
    let p = dir.path().join("explode.tflite");
    std::fs::write(&p, b.finish()).unwrap();
    let mut s = nnrt::Session::load(&p).unwrap();
    s.register_custom_op("Explode", std::sync::Arc::new(|_: &[nnrt_core::TensorRef<'_>], _: &mut [nnrt_core::TensorMut<'_>], _: &[u8]| -> Result<(), String> { panic!("kernel bug") }))
        .unwrap();
    s.prepare().unwrap();
    s.set_input(0, &[0u8; 16]).unwrap();
    for _ in 0..2 {
        match s.run() {
            Err(nnrt::Error::Internal { call, message }) => assert!(call == "run" && message.contains("kernel bug"), "{call}: {message}"),
            other => panic!("expected an internal error, got {other:?}"),
        }
    }
}
