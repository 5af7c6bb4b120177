//! TOSA's lowering of a float32 QUANTIZE as one loop: `MUL` by the reciprocal scale, `ROUND`
//! (half to even), `CAST` to int32, `ADD` of the zero point (wrapping int32), `CAST` to int8 or
//! int16 (the low bits). As a [`super::Run`] those are five passes over 64-bit lanes plus the
//! load and store (~0.3 us on a 12x12x3 input, where TFLite's QUANTIZE takes ~0.1); here each
//! element goes through the five ops' own functions at once, in float32 and int32 lanes, and
//! the loop vectorizes. Same bits as the ops one by one (the run's tests compare them).

use nnrt_core::{cast, cast_mut, DType, TensorMut, TensorRef, UnaryOp};

use super::{Lane, Run};
use crate::kernel::Kernel;
use crate::kernels::binary::{op_f32, BinaryOp as K};
use crate::kernels::cast::f32_to_i32;
use crate::simd::{Wide, WideBody};

/// The five ops' constants and the output type.
pub(super) struct LoweredQuantize {
    /// The multiplier (the reciprocal scale), and whether it is MUL's first operand.
    inv: f32,
    inv_first: bool,
    zero_point: i32,
    /// int8 or int16.
    to: DType,
    n: usize,
    wide: Wide,
}

impl LoweredQuantize {
    /// The form of `run` when it is exactly the lowering: one float32 input, the five steps in
    /// order each reading the previous one's value and one-element constants, and only the
    /// last value stored.
    pub(super) fn of(run: &Run) -> Option<LoweredQuantize> {
        let &[(x, DType::F32)] = run.loads.as_slice() else { return None };
        let [mul, round, to_i32, add, narrow] = run.steps.as_slice() else { return None };
        let &[(y, to @ (DType::I8 | DType::I16))] = run.stores.as_slice() else { return None };
        let n = run.slots[x].len();
        // A one-element constant: not loaded, not written by a step.
        let constant = |s: usize| (run.slots[s].len() == 1 && !run.loads.iter().any(|l| l.0 == s) && !run.steps.iter().any(|t| t.dst == s)).then(|| run.slots[s][0]);
        let (inv, inv_first) = match (&mul.lane, mul.b) {
            (Lane::FBin(K::Mul), Some(b)) if mul.a == x => (constant(b)?, false),
            (Lane::FBin(K::Mul), Some(b)) if b == x => (constant(mul.a)?, true),
            _ => return None,
        };
        let follows = |s: &super::Step, prev: &super::Step| s.a == prev.dst && s.b.is_none();
        (matches!(round.lane, Lane::FUnary(UnaryOp::Round)) && follows(round, mul)).then_some(())?;
        (matches!(to_i32.lane, Lane::Cast(DType::F32, DType::I32)) && follows(to_i32, round)).then_some(())?;
        let zero_point = match (&add.lane, add.b) {
            (Lane::Add, Some(b)) if add.a == to_i32.dst && add.out == DType::I32 => constant(b)?,
            (Lane::Add, Some(b)) if b == to_i32.dst && add.out == DType::I32 => constant(add.a)?,
            _ => return None,
        };
        (matches!(narrow.lane, Lane::Cast(DType::I32, t) if t == to) && follows(narrow, add) && y == narrow.dst).then_some(())?;
        Some(LoweredQuantize { inv: super::f(inv), inv_first, zero_point: i32::try_from(zero_point).ok()?, to, n, wide: run.wide })
    }
}

/// One element through the five ops.
#[inline(always)]
fn quantize(v: f32, inv: f32, inv_first: bool, zero_point: i32) -> i32 {
    let m = if inv_first { op_f32(K::Mul, inv, v) } else { op_f32(K::Mul, v, inv) };
    f32_to_i32(m.round_ties_even()).wrapping_add(zero_point)
}

/// The loop, compiled once per [`Wide`] form.
struct Body<'a> {
    q: &'a LoweredQuantize,
    x: &'a [f32],
    out: &'a mut [u8],
}

impl WideBody for Body<'_> {
    #[inline(always)]
    fn body(&mut self) {
        let (inv, first, zp) = (self.q.inv, self.q.inv_first, self.q.zero_point);
        match self.q.to {
            DType::I8 => {
                if let Ok(out) = cast_mut::<i8>(self.out) {
                    out.iter_mut().zip(self.x).for_each(|(o, &v)| *o = quantize(v, inv, first, zp) as i8);
                }
            }
            _ => {
                if let Ok(out) = cast_mut::<i16>(self.out) {
                    out.iter_mut().zip(self.x).for_each(|(o, &v)| *o = quantize(v, inv, first, zp) as i16);
                }
            }
        }
    }
}

impl Kernel for LoweredQuantize {
    fn run(&mut self, ins: &[TensorRef<'_>], outs: &mut [TensorMut<'_>]) -> Result<(), String> {
        let (Some(x), Some(y)) = (ins.first(), outs.first_mut()) else { return Err("a lowered QUANTIZE takes one input and one output".into()) };
        let x = cast::<f32>(x.bytes)?;
        if x.len() != self.n || y.bytes.len() != self.n * self.to.size() {
            return Err(format!("a lowered QUANTIZE of {} elements got {} in and {} bytes out", self.n, x.len(), y.bytes.len()));
        }
        let wide = self.wide;
        wide.run(&mut Body { q: self, x, out: y.bytes });
        Ok(())
    }
}
