//! A compiled gpu partition: device buffers planned by lifetime, pipelines and bind groups built
//! at compile, and a run that uploads the partition's inputs, records every dispatch into one
//! command buffer, submits once and reads back only the tensors used outside the partition.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use nnrt_core::{CompileCtx, CompileError, Executable, OpId, OperandId, RunError, TensorArena};
use wgpu::util::DeviceExt;

use crate::device::Gpu;
use crate::lower::{lower, Buf, Consts, Dispatch, Limits, Lowered};
use crate::shaders::PARAM_WORDS;

struct Step {
    op: OpId,
    pipeline: Arc<wgpu::ComputePipeline>,
    bind: wgpu::BindGroup,
    groups: [u32; 3],
}

/// A tensor read back after the run: from a device buffer into the arena slot of `id`.
struct Download {
    id: OperandId,
    src: usize,
    staging_offset: u64,
    len: usize,
}

pub(crate) struct GpuExecutable {
    gpu: Arc<Gpu>,
    first_op: OpId,
    steps: Vec<Step>,
    /// Device buffers: the planned slots, then the constants.
    buffers: Vec<wgpu::Buffer>,
    uploads: Vec<(OperandId, usize)>,
    downloads: Vec<Download>,
    staging: Option<wgpu::Buffer>,
    /// Kept alive for the bind groups.
    _params: Vec<wgpu::Buffer>,
    /// Padding for uploads whose size is not a multiple of 4 (reused across runs).
    scratch: Vec<u8>,
    /// When profiling: wall time per op, each op submitted and waited for on its own.
    times: Option<Vec<(OpId, std::time::Duration)>>,
}

fn align4(n: usize) -> usize {
    n.div_ceil(4) * 4
}

fn compile_err(op: OpId, reason: String) -> CompileError {
    CompileError::InvalidOp { op, kind: "gpu partition".into(), reason }
}

/// Byte size of operand `id`.
fn bytes_of(ctx: &CompileCtx, id: OperandId) -> usize {
    ctx.dims(id).iter().product::<usize>() * ctx.graph.operand(id).dtype.size()
}

impl GpuExecutable {
    pub(crate) fn new(gpu: Arc<Gpu>, ctx: &CompileCtx, ops: &[OpId]) -> Result<GpuExecutable, CompileError> {
        let first_op = *ops.first().ok_or_else(|| compile_err(OpId::new(0), "empty partition".into()))?;
        let limits = Limits::of(&gpu);
        let mut consts = Consts::default();
        // Lower every op; aliases (reshape and friends) map their output to the buffer of their input.
        let mut root: HashMap<OperandId, Buf> = HashMap::new();
        let resolve = |root: &HashMap<OperandId, Buf>, b: Buf| match b {
            Buf::Tensor(id) => root.get(&id).copied().unwrap_or(b),
            c => c,
        };
        let mut dispatches: Vec<(OpId, Dispatch)> = Vec::new();
        let mut produced: Vec<OperandId> = Vec::new();
        for &op in ops {
            let kind = ctx.graph.op(op).kind.name().to_string();
            let lowered = lower(ctx, op, &mut consts, limits).map_err(|reason| CompileError::InvalidOp { op, kind, reason })?;
            match lowered {
                Lowered::Alias { from, to } => {
                    let r = resolve(&root, from);
                    root.insert(to, r);
                    produced.push(to);
                }
                Lowered::Dispatches(ds) => {
                    for mut d in ds {
                        for b in &mut d.bufs {
                            *b = resolve(&root, *b);
                        }
                        dispatches.push((op, d));
                    }
                    produced.extend(ctx.graph.op(op).outputs.iter().copied());
                }
            }
        }

        // Tensors used after this partition (by other ops or as graph outputs) are read back.
        let inside: HashSet<OpId> = ops.iter().copied().collect();
        let mut needed: HashSet<OperandId> = ctx.graph.outputs.iter().copied().collect();
        for (i, op) in ctx.graph.ops.iter().enumerate() {
            if !inside.contains(&OpId::new(i)) {
                needed.extend(op.inputs.iter().flatten().copied());
            }
        }
        let exported: Vec<(OperandId, Buf)> = produced.iter().filter(|t| needed.contains(t)).map(|&t| (t, resolve(&root, Buf::Tensor(t)))).collect();

        // Lifetimes of device tensors over dispatch indices; inputs from the host are live from the start.
        let end = dispatches.len();
        let mut first: HashMap<OperandId, usize> = HashMap::new();
        let mut last: HashMap<OperandId, usize> = HashMap::new();
        let mut written: HashSet<OperandId> = HashSet::new();
        let mut uploads_ids: Vec<OperandId> = Vec::new();
        for (k, (_, d)) in dispatches.iter().enumerate() {
            let (ins, _) = d.bufs.split_at(d.bufs.len().saturating_sub(1));
            for b in ins {
                if let Buf::Tensor(t) = *b {
                    if !written.contains(&t) && !first.contains_key(&t) {
                        first.insert(t, 0);
                        uploads_ids.push(t);
                    }
                    last.insert(t, k);
                }
            }
            if let Buf::Tensor(t) = *d.bufs.last().unwrap_or(&Buf::Const(0)) {
                if written.insert(t) {
                    first.entry(t).or_insert(k);
                }
                last.insert(t, k);
            }
        }
        for (_, b) in &exported {
            if let Buf::Tensor(t) = *b {
                if let std::collections::hash_map::Entry::Vacant(e) = first.entry(t) {
                    // Exported without any dispatch touching it (an alias of a host tensor).
                    e.insert(0);
                    uploads_ids.push(t);
                }
                last.insert(t, end);
            }
        }

        // Greedy best-fit slots: a slot is reused once its tensor's last reader has run.
        let mut slot_of: HashMap<OperandId, usize> = HashMap::new();
        let mut slot_size: Vec<usize> = Vec::new();
        let mut free: Vec<usize> = Vec::new();
        let take = |need: usize, slot_size: &mut Vec<usize>, free: &mut Vec<usize>| -> usize {
            let best = free.iter().enumerate().filter(|(_, &s)| slot_size[s] >= need).min_by_key(|(_, &s)| slot_size[s]).map(|(i, _)| i);
            let pick = best.or_else(|| free.iter().enumerate().max_by_key(|(_, &s)| slot_size[s]).map(|(i, _)| i));
            match pick {
                Some(i) => {
                    let s = free.swap_remove(i);
                    slot_size[s] = slot_size[s].max(need);
                    s
                }
                None => {
                    slot_size.push(need);
                    slot_size.len() - 1
                }
            }
        };
        for &t in &uploads_ids {
            let s = take(align4(bytes_of(ctx, t)).max(4), &mut slot_size, &mut free);
            slot_of.insert(t, s);
        }
        let mut order: Vec<(usize, OperandId)> = first.iter().filter(|(t, _)| !slot_of.contains_key(t)).map(|(&t, &k)| (k, t)).collect();
        order.sort();
        let mut by_start: HashMap<usize, Vec<OperandId>> = HashMap::new();
        for (k, t) in order {
            by_start.entry(k).or_default().push(t);
        }
        let mut by_end: HashMap<usize, Vec<OperandId>> = HashMap::new();
        for (&t, &k) in &last {
            by_end.entry(k).or_default().push(t);
        }
        for k in 0..end {
            for t in by_start.remove(&k).unwrap_or_default() {
                let s = take(align4(bytes_of(ctx, t)).max(4), &mut slot_size, &mut free);
                slot_of.insert(t, s);
            }
            for t in by_end.remove(&k).unwrap_or_default() {
                if let Some(&s) = slot_of.get(&t) {
                    free.push(s);
                }
            }
        }

        let dev = &gpu.device;
        let usage = wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST | wgpu::BufferUsages::COPY_SRC;
        let mut buffers: Vec<wgpu::Buffer> = slot_size
            .iter()
            .enumerate()
            .map(|(i, &size)| dev.create_buffer(&wgpu::BufferDescriptor { label: Some(&format!("slot {i}")), size: size as u64, usage, mapped_at_creation: false }))
            .collect();
        let const_base = buffers.len();
        for (i, c) in consts.data.iter().enumerate() {
            let mut bytes = c.clone();
            bytes.resize(align4(bytes.len()).max(4), 0);
            buffers.push(dev.create_buffer_init(&wgpu::util::BufferInitDescriptor { label: Some(&format!("const {i}")), contents: &bytes, usage }));
        }
        let index = |b: Buf| -> Result<usize, String> {
            match b {
                Buf::Const(k) => Ok(const_base + k),
                Buf::Tensor(t) => slot_of.get(&t).copied().ok_or_else(|| format!("tensor {t} has no device buffer")),
            }
        };

        let mut steps = Vec::with_capacity(dispatches.len());
        let mut params_bufs = Vec::with_capacity(dispatches.len());
        for (op, d) in &dispatches {
            let pipeline = gpu.pipeline(&d.key).map_err(|e| compile_err(*op, e))?;
            let mut words = d.params.clone();
            words.resize(PARAM_WORDS, 0);
            let pbuf = dev.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some("params"),
                contents: bytemuck::cast_slice(&words),
                usage: wgpu::BufferUsages::UNIFORM,
            });
            let mut entries = vec![wgpu::BindGroupEntry { binding: 0, resource: pbuf.as_entire_binding() }];
            for (j, &b) in d.bufs.iter().enumerate() {
                let k = index(b).map_err(|e| compile_err(*op, e))?;
                entries.push(wgpu::BindGroupEntry { binding: j as u32 + 1, resource: buffers[k].as_entire_binding() });
            }
            let layout = pipeline.get_bind_group_layout(0);
            let bind = dev.create_bind_group(&wgpu::BindGroupDescriptor { label: Some(d.key.shader), layout: &layout, entries: &entries });
            steps.push(Step { op: *op, pipeline, bind, groups: d.groups });
            params_bufs.push(pbuf);
        }

        let uploads = uploads_ids.iter().map(|&t| (t, slot_of[&t])).collect();
        let mut downloads = Vec::new();
        let mut staging_size = 0u64;
        for (t, b) in exported {
            let src = index(b).map_err(|e| compile_err(first_op, e))?;
            let len = bytes_of(ctx, t);
            downloads.push(Download { id: t, src, staging_offset: staging_size, len });
            staging_size += align4(len).max(4) as u64;
        }
        let staging = (staging_size > 0).then(|| {
            dev.create_buffer(&wgpu::BufferDescriptor {
                label: Some("readback"),
                size: staging_size,
                usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            })
        });
        gpu.take_errors().map_err(|e| compile_err(first_op, format!("the gpu rejected the partition: {e}")))?;
        log::debug!(
            "gpu partition at {first_op}: {} ops, {} dispatches, {} slots ({} bytes), {} constants, {} uploads, {} downloads",
            ops.len(),
            steps.len(),
            slot_size.len(),
            slot_size.iter().sum::<usize>(),
            consts.data.len(),
            uploads_ids.len(),
            downloads.len()
        );
        Ok(GpuExecutable { gpu, first_op, steps, buffers, uploads, downloads, staging, _params: params_bufs, scratch: Vec::new(), times: None })
    }

    fn fail(&self, reason: String) -> RunError {
        RunError::Kernel { op: self.first_op, kind: format!("gpu partition ({})", self.gpu.adapter_name()), reason }
    }
}

impl Executable for GpuExecutable {
    fn run(&mut self, arena: &mut TensorArena) -> Result<(), RunError> {
        let gpu = self.gpu.clone();
        for &(id, slot) in &self.uploads {
            let bytes = arena.bytes(id).ok_or_else(|| self.fail(format!("input tensor {id} has no arena slot")))?;
            if bytes.len() % 4 == 0 {
                gpu.queue.write_buffer(&self.buffers[slot], 0, bytes);
            } else {
                self.scratch.clear();
                self.scratch.extend_from_slice(bytes);
                self.scratch.resize(align4(bytes.len()), 0);
                gpu.queue.write_buffer(&self.buffers[slot], 0, &self.scratch);
            }
        }
        if let Some(times) = self.times.as_mut() {
            // Profiling: each op's dispatches in a submission of their own, waited for.
            let mut k = 0;
            while k < self.steps.len() {
                let op = self.steps[k].op;
                let n = self.steps[k..].iter().take_while(|s| s.op == op).count();
                let start = std::time::Instant::now();
                let mut enc = gpu.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("nnrt op") });
                record(&mut enc, &self.steps[k..k + n]);
                gpu.queue.submit([enc.finish()]);
                gpu.device.poll(wgpu::PollType::wait_indefinitely()).map_err(|e| RunError::Kernel { op, kind: "gpu".into(), reason: format!("waiting for the gpu failed: {e}") })?;
                match times.iter_mut().find(|(o, _)| *o == op) {
                    Some(t) => t.1 += start.elapsed(),
                    None => times.push((op, start.elapsed())),
                }
                k += n;
            }
        }
        let mut enc = gpu.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("nnrt partition") });
        if self.times.is_none() {
            record(&mut enc, &self.steps);
        }
        if let Some(staging) = &self.staging {
            for d in &self.downloads {
                enc.copy_buffer_to_buffer(&self.buffers[d.src], 0, staging, d.staging_offset, align4(d.len).max(4) as u64);
            }
        }
        gpu.queue.submit([enc.finish()]);
        if let Some(staging) = &self.staging {
            let slice = staging.slice(..);
            let (tx, rx) = std::sync::mpsc::channel();
            slice.map_async(wgpu::MapMode::Read, move |r| {
                let _ = tx.send(r);
            });
            gpu.device.poll(wgpu::PollType::wait_indefinitely()).map_err(|e| self.fail(format!("waiting for the gpu failed: {e}")))?;
            // Sessions on other threads share the device, and their polls may be the ones that
            // run this mapping's callback: keep polling until it has come.
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(600);
            let mapped = loop {
                match rx.recv_timeout(std::time::Duration::from_millis(1)) {
                    Ok(r) => break r,
                    Err(std::sync::mpsc::RecvTimeoutError::Timeout) if std::time::Instant::now() < deadline => {
                        gpu.device.poll(wgpu::PollType::Poll).map_err(|e| self.fail(format!("waiting for the gpu failed: {e}")))?;
                    }
                    Err(_) => return Err(self.fail("the gpu did not finish reading back within 600 s".into())),
                }
            };
            if let Err(e) = mapped {
                return Err(self.fail(format!("reading results back failed: {e}")));
            }
            let mut missing = None;
            {
                let view = match slice.get_mapped_range() {
                    Ok(v) => v,
                    Err(e) => {
                        staging.unmap();
                        return Err(self.fail(format!("reading results back failed: {e}")));
                    }
                };
                for d in &self.downloads {
                    let start = d.staging_offset as usize;
                    match arena.bytes_mut(d.id) {
                        Some(dst) if dst.len() == d.len => dst.copy_from_slice(&view[start..start + d.len]),
                        _ => missing = Some(d.id),
                    }
                }
            }
            staging.unmap();
            if let Some(id) = missing {
                return Err(self.fail(format!("output tensor {id} has no arena slot of its size")));
            }
        } else {
            gpu.device.poll(wgpu::PollType::wait_indefinitely()).map_err(|e| self.fail(format!("waiting for the gpu failed: {e}")))?;
        }
        gpu.take_errors().map_err(|e| self.fail(e))
    }

    fn set_profiling(&mut self, on: bool) {
        self.times = on.then(Vec::new);
    }

    fn op_times(&self) -> Vec<(OpId, std::time::Duration)> {
        self.times.clone().unwrap_or_default()
    }
}

/// Records `steps` into one compute pass.
fn record(enc: &mut wgpu::CommandEncoder, steps: &[Step]) {
    let mut pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor::default());
    for s in steps {
        pass.set_pipeline(&s.pipeline);
        pass.set_bind_group(0, &s.bind, &[]);
        pass.dispatch_workgroups(s.groups[0], s.groups[1], s.groups[2]);
    }
}
