#!/usr/bin/env python3
"""Exports ExecuTorch programs with loops and scalar arithmetic on sizes into
tests/data/pte_loop/<case>/ with the outputs of ExecuTorch's own runtime:
program.pte, input_<k>_<i>.npy, expected_<k>_<j>.npy (k = a, b: two input sets), meta.json.

  map_rows        torch.map over the rows of x with an extra argument: sin(row) + y
  map_linear      torch.map of a Linear + ReLU over a batch (constants inside the loop body)
  map_conv        torch.map of a Conv2d over a list of images (layouts inside the body)
  scan_cumsum     torch.scan with a carry: carry = carry * 0.5 + x, ys = tanh(carry)
  dynamic_view    a dynamic batch whose view takes x.shape[0] * 2 (executorch_prim::mul on a
                  size known only at run time); the second input set has another batch

ExecuTorch's emitter writes a loop as sym_size + select_copy + the body + et_copy_index +
executorch_prim add/eq + a JumpFalse back (exir/emit/_emitter.py); nnrt unrolls it at load.

  /work/venvs/et/bin/python tools/make_pte_loop_cases.py [--out tests/data/pte_loop] [--xnnpack]
(executorch 1.5.1 with its torch; see tools/pte_export.py). --xnnpack also writes <case>_xnnpack
lowered with the XNNPACK partitioner where it delegates something (it does not enter loop
bodies, so the loop programs come out the same as the portable ones and are not repeated)."""
import argparse, json, os, shutil
import numpy as np
import torch, torch.nn as nn
from torch._higher_order_ops.map import map as torch_map
from executorch.exir import to_edge, to_edge_transform_and_lower
from executorch.runtime import Runtime


class MapRows(nn.Module):
    def forward(self, xs, y):
        return torch_map(lambda x, y: torch.sin(x) + y, xs, y)


class MapLinear(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 4)

    def forward(self, xs):
        return torch_map(lambda x: torch.relu(self.fc(x)), xs)


class MapConv(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(2, 3, 3, padding=1)

    def forward(self, xs):
        return torch_map(lambda x: self.conv(x).clamp(-1.0, 1.0), xs)


class ScanCumsum(nn.Module):
    def forward(self, init, xs):
        from torch._higher_order_ops.scan import scan

        def step(carry, x):
            c = carry * 0.5 + x
            return c, torch.tanh(c)

        return scan(step, init, xs)


class DynamicView(nn.Module):
    def forward(self, x):
        y = x.reshape(x.shape[0] * 2, -1)
        return y * 3.0 + 1.0


def f32(g, shape, shift=0.0):
    return torch.tensor(g.standard_normal(shape) + shift, dtype=torch.float32)


# name: (module, inputs of set a, inputs of set b, dynamic shapes or None)
def cases(g):
    return {
        "map_rows": (MapRows, (f32(g, (4, 3)), f32(g, (3,))), (f32(g, (4, 3)), f32(g, (3,))), None),
        "map_linear": (MapLinear, (f32(g, (5, 8)),), (f32(g, (5, 8)),), None),
        "map_conv": (MapConv, (f32(g, (3, 1, 2, 6, 6)),), (f32(g, (3, 1, 2, 6, 6)),), None),
        "scan_cumsum": (ScanCumsum, (f32(g, (2, 3)), f32(g, (6, 2, 3))), (f32(g, (2, 3)), f32(g, (6, 2, 3))), None),
        "dynamic_view": (DynamicView, (f32(g, (3, 4, 2)),), (f32(g, (5, 4, 2)),), ({0: torch.export.Dim("batch", min=1, max=8)},)),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="tests/data/pte_loop")
    ap.add_argument("--xnnpack", action="store_true")
    ap.add_argument("--only", default="")
    args = ap.parse_args()
    for name, (cls, a, b, dyn) in cases(np.random.default_rng(7)).items():
        if args.only and args.only not in name:
            continue
        torch.manual_seed(sum(map(ord, name)))
        m = cls().eval()
        ep = torch.export.export(m, a, dynamic_shapes=dyn, strict=False)
        variants = [(name, lambda: to_edge(ep).to_executorch())]
        if args.xnnpack:
            from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
            variants.append((name + "_xnnpack", lambda: to_edge_transform_and_lower(ep, partitioner=[XnnpackPartitioner()]).to_executorch()))
        for case, make in variants:
            try:
                prog = make()
            except Exception as e:  # report and go on: one exporter limitation must not hide the rest
                print(case, "NOT EXPORTED:", type(e).__name__, str(e).splitlines()[0][:200])
                continue
            if case.endswith("_xnnpack") and not any(p.delegates for p in prog.executorch_program.execution_plan):
                print(case, "skipped: the partitioner delegated nothing (the same program as", name + ")")
                continue
            d = os.path.join(args.out, case)
            shutil.rmtree(d, ignore_errors=True)
            os.makedirs(d)
            path = os.path.join(d, "program.pte")
            with open(path, "wb") as f:
                f.write(prog.buffer)
            method = Runtime.get().load_program(path).load_method("forward")
            for k, inputs in (("a", a), ("b", b)):
                for i, x in enumerate(inputs):
                    np.save(os.path.join(d, f"input_{k}_{i}.npy"), x.numpy())
                for j, y in enumerate(method.execute(list(inputs))):
                    np.save(os.path.join(d, f"expected_{k}_{j}.npy"), y.numpy())
            ops = sorted({f"{o.name}.{o.overload}" if o.overload else o.name for p in prog.executorch_program.execution_plan for o in p.operators})
            with open(os.path.join(d, "meta.json"), "w") as f:
                json.dump({"cases": ["a", "b"], "inputs": len(a), "operators": ops}, f, indent=1)
            print(case, ops)


if __name__ == "__main__":
    main()
