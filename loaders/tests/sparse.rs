//! Sparse weights (TFLite sparsity metadata) are densified at load and DENSIFY is folded away.
//!
//! `data/dense_fc.tflite` is a three-FULLY_CONNECTED graph whose weights are ~60% zeros;
//! `data/sparse_fc.tflite` stores the same weights sparse (rows dense + columns CSR, 1×4 block
//! sparse, and a column-major traversal) behind DENSIFY ops. LiteRT gives both models the same
//! outputs; after loading, every FULLY_CONNECTED must see the same dense weight bytes.
//! `tools/make_sparse_test_models.py` regenerates both files.

use nnrt_core::{OpKind, OperandId};

fn data(name: &str) -> Vec<u8> {
    std::fs::read(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(name)).expect("test model")
}

fn fc_weights(bytes: Vec<u8>) -> Vec<Vec<u8>> {
    let model = nnrt_loaders::tflite::load_bytes("test", bytes).expect("loads");
    let g = model.entry();
    g.ops
        .iter()
        .filter(|op| matches!(op.kind, OpKind::FullyConnected(_)))
        .map(|op| {
            let w: OperandId = op.input(1).expect("weights");
            g.operand(w).data.as_ref().expect("constant weights").bytes().to_vec()
        })
        .collect()
}

#[test]
fn sparse_weights_load_as_their_dense_twin() {
    let sparse = fc_weights(data("sparse_fc.tflite"));
    let dense = fc_weights(data("dense_fc.tflite"));
    assert_eq!(sparse.len(), 3, "DENSIFY is folded, the three FULLY_CONNECTED remain");
    assert_eq!(sparse, dense);
}

#[test]
fn densify_ops_are_folded() {
    let model = nnrt_loaders::tflite::load_bytes("test", data("sparse_fc.tflite")).expect("loads");
    assert_eq!(model.entry().ops.len(), 3);
}
