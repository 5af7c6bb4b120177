//! A run whose values read after it are each a function of one or two int8 inputs, built at
//! compile as tables of every input byte (pair): the run's steps evaluated once over all 256
//! (65 536) keys, then one lookup per element and output at run time.

use nnrt_core::DType;

use super::{store, Lane, Run, Step, Steps};
use crate::kernel::Kernel;

/// Most two-input tables (64 KiB each) one run may build.
const MAX_PAIR_TABLES: usize = 4;
/// Fewest elements for which a run builds two-input tables: building one evaluates the steps
/// that depend on both inputs over 65 536 pairs (about a millisecond for TOSA's quantized ADD,
/// MUL and SUB of a 256-element tensor), which a run of `n` elements repays after about
/// 65 536 / `n` runs.
const MIN_PAIR_ELEMENTS: usize = 128;

/// The inputs one value of the run is a function of: one int8 input (256 results) or two
/// (65 536 results, indexed by the first input's byte then the second's).
#[derive(Clone, Copy, Debug, PartialEq)]
enum Key {
    One(usize),
    Two(usize, usize),
}

/// One output's results for every key.
#[derive(Debug)]
enum Table {
    /// 8-bit results of one input, looked up 64 bytes a step where the CPU can.
    Bytes(Box<[u8; 256]>),
    /// Results of one input, of the output's type (any width), sign-extended (float32 as
    /// its bits).
    Wide(Vec<i64>),
    /// 8-bit results of two inputs.
    Pair(Vec<u8>),
}

/// A run whose int8 inputs all hold the run's element count and whose steps treat every element
/// alike (no per-channel RESCALE, no constant of more than one value), so that each value read
/// after it is a function of the bytes of at most two inputs at the same position (an int8
/// softmax reads one; TOSA's quantized ADD/SUB/MUL two). Its results for every byte (every pair)
/// are computed once, at build, by the run itself over all of them; a run is then one lookup
/// per element and output instead of every op's arithmetic over 64-bit lanes: the same
/// integers (the test compares both with the ops one by one).
pub(super) struct Tabled {
    /// Elements per input and output.
    n: usize,
    /// For each output, in the run's order: the inputs it is a function of, its table and type.
    outs: Vec<(Key, Table, DType)>,
}

impl Tabled {
    pub(super) fn of(run: &Run) -> Option<Tabled> {
        let n = run.slots.get(run.loads.first()?.0)?.len();
        if n <= 1 || run.loads.len() > 64 || run.loads.iter().any(|&(s, t)| t != DType::I8 || run.slots[s].len() != n) {
            return None;
        }
        // Which inputs each value depends on (a bit per input); constants depend on none and
        // must be one value, the same at every element.
        let mut deps = vec![0u64; run.slots.len()];
        let mut written = vec![false; run.slots.len()];
        for (k, &(s, _)) in run.loads.iter().enumerate() {
            deps[s] = 1 << k;
            written[s] = true;
        }
        for st in &run.steps {
            let uniform = match &st.lane {
                Lane::Rescale8(_, ch) => *ch <= 1,
                Lane::Rescale(r, ..) => r.multiplier.len() <= 1 && r.shift.len() <= 1,
                _ => true,
            };
            if !uniform {
                return None;
            }
            deps[st.dst] = deps[st.a] | st.b.map_or(0, |b| deps[b]);
            written[st.dst] = true;
        }
        if run.slots.iter().zip(&written).any(|(v, &w)| !w && v.len() != 1) {
            return None;
        }
        let mut keys = Vec::with_capacity(run.stores.len());
        for &(s, t) in &run.stores {
            if run.slots[s].len() != n {
                return None;
            }
            let key = match deps[s].count_ones() {
                0 => Key::One(0),
                1 => Key::One(deps[s].trailing_zeros() as usize),
                2 if t == DType::I8 && n >= MIN_PAIR_ELEMENTS => {
                    let first = deps[s].trailing_zeros() as usize;
                    Key::Two(first, (deps[s] & !(1 << first)).trailing_zeros() as usize)
                }
                _ => return None,
            };
            keys.push(key);
        }
        let mut distinct: Vec<Key> = Vec::new();
        keys.iter().for_each(|k| if !distinct.contains(k) { distinct.push(*k) });
        if distinct.iter().filter(|k| matches!(k, Key::Two(..))).count() > MAX_PAIR_TABLES {
            return None;
        }
        let mut results: Vec<Vec<i64>> = vec![Vec::new(); run.stores.len()];
        for key in distinct {
            // One input: one pass over its 256 bytes. Two: a pass per byte of the first (`lead`,
            // one lane) over the 256 bytes of the second; values that do not depend on the
            // second are one lane, and steps that do not depend on the first run in the first
            // pass only (their lanes stay as they are).
            let (lead, wide_load) = match key {
                Key::One(a) => (None, a),
                Key::Two(a, b) => (Some(a), b),
            };
            let wide_mask = 1u64 << wide_load;
            let lead_mask = lead.map_or(0, |a| 1u64 << a);
            let mine: Vec<usize> = keys.iter().enumerate().filter(|(_, k)| **k == key).map(|(j, _)| j).collect();
            // The steps these outputs need, found backwards from them.
            let mut needed = vec![false; run.slots.len()];
            mine.iter().for_each(|&j| needed[run.stores[j].0] = true);
            let mut keep = vec![false; run.steps.len()];
            for (i, st) in run.steps.iter().enumerate().rev() {
                if needed[st.dst] {
                    keep[i] = true;
                    needed[st.a] = true;
                    st.b.iter().for_each(|&b| needed[b] = true);
                }
            }
            let first: Vec<Step> = run.steps.iter().zip(&keep).filter(|(_, &k)| k).map(|(st, _)| st.clone()).collect();
            let again: Vec<Step> = first.iter().filter(|st| deps[st.dst] & lead_mask != 0).cloned().collect();
            let mut slots: Vec<Vec<i64>> = run
                .slots
                .iter()
                .zip(&deps)
                .map(|(v, &d)| match (v.len() == n, d & wide_mask != 0) {
                    (true, true) => vec![0; 256],
                    (true, false) => vec![0],
                    (false, _) => v.clone(),
                })
                .collect();
            let wide_slot = run.loads[wide_load].0;
            slots[wide_slot].iter_mut().enumerate().for_each(|(i, v)| *v = i64::from(i as u8 as i8));
            let passes = if lead.is_some() { 256 } else { 1 };
            for pass in 0..passes {
                if let Some(a) = lead {
                    slots[run.loads[a].0] = vec![i64::from(pass as u8 as i8)];
                }
                let steps = if pass == 0 { &first } else { &again };
                run.wide.run(&mut Steps { steps, slots: &mut slots });
                for &j in &mine {
                    let v = &slots[run.stores[j].0];
                    match v.len() {
                        1 => results[j].extend(std::iter::repeat_n(v[0], 256)),
                        _ => results[j].extend_from_slice(v),
                    }
                }
            }
        }
        let outs = keys
            .into_iter()
            .zip(results)
            .zip(&run.stores)
            .map(|((key, r), &(_, t))| {
                // Entries indexed by the input's byte as unsigned: byte b is the int8 value b as i8.
                let table = match (key, t) {
                    (Key::One(_), DType::I8) => {
                        let mut b = Box::new([0u8; 256]);
                        b.iter_mut().zip(&r).for_each(|(o, &v)| *o = v as u8);
                        Table::Bytes(b)
                    }
                    (Key::One(_), _) => Table::Wide(r),
                    (Key::Two(..), _) => Table::Pair(r.iter().map(|&v| v as u8).collect()),
                };
                (key, table, t)
            })
            .collect();
        Some(Tabled { n, outs })
    }
}

impl Kernel for Tabled {
    fn run(&mut self, ins: &[nnrt_core::TensorRef<'_>], outs: &mut [nnrt_core::TensorMut<'_>]) -> Result<(), String> {
        let n = self.n;
        if let Some(t) = ins.iter().find(|t| t.bytes.len() != n) {
            return Err(format!("an input of the int chain has {} elements; {n} expected", t.bytes.len()));
        }
        let input = |k: usize| ins.get(k).map(|t| t.bytes).ok_or_else(|| format!("the int chain reads input {k}, which is missing"));
        for ((key, table, t), o) in self.outs.iter().zip(outs.iter_mut()) {
            match (key, table) {
                (&Key::One(k), Table::Bytes(table)) => {
                    let out = o.bytes.get_mut(..n).ok_or("an output of the int chain is too short")?;
                    crate::simd::lut::lut8(table, input(k)?, out);
                }
                (&Key::One(k), Table::Wide(table)) => {
                    store(input(k)?.iter().map(|&b| table[usize::from(b)]), *t, o.bytes)?;
                }
                (&Key::Two(a, b), Table::Pair(table)) => {
                    let (x, y) = (input(a)?, input(b)?);
                    let out = o.bytes.get_mut(..n).ok_or("an output of the int chain is too short")?;
                    for ((o, &x), &y) in out.iter_mut().zip(x).zip(y) {
                        *o = table[(usize::from(x) << 8) | usize::from(y)];
                    }
                }
                _ => return Err("an int chain table does not match its key".into()),
            }
        }
        Ok(())
    }
}
