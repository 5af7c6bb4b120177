#!/usr/bin/env python3
"""Fits the rational erf(z) ~ z*P(z^2)/Q(z^2) on [0, 4] that the CPU backend's exact GELU uses
(backends/cpu/src/simd/elementwise.rs: GELU_ERF_P, GELU_ERF_Q), and reports GELU's error when
0.5*x*(1 + erf(x/sqrt 2)) is evaluated in float32 as the kernel does.

  python3 tools/fit_gelu_erf.py        # needs numpy; prints the coefficients, highest degree first

The fit is a weighted linear least-squares iteration (Sanathanan-Koerner, with the weights raised
where the error is largest, towards a minimax fit) against Python's math.erf (double precision).
"""
import math

import numpy as np

Z = 4.0  # erfc(4) = 1.5e-8 < half an ulp of 1: erf rounds to 1 beyond it
N, M = 5, 5  # degrees of P and Q in s = z^2


def fit(n, m, iters=80):
    z = np.unique(np.concatenate([np.linspace(0, Z, 8001), Z / 2 * (1 - np.cos(np.linspace(0, np.pi, 4001)))]))
    s, f = z * z, np.array([math.erf(v) for v in z])
    w, q, best = np.ones_like(z), np.ones_like(z), None
    for _ in range(iters):
        a = np.hstack([z[:, None] * np.vander(s, n + 1, increasing=True), -f[:, None] * np.vander(s, m + 1, increasing=True)[:, 1:]])
        wq = (w / np.abs(q))[:, None]
        c, *_ = np.linalg.lstsq(a * wq, f * wq[:, 0], rcond=None)
        p, qq = c[: n + 1], np.concatenate([[1.0], c[n + 1 :]])
        q = np.polyval(qq[::-1], s)
        r = np.abs(z * np.polyval(p[::-1], s) / q - f)
        if best is None or r.max() < best[0]:
            best = (r.max(), p.copy(), qq.copy())
        w = w * (1 + r / r.max())
    return best


def gelu_f32(p, q, x):
    f32 = np.float32
    z = np.clip(f32(x * f32(math.sqrt(0.5))), f32(-Z), f32(Z))
    s = f32(z * z)
    pp, qq = f32(p[-1]), f32(q[-1])
    for c in p[-2::-1]:
        pp = f32(pp * s + f32(c))
    for c in q[-2::-1]:
        qq = f32(qq * s + f32(c))
    e = np.clip(f32(f32(z * pp) / qq), f32(-1), f32(1))
    hx = f32(f32(0.5) * x)
    return f32(hx + f32(hx * e))


def main():
    err, p, q = fit(N, M)
    print(f"erf fit: max abs error {err:.3g} on [0, {Z}]")
    print("GELU_ERF_P =", [float(np.float32(v)) for v in p[::-1]])
    print("GELU_ERF_Q =", [float(np.float32(v)) for v in q[::-1]])
    x = np.concatenate([np.linspace(-12, 12, 400001), np.geomspace(1e-6, 12, 20001), -np.geomspace(1e-6, 12, 20001)]).astype(np.float32)
    ref = np.array([0.5 * float(v) * math.erfc(-float(v) / math.sqrt(2)) for v in x])
    got = gelu_f32(p, q, x).astype(np.float64)
    a = np.maximum(np.abs(ref).astype(np.float32), np.float32(1.1754944e-38))
    ulp = (np.nextafter(a, np.float32(np.inf)) - a).astype(np.float64)
    d = np.abs(got - ref)
    print(f"GELU in f32: error <= 2 ulp + {np.max(np.maximum(d - 2 * ulp, 0) / np.maximum(np.abs(x), 1e-30)):.3g}*|x|")


if __name__ == "__main__":
    main()
