use std::sync::Arc;

use nnrt_core::{Blob, LoadError};

use super::load;

fn corpus(case: &str) -> Option<Vec<u8>> {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/corpus/pte").join(case).join("program.pte");
    match std::fs::read(&p) {
        Ok(b) => Some(b),
        Err(_) => {
            eprintln!("skipped: {} not found (the shared corpus is absent)", p.display());
            None
        }
    }
}

fn load_bytes(bytes: Vec<u8>) -> Result<super::Loaded, LoadError> {
    let blob: Blob = Arc::new(bytes);
    load("p.pte", blob)
}

#[test]
fn every_corpus_program_loads_with_its_methods() {
    for (case, methods) in [("mlp_linear_relu", &["forward"][..]), ("small_cnn", &["forward"]), ("two_methods", &["decode", "encode"]), ("shape_ops", &["forward"])] {
        let Some(bytes) = corpus(case) else { return };
        let l = load_bytes(bytes).unwrap_or_else(|e| panic!("{case}: {e}"));
        let keys: Vec<&str> = l.model.signatures.iter().map(|s| s.key.as_str()).collect();
        assert_eq!(keys, methods, "{case}");
        assert_eq!(l.model.subgraphs.len(), methods.len());
        assert!(!l.model.entry().ops.is_empty(), "{case}: no ops");
    }
}

#[test]
fn constants_borrow_from_the_file() {
    let Some(bytes) = corpus("small_cnn") else { return };
    let blob: Blob = Arc::new(bytes);
    let l = load("p.pte", blob.clone()).expect("loads");
    // The batch-norm statistics are folded, but the convolution bias is used as stored.
    let borrowed = l.model.entry().operands.iter().filter_map(|o| o.data.as_ref()).filter(|d| d.shares_blob_with(&blob)).count();
    assert!(borrowed > 0, "no constant borrows from the file");
}

#[test]
fn truncated_and_corrupt_programs_are_typed_errors() {
    let Some(bytes) = corpus("mlp_linear_relu") else { return };
    for cut in [9, 16, 40, 100, bytes.len() / 2, bytes.len() - 1] {
        let e = load_bytes(bytes[..cut].to_vec()).expect_err("truncated");
        assert!(matches!(e, LoadError::Malformed { .. }), "cut at {cut}: {e}");
    }
    // Segment data size past the end of the file.
    let mut b = bytes.clone();
    b[0x20..0x28].copy_from_slice(&u64::MAX.to_le_bytes());
    let e = load_bytes(b).expect_err("bad size").to_string();
    assert!(e.contains("overflows") || e.contains("truncated"), "{e}");
    // A program size larger than the file.
    let mut b = bytes.clone();
    b[0x10..0x18].copy_from_slice(&(bytes.len() as u64 + 1).to_le_bytes());
    assert!(load_bytes(b).expect_err("bad program size").to_string().contains("program size"));
    // Every single-byte corruption: an error or a model, never a panic.
    for i in 0..bytes.len() {
        let mut b = bytes.clone();
        b[i] ^= 0xa5;
        let _ = load_bytes(b);
    }
}

#[test]
fn a_program_without_extended_header_loads() {
    let Some(bytes) = corpus("shape_ops") else { return };
    assert_ne!(&bytes[8..12], b"eh00");
    load_bytes(bytes).expect("shape_ops has no segment data and no extended header");
}

/// A mutable buffer the exporter left uninitialized (its initial contents are zeros the loader
/// makes) declared with a billion elements: a typed error at load, not an 8 GB allocation
/// (found by the `pte` fuzz target).
#[test]
fn a_huge_uninitialized_mutable_buffer_is_refused_before_allocating() {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data/pte_state/counter/program.pte");
    let mut bytes = std::fs::read(&p).expect("tests/data/pte_state/counter/program.pte");
    // The counter buffer's `sizes` vector ([1]) is the last one-element vector holding 1 in the
    // flatbuffer (found by patching each candidate, checked by the error below).
    let at = bytes.windows(8).rposition(|w| w == [1, 0, 0, 0, 1, 0, 0, 0]).expect("a [1] sizes vector");
    bytes[at + 4..at + 8].copy_from_slice(&1_000_000_000i32.to_le_bytes());
    let err = load_bytes(bytes).expect_err("refused").to_string();
    assert!(err.contains("zero initial contents of mutable buffer") && err.contains("1000000000"), "{err}");
}

/// A `torch.map` loop (tests/data/pte_loop/map_rows) over a first dim made 100 000: unrolling it
/// would run 700 000 instructions at load, over the bound, so loading stops with a typed error
/// instead of building a graph without limit.
#[test]
fn a_loop_over_too_many_rows_is_refused_at_load() {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data/pte_loop/map_rows/program.pte");
    let bytes = std::fs::read(&p).expect("tests/data/pte_loop/map_rows/program.pte");
    assert!(load_bytes(bytes.clone()).is_ok(), "the program loads as made");
    // Every [4, 3] sizes vector (the mapped input and the stacked output) becomes [100000, 3].
    let (from, to) = ([2, 0, 0, 0, 4, 0, 0, 0, 3, 0, 0, 0], [2, 0, 0, 0, 0xa0, 0x86, 1, 0, 3, 0, 0, 0]);
    let mut patched = bytes.clone();
    let at: Vec<usize> = bytes.windows(12).enumerate().filter(|(_, w)| *w == from).map(|(i, _)| i).collect();
    assert!(!at.is_empty(), "a [4, 3] sizes vector");
    for i in at {
        patched[i..i + 12].copy_from_slice(&to);
    }
    let err = load_bytes(patched).expect_err("refused").to_string();
    assert!(err.contains("instructions at load") && err.contains("loop"), "{err}");
}
