//! Packed weights kept from one preparation for another: what lets an ahead-of-time artifact
//! (`nnrt-compile`) map its weights already packed instead of packing them at create.
//!
//! Packers get their storage through [`lines`]. Normally that packs. While `nnrt-compile` builds
//! an artifact's steps ([`record`]), every packed block is also copied out, in order, with a tag
//! naming the packer and the facts its layout depends on (instruction set, dims); the compiler
//! writes them into the parameters file. When the artifact builds the same steps at create
//! ([`replay`]), each packer's request is answered by the next recorded block, borrowed from the
//! mapped file, if its tag and facts are the same and its bytes aligned; at the first block that
//! differs (another CPU: another instruction set or layout) replay stops and the rest is packed
//! as at prepare. The steps are built in the same order from the same graph, so the sequence is
//! the same on the same CPU; the packers' source is part of the kernel ABI hash, so a parameters
//! file from another packing code is refused before this is reached.

use std::cell::RefCell;

use nnrt_core::ConstData;

use crate::lines::Lines;

/// A hash of the packers' source: a parameters file whose packed blocks another packing code made
/// is refused (`nnrt-aot`'s kernel ABI includes it).
pub const PACK_ABI: u64 = {
    let a = fnv(FNV_OFFSET, include_str!("kernels/gemm.rs").as_bytes());
    let b = fnv(a, include_str!("quant/gemm.rs").as_bytes());
    let c = fnv(b, include_str!("quant/depthwise.rs").as_bytes());
    fnv(c, include_str!("prepack.rs").as_bytes())
};

/// The FNV-1a offset basis: `fnv(FNV_OFFSET, bytes)` is the 64-bit FNV-1a hash of `bytes`.
pub const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;

/// Continues a 64-bit FNV-1a hash `h` over `bytes` (the consistency hashes of artifacts and
/// their packed blocks; not a security measure).
pub const fn fnv(mut h: u64, bytes: &[u8]) -> u64 {
    let mut i = 0;
    while i < bytes.len() {
        h ^= bytes[i] as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
        i += 1;
    }
    h
}

/// What a packed block is: its packer (`tag`), the facts its layout depends on, and its element
/// size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockKey {
    /// The packer and the part of its result (e.g. the float GEMM's panels).
    pub tag: u32,
    /// Instruction set or layout, dims: whatever the packed layout depends on.
    pub facts: [u64; 4],
    /// Bytes per element.
    pub elem: u32,
}

/// A recorded packed block.
#[derive(Clone, Debug)]
pub struct Block {
    /// What it is.
    pub key: BlockKey,
    /// Its bytes.
    pub bytes: Vec<u8>,
}

/// Tally of a replay: blocks borrowed, and blocks packed again (another CPU or layout).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReplayStats {
    /// Blocks answered from the mapped file.
    pub mapped: usize,
    /// Blocks packed at create.
    pub packed: usize,
}

enum Store {
    Record(Vec<Block>),
    Replay { blocks: Vec<(BlockKey, ConstData)>, next: usize, stopped: bool, stats: ReplayStats },
}

thread_local! {
    static STORE: RefCell<Option<Store>> = const { RefCell::new(None) };
}

/// Runs `f` recording every packed block (on this thread), and returns them in order.
pub fn record<R>(f: impl FnOnce() -> R) -> (R, Vec<Block>) {
    let old = STORE.with(|s| s.borrow_mut().replace(Store::Record(Vec::new())));
    let r = f();
    let blocks = match STORE.with(|s| std::mem::replace(&mut *s.borrow_mut(), old)) {
        Some(Store::Record(b)) => b,
        _ => Vec::new(),
    };
    (r, blocks)
}

/// Runs `f` answering packers from `blocks`, in order, as long as they match.
pub fn replay<R>(blocks: Vec<(BlockKey, ConstData)>, f: impl FnOnce() -> R) -> (R, ReplayStats) {
    let old = STORE.with(|s| s.borrow_mut().replace(Store::Replay { blocks, next: 0, stopped: false, stats: ReplayStats::default() }));
    let r = f();
    let stats = match STORE.with(|s| std::mem::replace(&mut *s.borrow_mut(), old)) {
        Some(Store::Replay { stats, .. }) => stats,
        _ => ReplayStats::default(),
    };
    (r, stats)
}

/// Storage for `len` packed values of `T` that `fill` writes, identified by `tag` and `facts`:
/// packed here, or (replaying) borrowed from an artifact's parameters.
pub(crate) fn lines<T: bytemuck::Pod + Default>(tag: u32, facts: [u64; 4], len: usize, fill: impl FnOnce(&mut [T])) -> Lines<T> {
    let key = BlockKey { tag, facts, elem: std::mem::size_of::<T>() as u32 };
    let mapped = STORE.with(|s| match &mut *s.borrow_mut() {
        Some(Store::Replay { blocks, next, stopped, stats }) => {
            let hit = match blocks.get(*next) {
                Some((k, data)) if !*stopped && *k == key && data.len() == len * std::mem::size_of::<T>() => Lines::mapped(data.clone()),
                _ => None,
            };
            match hit {
                Some(l) => {
                    *next += 1;
                    stats.mapped += 1;
                    Some(l)
                }
                None => {
                    *stopped = true;
                    stats.packed += 1;
                    None
                }
            }
        }
        _ => None,
    });
    if let Some(l) = mapped {
        return l;
    }
    let l = Lines::build(len, fill);
    STORE.with(|s| {
        if let Some(Store::Record(blocks)) = &mut *s.borrow_mut() {
            blocks.push(Block { key, bytes: bytemuck::cast_slice::<T, u8>(&l).to_vec() });
        }
    });
    l
}

/// Tags of the packers.
pub(crate) mod tag {
    /// The float GEMM's panels (`kernels::gemm::PackedB`).
    pub const F32_PANELS: u32 = 1;
    /// The integer GEMM's byte quads (`quant::gemm::QPackedB`, VNNI layout).
    pub const Q_QUADS: u32 = 2;
    /// The integer GEMM's int8 pairs (AVX2 layout, widened by the kernel as it loads them).
    pub const Q_PAIRS: u32 = 3;
    /// The integer GEMM's per-column weight sums.
    pub const Q_COL_SUM: u32 = 4;
    /// The integer GEMM's per-column weight zero points.
    pub const Q_ZW: u32 = 5;
    /// The 8-bit depthwise convolution's weights in groups of 4 taps (`quant::depthwise`,
    /// VNNI layout).
    pub const Q_DW_QUADS: u32 = 6;
}
