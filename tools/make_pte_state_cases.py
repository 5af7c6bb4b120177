#!/usr/bin/env python3
"""Exports ExecuTorch programs with mutable buffers (state kept from one run of a method to the next,
as a KV cache or a running statistic is) into tests/data/pte_state/<case>/, with the outputs of
ExecuTorch's own runtime for several consecutive runs of one loaded method:

  program.pte, input_0.npy (the same input every run), expected_run<r>_<j>.npy (run r = 0, 1, 2)

Cases:
  counter        buffers with "meaningless" initial contents (not serialized: the runtime's planned
                 memory starts at zero) updated in place with add_; outputs copies of them
  running_mean   a buffer initialized by InitializedMutableBufferPass (its data in a mutable data
                 segment), blended with the input each run (mul_/add_), an int64 step counter, and a
                 buffer written with a broadcast copy_
  *_xnnpack      the same lowered with XnnpackPartitioner (the arithmetic delegated, the write-back
                 copy_ left to the portable kernel)

  /work/venvs/et/bin/python tools/make_pte_state_cases.py [--out tests/data/pte_state]
(executorch 1.5.1 with its torch; see tools/pte_export.py)."""
import argparse, json, os, shutil
import numpy as np
import torch, torch.nn as nn
from executorch.exir import to_edge, to_edge_transform_and_lower, ExecutorchBackendConfig
from executorch.exir.passes.init_mutable_pass import InitializedMutableBufferPass
from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
from executorch.runtime import Runtime


class Counter(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("total", torch.zeros(2, 3))
        self.register_buffer("count", torch.zeros(1))

    def forward(self, x):
        self.total.add_(x)
        self.count.add_(1.0)
        return self.total * 1.0, self.count + 0.0


class RunningMean(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("mean", torch.linspace(-1.0, 1.0, 8).reshape(1, 8))
        self.register_buffer("steps", torch.tensor([5], dtype=torch.int64))
        self.register_buffer("last_row", torch.zeros(4, 8))

    def forward(self, x):
        self.mean.mul_(0.75).add_(x.mean(dim=0, keepdim=True) * 0.25)
        self.steps.add_(1)
        self.last_row.copy_(x[-1:])
        y = torch.relu(x - self.mean)
        return y, self.steps * 2, self.last_row + self.mean


CASES = {
    "counter": (Counter, lambda g: (torch.tensor(g.standard_normal((2, 3)), dtype=torch.float32),), []),
    "running_mean": (RunningMean, lambda g: (torch.tensor(g.standard_normal((4, 8)), dtype=torch.float32),), ["mean", "steps"]),
}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="tests/data/pte_state")
    args = ap.parse_args()
    for name, (cls, make, init) in CASES.items():
        g = np.random.default_rng(sum(map(ord, name)))
        inputs = make(g)
        for lowered in (False, True):
            case = name + ("_xnnpack" if lowered else "")
            torch.manual_seed(0)
            ep = torch.export.export(cls().eval(), inputs, strict=False)
            cfg = ExecutorchBackendConfig(passes=[InitializedMutableBufferPass(init)] if init else [])
            edge = to_edge_transform_and_lower(ep, partitioner=[XnnpackPartitioner()]) if lowered else to_edge(ep)
            prog = edge.to_executorch(cfg)
            d = os.path.join(args.out, case)
            shutil.rmtree(d, ignore_errors=True)
            os.makedirs(d)
            path = os.path.join(d, "program.pte")
            with open(path, "wb") as f:
                f.write(prog.buffer)
            for i, x in enumerate(inputs):
                np.save(os.path.join(d, f"input_{i}.npy"), x.numpy())
            method = Runtime.get().load_program(path).load_method("forward")
            runs = 3
            for r in range(runs):
                for j, y in enumerate(method.execute(list(inputs))):
                    np.save(os.path.join(d, f"expected_run{r}_{j}.npy"), y.numpy())
            ops = sorted({f"{o.name}.{o.overload}" if o.overload else o.name for p in prog.executorch_program.execution_plan for o in p.operators})
            delegates = sorted({dl.id for p in prog.executorch_program.execution_plan for dl in p.delegates})
            with open(os.path.join(d, "meta.json"), "w") as f:
                json.dump({"runs": runs, "initialized_buffers": init, "operators": ops, "delegates": delegates,
                           "mutable_data_segments": len(prog.executorch_program.mutable_data_segments or [])}, f, indent=1)
            print(case, ops, delegates)


if __name__ == "__main__":
    main()
