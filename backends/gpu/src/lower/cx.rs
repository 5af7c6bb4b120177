//! What every op family's lowering uses: operands and their checks, buffers and constants, the
//! dispatch grid and the adapter's limits.

use nnrt_core::{Activation, CompileCtx, DType, OpId, OpKind, OperandId};

use super::{Buf, Consts, Dispatch, Limits};
use crate::device::PipelineKey;
use crate::shaders::PARAM_WORDS;

/// A lowering's result; the error is why the gpu cannot run the op.
pub(crate) type R<T> = Result<T, String>;

/// What lowering one op sees: the graph, the op, the constants so far and the adapter's limits.
pub(crate) struct Cx<'a, 'b> {
    pub(super) ctx: &'a CompileCtx<'b>,
    pub(super) op: OpId,
    pub(super) consts: &'a mut Consts,
    pub(super) limits: Limits,
}

/// The prelude's `ACT` code of a fused activation.
pub(super) fn act_code(a: Activation) -> R<u32> {
    Ok(match a {
        Activation::None => 0,
        Activation::Relu => 1,
        Activation::ReluN1To1 => 2,
        Activation::Relu6 => 3,
        Activation::Tanh => 4,
        Activation::SignBit => return Err("fused activation SIGN_BIT is not supported on gpu".into()),
    })
}

/// Number of elements of dims `d`.
pub(super) fn numel(d: &[usize]) -> usize {
    d.iter().product()
}

/// `v` as a shader index.
pub(super) fn u(v: usize) -> R<u32> {
    u32::try_from(v).map_err(|_| format!("size {v} does not fit the shaders' 32-bit indices"))
}

/// Left-pads `d` with 1s to 6 dims.
pub(super) fn pad6(d: &[usize]) -> R<[usize; 6]> {
    if d.len() > 6 {
        return Err(format!("rank {} is over the gpu kernels' 6", d.len()));
    }
    let mut out = [1usize; 6];
    out[6 - d.len()..].copy_from_slice(d);
    Ok(out)
}

/// `v` as shader indices.
pub(super) fn words(v: &[usize]) -> R<Vec<u32>> {
    v.iter().map(|&v| u(v)).collect()
}

/// The refusal of an op kind the gpu has no kernel for.
pub(super) fn no_kernel<T>(kind: &OpKind) -> R<T> {
    Err(format!("{} has no gpu kernel", kind.name()))
}

/// Row-major strides of dims `d`.
pub(super) fn strides(d: &[usize]) -> Vec<usize> {
    let mut s = vec![1usize; d.len()];
    for i in (0..d.len().saturating_sub(1)).rev() {
        s[i] = s[i + 1] * d[i + 1];
    }
    s
}

impl Cx<'_, '_> {
    pub(super) fn graph(&self) -> &nnrt_core::Subgraph {
        self.ctx.graph
    }

    pub(super) fn input(&self, i: usize) -> R<OperandId> {
        self.graph().op(self.op).input(i).ok_or_else(|| format!("input {i} is absent"))
    }

    pub(super) fn output(&self) -> R<OperandId> {
        let outs = &self.graph().op(self.op).outputs;
        match outs.as_slice() {
            [o] => Ok(*o),
            _ => Err(format!("{} outputs; gpu kernels write one", outs.len())),
        }
    }

    /// Input 0 and the output, checked to be float32.
    pub(super) fn f32_in_out(&self) -> R<(OperandId, OperandId)> {
        let (x, o) = (self.input(0)?, self.output()?);
        self.expect_f32(x, "the input")?;
        self.expect_f32(o, "the output")?;
        Ok((x, o))
    }

    /// Inputs 0 and 1 and the output, checked to be float32; `what` names the inputs in errors.
    pub(super) fn f32_pair(&self, what: [&str; 2]) -> R<(OperandId, OperandId, OperandId)> {
        let (a, b, o) = (self.input(0)?, self.input(1)?, self.output()?);
        self.expect_f32(a, what[0])?;
        self.expect_f32(b, what[1])?;
        self.expect_f32(o, "the output")?;
        Ok((a, b, o))
    }

    /// Input 0 and the output of an NHWC op, checked to be 4-D float32, with their dims.
    pub(super) fn nhwc_f32(&self, what: &str) -> R<(OperandId, OperandId, Vec<usize>, Vec<usize>)> {
        let (x, o) = self.f32_in_out()?;
        let (xd, od) = (self.dims(x).to_vec(), self.dims(o).to_vec());
        if xd.len() != 4 || od.len() != 4 {
            return Err(format!("{what} tensors must be 4-D"));
        }
        Ok((x, o, xd, od))
    }

    pub(super) fn dims(&self, id: OperandId) -> &[usize] {
        self.ctx.dims(id)
    }

    pub(super) fn dtype(&self, id: OperandId) -> DType {
        self.graph().operand(id).dtype
    }

    pub(super) fn expect_f32(&self, id: OperandId, what: &str) -> R<()> {
        match self.dtype(id) {
            DType::F32 => Ok(()),
            d => Err(format!("{what} is {d}; gpu kernels compute in float32")),
        }
    }

    pub(super) fn expect_word(&self, id: OperandId, what: &str) -> R<()> {
        match self.dtype(id) {
            DType::F32 | DType::I32 => Ok(()),
            d => Err(format!("{what} is {d}; this gpu kernel moves 4-byte elements (float32, int32)")),
        }
    }

    /// Checks a tensor against the adapter's binding size.
    pub(super) fn fits(&self, id: OperandId) -> R<()> {
        let bytes = (numel(self.dims(id)) * self.dtype(id).size()) as u64;
        if numel(self.dims(id)) == 0 {
            return Err(format!("tensor {id} is empty"));
        }
        if bytes > self.limits.max_binding {
            return Err(format!("tensor {id} ({bytes} bytes) is over the adapter's storage binding limit ({} bytes)", self.limits.max_binding));
        }
        Ok(())
    }

    /// The buffer of operand `id`: its constant data, or the tensor.
    pub(super) fn buf(&mut self, id: OperandId) -> R<Buf> {
        self.fits(id)?;
        let o = self.ctx.graph.operand(id);
        match &o.data {
            None => Ok(Buf::Tensor(id)),
            Some(d) => {
                Ok(self.consts.operand(id, false, || d.bytes().to_vec()))
            }
        }
    }

    /// Whether weights are stored as f16 (`GPU_PRECISION=f16` and an adapter with f16 shaders).
    pub(super) fn f16_weights(&self) -> bool {
        self.limits.f16 && self.ctx.config.get("GPU_PRECISION").is_some_and(|v| v.trim().eq_ignore_ascii_case("f16"))
    }

    /// The buffer of weight operand `id` and the shader variant reading it: constant f32 weights
    /// become f16 when [`Cx::f16_weights`]; anything else is bound as it is.
    pub(super) fn weights(&mut self, id: OperandId, shader: &'static str, shader_f16: &'static str) -> R<(Buf, &'static str)> {
        let o = self.ctx.graph.operand(id);
        let Some(d) = o.data.as_ref().filter(|_| self.f16_weights() && o.dtype == DType::F32) else {
            return Ok((self.buf(id)?, shader));
        };
        self.fits(id)?;
        let halves = || d.bytes().chunks_exact(4).flat_map(|c| half::f16::from_f32(f32::from_le_bytes([c[0], c[1], c[2], c[3]])).to_le_bytes()).collect();
        Ok((self.consts.operand(id, true, halves), shader_f16))
    }

    pub(super) fn const_ints(&self, id: OperandId, what: &str) -> R<Vec<i64>> {
        let o = self.graph().operand(id);
        let d = o.data.as_ref().ok_or_else(|| format!("{what} is not a constant"))?;
        let b = d.bytes();
        Ok(match o.dtype {
            DType::I32 => b.chunks_exact(4).map(|c| i64::from(i32::from_le_bytes([c[0], c[1], c[2], c[3]]))).collect(),
            DType::I64 => b.chunks_exact(8).map(|c| i64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]])).collect(),
            d => return Err(format!("{what} is {d}, not int32/int64")),
        })
    }

    /// Bias input `i` (absent → zeros of `n`), checked to hold `n` floats.
    pub(super) fn bias(&mut self, i: usize, n: usize) -> R<Buf> {
        match self.graph().op(self.op).input(i) {
            Some(b) => {
                self.expect_f32(b, "the bias")?;
                if numel(self.dims(b)) != n {
                    return Err(format!("the bias has {} elements, expected {n}", numel(self.dims(b))));
                }
                self.buf(b)
            }
            None => Ok(self.consts.push(|| vec![0u8; n * 4])),
        }
    }

    /// A 1-D kernel over `threads` threads: 64-wide workgroups on a 2-D grid.
    pub(super) fn grid(&self, threads: usize) -> R<[u32; 3]> {
        let g = threads.div_ceil(64);
        let max = self.limits.max_groups as usize;
        if g <= max {
            return Ok([u(g)?, 1, 1]);
        }
        let y = g.div_ceil(max);
        if y > max {
            return Err(format!("{threads} threads are over the adapter's workgroup grid ({max} per dimension)"));
        }
        Ok([u(g.div_ceil(y))?, u(y)?, 1])
    }

    pub(super) fn dispatch(&self, shader: &'static str, constants: Vec<(&'static str, u32)>, params: Vec<u32>, bufs: Vec<Buf>, groups: [u32; 3]) -> R<Dispatch> {
        if params.len() > PARAM_WORDS {
            return Err(format!("{} parameters are over the {PARAM_WORDS} a dispatch passes", params.len()));
        }
        if bufs.len() as u32 > self.limits.max_storage {
            return Err(format!("{} storage buffers are over the adapter's {} per stage", bufs.len(), self.limits.max_storage));
        }
        if groups.iter().any(|&g| g > self.limits.max_groups) {
            return Err(format!("workgroup grid {groups:?} is over the adapter's {} per dimension", self.limits.max_groups));
        }
        Ok(Dispatch { key: PipelineKey { shader, constants }, params, bufs, groups })
    }
}
