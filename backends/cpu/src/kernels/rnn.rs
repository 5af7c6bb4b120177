//! Float kernels of the basic RNN cell and SVDF (the reference twins are these plain loops;
//! the sizes in real models are small).
#![forbid(unsafe_code)]

use super::Act;

/// An activation as RNN cells apply it: a clamp, or tanh.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CellAct {
    /// The clamp (none for tanh).
    pub clamp: Act,
    /// Apply tanh after the clamp.
    pub tanh: bool,
}

impl CellAct {
    fn apply(self, x: f32) -> f32 {
        let y = self.clamp.apply(x);
        if self.tanh {
            y.tanh()
        } else {
            y
        }
    }
}

/// `dot(a, b)` accumulated in order.
fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// One RNN step for `batch` rows: `h = act(x W^T + h R^T + b)`, written to `h` and to `out`
/// (`batch` rows of `units`). `w` is `[units, input]`, `r` `[units, units]`.
#[allow(clippy::too_many_arguments)]
pub fn rnn_step(x: &[f32], w: &[f32], r: &[f32], bias: &[f32], input: usize, units: usize, act: CellAct, h: &mut [f32], out: &mut [f32]) {
    let batch = h.len().checked_div(units).unwrap_or(0);
    let mut next = vec![0f32; units];
    for b in 0..batch {
        let xb = &x[b * input..(b + 1) * input];
        let hb = &h[b * units..(b + 1) * units];
        for (u, n) in next.iter_mut().enumerate() {
            *n = act.apply(bias[u] + dot(&w[u * input..(u + 1) * input], xb) + dot(&r[u * units..(u + 1) * units], hb));
        }
        h[b * units..(b + 1) * units].copy_from_slice(&next);
        out[b * units..(b + 1) * units].copy_from_slice(&next);
    }
}

/// SVDF sizes.
#[derive(Clone, Copy, Debug)]
pub struct SvdfGeom {
    /// Rows.
    pub batch: usize,
    /// Input features.
    pub input: usize,
    /// Feature filters.
    pub filters: usize,
    /// Filters per unit.
    pub rank: usize,
    /// Remembered steps per filter.
    pub memory: usize,
}

/// One SVDF step. `state` (`[batch, filters, memory]`) shifts one step left and takes the new
/// feature activations `x wf^T` in its last column; each filter's output is its memory dotted
/// with its time weights `wt` (`[filters, memory]`); `rank` consecutive filters sum into a unit,
/// plus `bias`, then the activation.
#[allow(clippy::too_many_arguments)]
pub fn svdf_step(g: &SvdfGeom, x: &[f32], wf: &[f32], wt: &[f32], bias: Option<&[f32]>, act: CellAct, state: &mut [f32], out: &mut [f32]) {
    let (m, nf) = (g.memory, g.filters);
    let units = nf.checked_div(g.rank).unwrap_or(0);
    if m == 0 {
        out.fill(0.0);
    }
    for b in 0..g.batch {
        let xb = &x[b * g.input..(b + 1) * g.input];
        let sb = &mut state[b * nf * m..(b + 1) * nf * m];
        let mut filt = vec![0f32; nf];
        for (f, slot) in filt.iter_mut().enumerate() {
            let mem = &mut sb[f * m..(f + 1) * m];
            if m > 0 {
                mem.copy_within(1.., 0);
                mem[m - 1] = dot(&wf[f * g.input..(f + 1) * g.input], xb);
            }
            *slot = dot(&wt[f * m..(f + 1) * m], mem);
        }
        for u in 0..units {
            let s: f32 = filt[u * g.rank..(u + 1) * g.rank].iter().sum();
            let v = s + bias.map_or(0.0, |bb| bb[u]);
            out[b * units + u] = act.apply(v);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rnn_step_feeds_the_state_back() {
        let act = CellAct { clamp: Act::NONE, tanh: false };
        let (mut h, mut out) = (vec![1.0], vec![0.0]);
        rnn_step(&[2.0], &[3.0], &[0.5], &[1.0], 1, 1, act, &mut h, &mut out);
        assert_eq!((h[0], out[0]), (7.5, 7.5));
    }
}
