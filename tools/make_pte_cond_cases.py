#!/usr/bin/env python3
"""Exports ExecuTorch programs with torch.cond (a JumpFalse on a bool tensor computed at run time)
into tests/data/pte_cond/<case>/ with inputs that take each branch and the outputs of ExecuTorch's
own runtime:  program.pte, input_<k>_0.npy, expected_<k>_<j>.npy  (k = then, else).

  scalar    sum(x) > 0 ? x * 2 : x - 1
  conv      a convolution in one branch (NCHW/NHWC layout inside a branch), two outputs, and a
            nested cond in the else-branch

  /work/venvs/et/bin/python tools/make_pte_cond_cases.py [--out tests/data/pte_cond]
(executorch 1.5.1 with its torch; see tools/pte_export.py)."""
import argparse, json, os, shutil
import numpy as np
import torch, torch.nn as nn
from executorch.exir import to_edge
from executorch.runtime import Runtime


class Scalar(nn.Module):
    def forward(self, x):
        return torch.cond(x.sum() > 0, lambda x: x * 2.0, lambda x: x - 1.0, (x,))


class Conv(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(2, 2, 3, padding=1)

    def forward(self, x):
        def then(x):
            y = self.conv(x)
            return torch.relu(y), y.mean(dim=(2, 3))

        def other(x):
            z = torch.cond(x.max() > 2.0, lambda x: x * 0.5, lambda x: x + 0.25, (x,))
            return z, z.sum(dim=(2, 3))

        return torch.cond(x.mean() > 0, then, other, (x,))


CASES = {
    "scalar": (Scalar, lambda g: torch.tensor(g.standard_normal(5) + 1.0, dtype=torch.float32), lambda x: -x - 1.0),
    "conv": (Conv, lambda g: torch.tensor(g.standard_normal((1, 2, 5, 5)) + 0.5, dtype=torch.float32), lambda x: -x - 0.5),
}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="tests/data/pte_cond")
    args = ap.parse_args()
    for name, (cls, make, flip) in CASES.items():
        g = np.random.default_rng(sum(map(ord, name)))
        torch.manual_seed(sum(map(ord, name)))
        x = make(g)
        ep = torch.export.export(cls().eval(), (x,), strict=False)
        prog = to_edge(ep).to_executorch()
        d = os.path.join(args.out, name)
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
        path = os.path.join(d, "program.pte")
        with open(path, "wb") as f:
            f.write(prog.buffer)
        method = Runtime.get().load_program(path).load_method("forward")
        for k, inp in (("then", x), ("else", flip(x))):
            np.save(os.path.join(d, f"input_{k}_0.npy"), inp.numpy())
            for j, y in enumerate(method.execute([inp])):
                np.save(os.path.join(d, f"expected_{k}_{j}.npy"), y.numpy())
        ops = sorted({f"{o.name}.{o.overload}" if o.overload else o.name for p in prog.executorch_program.execution_plan for o in p.operators})
        with open(os.path.join(d, "meta.json"), "w") as f:
            json.dump({"cases": ["then", "else"], "operators": ops}, f, indent=1)
        print(name, ops)


if __name__ == "__main__":
    main()
