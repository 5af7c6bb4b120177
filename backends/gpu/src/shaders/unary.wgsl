// Element-wise unary ops and activations. Params: 0 n; 1 alpha (LeakyRelu, f32 bits).

override OP: u32 = 0u;

// erf with |error| < 1.2e-7 (Numerical Recipes' erfc Chebyshev fit).
fn erf_(x: f32) -> f32 {
    let z = abs(x);
    let t = 1.0 / (1.0 + 0.5 * z);
    let r = t * exp(-z * z - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (-0.18628806
        + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277)))))))));
    let e = 1.0 - r;
    return select(e, -e, x < 0.0);
}

fn apply(x: f32) -> f32 {
    switch OP {
        case 0u: { return select(x, 0.0, x < 0.0); }
        case 1u: { return clamp_nan(x, 0.0, 6.0); }
        case 2u: { return clamp_nan(x, -1.0, 1.0); }
        case 3u: { return tanh_safe(x); }
        case 4u: { return 1.0 / (1.0 + exp(-x)); }
        case 5u: { return x * clamp_nan(x + 3.0, 0.0, 6.0) / 6.0; }
        case 6u: { return select(x, x * pf(1u), x < 0.0); }
        case 7u: { return clamp_nan(x, 0.0, 1.0); }
        case 8u: { return select(x, exp(x) - 1.0, x < 0.0); }
        case 9u: { return 0.5 * x * (1.0 + erf_(x * 0.70710678118654752)); }
        case 10u: { return 0.5 * x * (1.0 + tanh_safe(0.7978845608028654 * (x + 0.044715 * x * x * x))); }
        case 11u: { return abs(x); }
        case 12u: { return -x; }
        case 13u: { return exp(x); }
        case 14u: { return log(x); }
        case 15u: { return sqrt(x); }
        case 16u: { return inverseSqrt(x); }
        case 17u: { return x * x; }
        case 18u: { return sin(x); }
        case 19u: { return cos(x); }
        case 20u: { return floor(x); }
        case 21u: { return ceil(x); }
        case 22u: { return round(x); }
        case 23u: { return sign(x); }
        default: { return x; }
    }
}

fn item(i: u32) {
    O[i] = apply(X[i]);
}
