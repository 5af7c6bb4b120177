//! Pipelines are built at prepare and cached per device by shader family and options: a second
//! session on the same model, and other shapes of the same ops, compile nothing new. In a file of
//! its own so no other test compiles pipelines in this process while it counts them.

use nnrt::{DType, Session};
use nnrt_core::{Activation, ConstData, Conv2D, Model, OpKind, Operand, Operation, Padding, Subgraph, UnaryOp};

fn model(hw: usize) -> Model {
    let mut g = Subgraph::default();
    let x = g.add_operand(Operand::new("x", DType::F32, &[1, hw, hw, 3]));
    let mut w = Operand::new("w", DType::F32, &[5, 3, 3, 3]);
    w.data = Some(ConstData::owned((0..135).flat_map(|i| (i as f32 * 0.01).to_le_bytes()).collect()));
    let w = g.add_operand(w);
    let c = g.add_operand(Operand::new("c", DType::F32, &[1, hw, hw, 5]));
    let conv = Conv2D { padding: Padding::Same, stride: [1, 1], dilation: [1, 1], act: Activation::ReluN1To1 };
    g.add_op(Operation { kind: OpKind::Conv2D(conv), inputs: vec![Some(x), Some(w), None], outputs: vec![c] });
    let o = g.add_operand(Operand::new("o", DType::F32, &[1, hw, hw, 5]));
    g.add_op(Operation { kind: OpKind::Unary(UnaryOp::Gelu { approximate: true }), inputs: vec![Some(c)], outputs: vec![o] });
    g.inputs.push(x);
    g.outputs.push(o);
    Model { subgraphs: vec![g], source: "pipeline cache test".into(), ..Model::default() }
}

fn prepared(hw: usize) -> Session {
    let mut s = Session::from_model(model(hw)).expect("session");
    s.set_backends("gpu").expect("backends");
    s.prepare().expect("prepare");
    s
}

#[test]
fn pipelines_are_cached_across_sessions_and_shapes() {
    let gpu = match nnrt_backend_gpu::GpuBackend::new(std::env::var("GPU_ADAPTER").ok().as_deref()) {
        Ok(g) => g,
        Err(why) => {
            eprintln!("SKIPPED, no GPU adapter: {why}");
            return;
        }
    };
    let before = gpu.gpu().pipeline_count();
    let _first = prepared(6);
    let after_first = gpu.gpu().pipeline_count();
    assert_eq!(after_first, before + 2, "one pipeline per op (conv, gelu) at the first prepare");
    let _again = prepared(6);
    let _other_shape = prepared(9);
    assert_eq!(gpu.gpu().pipeline_count(), after_first, "no new pipelines for the same ops");
}
