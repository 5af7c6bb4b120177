//! [`Graph`]: the one way to build a one-op (or few-op) model for a test, as nnrt IR.

use nnrt_core::{ConstData, DType, Model, OpKind, Operand, OperandId, Operation, Subgraph};

use crate::values::V;

/// One input of [`Graph::one_op`].
#[derive(Clone, Debug)]
pub enum Arg<'a> {
    /// A graph input of these dims, fed with the values.
    In(&'a [usize], V),
    /// A constant of these dims.
    Const(&'a [usize], V),
    /// An optional input left out.
    Absent,
}

/// A one-subgraph model under construction, with the values fed to each graph input.
///
/// Inputs, constants and outputs are added in order; `op` wires them. Nothing is checked: an
/// inconsistent model is what a `neg_` case is for.
#[derive(Clone, Debug, Default)]
pub struct Graph {
    /// The subgraph built so far.
    pub sub: Subgraph,
    feeds: Vec<V>,
}

impl Graph {
    /// An empty graph.
    pub fn new() -> Graph {
        Graph::default()
    }

    /// A graph input fed with `v` (its type is `v`'s).
    pub fn input(&mut self, dims: &[usize], v: V) -> OperandId {
        let id = self.sub.add_operand(Operand::new(format!("in{}", self.feeds.len()), v.dtype(), dims));
        self.sub.inputs.push(id);
        self.feeds.push(v);
        id
    }

    /// A constant.
    pub fn konst(&mut self, dims: &[usize], v: V) -> OperandId {
        let mut o = Operand::new("const", v.dtype(), dims);
        o.data = Some(ConstData::owned(v.bytes()));
        self.sub.add_operand(o)
    }

    /// A 1-D int32 constant (axes, shapes, sizes).
    pub fn ints(&mut self, v: &[i32]) -> OperandId {
        self.konst(&[v.len()], V::I32(v.to_vec()))
    }

    /// An int32 scalar constant.
    pub fn scalar(&mut self, v: i32) -> OperandId {
        self.konst(&[], V::I32(vec![v]))
    }

    /// An intermediate tensor (neither input nor output).
    pub fn tensor(&mut self, dtype: DType, dims: &[usize]) -> OperandId {
        self.sub.add_operand(Operand::new("t", dtype, dims))
    }

    /// A variable tensor (state kept between runs, zero at first).
    pub fn variable(&mut self, dtype: DType, dims: &[usize]) -> OperandId {
        let mut o = Operand::new("state", dtype, dims);
        o.is_variable = true;
        self.sub.add_operand(o)
    }

    /// An op output that is also a graph output (in the order of calls).
    pub fn out(&mut self, dtype: DType, dims: &[usize]) -> OperandId {
        let id = self.sub.add_operand(Operand::new(format!("out{}", self.sub.outputs.len()), dtype, dims));
        self.sub.outputs.push(id);
        id
    }

    /// Adds an op; `None` is an optional input left out.
    pub fn op(&mut self, kind: OpKind, inputs: &[Option<OperandId>], outputs: &[OperandId]) -> &mut Self {
        self.sub.add_op(Operation { kind, inputs: inputs.to_vec(), outputs: outputs.to_vec() });
        self
    }

    /// The values fed to the graph inputs, in order.
    pub fn feeds(&self) -> &[V] {
        &self.feeds
    }

    /// The model around the subgraph.
    pub fn model(&self) -> Model {
        Model { subgraphs: vec![self.sub.clone()], source: "nnrt-tests Graph".into(), ..Model::default() }
    }

    /// `kind` over `args` in order, with outputs of the given types and dims.
    pub fn one_op(kind: OpKind, args: &[Arg], outs: &[(DType, &[usize])]) -> Graph {
        let mut g = Graph::new();
        let inputs: Vec<Option<OperandId>> = args
            .iter()
            .map(|a| match a {
                Arg::In(dims, v) => Some(g.input(dims, v.clone())),
                Arg::Const(dims, v) => Some(g.konst(dims, v.clone())),
                Arg::Absent => None,
            })
            .collect();
        let outputs: Vec<OperandId> = outs.iter().map(|(t, d)| g.out(*t, d)).collect();
        g.op(kind, &inputs, &outputs);
        g
    }

    /// `y = kind(x)`: one input fed with `x`, one output of type `out` and the same dims.
    pub fn unary(kind: OpKind, dims: &[usize], x: V, out: DType) -> Graph {
        let mut g = Graph::new();
        let xi = g.input(dims, x);
        let y = g.out(out, dims);
        g.op(kind, &[Some(xi)], &[y]);
        g
    }

    /// `y = kind(a, b)` with both operands graph inputs.
    pub fn binary(kind: OpKind, a: (&[usize], V), b: (&[usize], V), out: (DType, &[usize])) -> Graph {
        let mut g = Graph::new();
        let ai = g.input(a.0, a.1);
        let bi = g.input(b.0, b.1);
        let y = g.out(out.0, out.1);
        g.op(kind, &[Some(ai), Some(bi)], &[y]);
        g
    }
}
