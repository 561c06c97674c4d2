#!/usr/bin/env python3
"""Writes the cases of test_torch: random inputs for tg's public ops, and what PyTorch returns for
them (outputs, gradients, or an error), so that test_torch can replay each case on every test
device and compare.

    make_cases.py OUT.txt [--seed N]

The cases cover broadcasting, size-1, empty and 0-d shapes, every dtype an op takes, and edge
values (+-0, +-inf, NaN, subnormals, large arguments). Ops that tg does not have are written too:
test_torch lists them. The file format (one token stream per line, values exact):

    case <op>                       a new case
    tol <rtol> <atol>               per-case tolerance for floating outputs (scaled per dtype)
    in <tensor>                     an input, in order
    kw <name> <value>               a keyword argument: i:<int> f:<hex float> s:<text> l:<ints,>
    out <tensor> | err <text>       PyTorch's result, or the error it raised
    cot <tensor>                    the cotangent w: gradients are those of sum(out * w)
    grad <i> <tensor>               the gradient of input i
    end
    <tensor> = <dtype> <ndim> <dims...> <values...>   (floats as C99 hex floats, inf, -inf, nan)
"""
import argparse
import math
import sys

import torch

F = torch.nn.functional
DT = {
    "float32": torch.float32,
    "float64": torch.float64,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
    "int8": torch.int8,
    "int16": torch.int16,
    "int32": torch.int32,
    "int64": torch.int64,
    "uint8": torch.uint8,
    "bool": torch.bool,
}
NAME = {v: k for k, v in DT.items()}
FLOATS = ["float32", "float64", "float16", "bfloat16"]
INTS = ["int32", "int64", "int8", "uint8", "int16"]
# Per-dtype tolerance (rtol, atol) of one correctly rounded op; a case's tol scales it.
BASE_TOL = {"float32": (1e-5, 1e-6), "float64": (1e-9, 1e-12), "float16": (2e-3, 1e-4),
            "bfloat16": (1.6e-2, 1e-3)}
EDGE = [0.0, -0.0, 1.0, -1.0, 0.5, -2.5, math.inf, -math.inf, math.nan, 1e-40, -1e-40, 3e38,
        -3e38, 1e4, -1e4, 88.5, -103.0, 1e-7]

g = torch.Generator().manual_seed(0)


def rand(shape, dtype, lo=-3.0, hi=3.0):
    dt = DT[dtype]
    if dtype == "bool":
        return torch.randint(0, 2, shape, generator=g).bool()
    if dtype in INTS:
        lo_i, hi_i = (0, 10) if dtype == "uint8" else (-9, 10)
        return torch.randint(lo_i, hi_i, shape, generator=g).to(dt)
    return (torch.rand(shape, generator=g, dtype=torch.float64) * (hi - lo) + lo).to(dt)


def edge(dtype):
    return torch.tensor(EDGE, dtype=torch.float64).to(DT[dtype])


def fmt_value(v, dtype):
    if dtype == "bool":
        return "1" if v else "0"
    if dtype in INTS:
        return str(int(v))
    v = float(v)
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return v.hex()


def fmt_tensor(t):
    t = t.detach()
    dtype = NAME[t.dtype]
    flat = t.reshape(-1).to(torch.float64 if dtype in FLOATS else t.dtype).tolist()
    dims = [str(d) for d in t.shape]
    return " ".join([dtype, str(t.dim())] + dims + [fmt_value(v, dtype) for v in flat])


def fmt_kw(v):
    if isinstance(v, bool):
        return "b:" + ("1" if v else "0")
    if isinstance(v, int):
        return "i:" + str(v)
    if isinstance(v, float):
        return "f:" + fmt_value(v, "float64")
    if isinstance(v, str):
        return "s:" + v
    if isinstance(v, (list, tuple)):
        return "l:" + ",".join(str(int(x)) for x in v)
    raise TypeError(v)


out_lines = []
counts = {}


def case(op, fn, inputs, kw=None, tol=1.0, grad=True, nograd=()):
    """One case: fn(*inputs, **kw) in PyTorch; gradients for floating inputs and output (but
    the inputs numbered in nograd: PyTorch refuses gradients for a loss's class weights)."""
    kw = kw or {}
    counts[op] = counts.get(op, 0) + 1
    lines = ["case " + op, "tol %r %r" % (tol, tol)]
    lines += ["in " + fmt_tensor(x) for x in inputs]
    lines += ["kw %s %s" % (k, fmt_kw(v)) for k, v in kw.items()]
    leaves = [x.detach().clone().requires_grad_(x.is_floating_point() and grad and
                                                i not in nograd) for i, x in enumerate(inputs)]
    try:
        try:
            out = fn(*leaves, **kw)
        except RuntimeError as e:
            # PyTorch's CPU kernels lack many float16 ops; its CUDA kernels compute them in
            # float32 and round the result, which is what is compared here
            if "not implemented for 'Half'" not in str(e):
                raise
            out = fn(*[x.float() if x.dtype == torch.float16 else x for x in leaves], **kw)
            out = out.half() if out.is_floating_point() else out
    except Exception as e:  # PyTorch refuses: tg must too
        msg = str(e).splitlines()[0] if str(e) else type(e).__name__
        lines += ["err " + msg, "end"]
        out_lines.extend(lines)
        return
    lines.append("out " + fmt_tensor(out))
    wants = [x for x in leaves if x.requires_grad]
    if grad and wants and out.is_floating_point() and out.numel() > 0 and \
            out.dtype in (torch.float32, torch.float64):
        w = rand(tuple(out.shape), NAME[out.dtype], -1.0, 1.0)
        try:
            gs = torch.autograd.grad((out * w).sum(), wants, allow_unused=True)
        except RuntimeError:  # no derivative in PyTorch (floor_divide)
            gs = [None] * len(wants)
        lines.append("cot " + fmt_tensor(w))
        k = 0
        for i, x in enumerate(leaves):
            if x.requires_grad:
                if gs[k] is not None:
                    lines.append("grad %d %s" % (i, fmt_tensor(gs[k])))
                k += 1
    lines.append("end")
    out_lines.extend(lines)


def unary(op, fn, dtypes=("float32", "float64", "float16"), lo=-3.0, hi=3.0, tol=1.0,
          edges=True, ints=()):
    for dt in dtypes:
        case(op, fn, [rand((3, 4), dt, lo, hi)], tol=tol)
        case(op, fn, [rand((), dt, lo, hi)], tol=tol)
        case(op, fn, [rand((0, 2), dt, lo, hi)], tol=tol)
        if edges and dt in ("float32", "float64"):
            case(op, fn, [edge(dt)], tol=tol, grad=False)
    for dt in ints:
        case(op, fn, [rand((5,), dt)], tol=tol)


def binary(op, fn, dtypes=(("float32", "float32"), ("float64", "float32"), ("int32", "float32"),
                           ("int32", "int64"), ("bool", "int32"), ("float16", "float16"),
                           ("uint8", "int8")), tol=1.0, lo=-3.0, hi=3.0):
    for a, b in dtypes:
        case(op, fn, [rand((3, 4), a, lo, hi), rand((4,), b, lo, hi)], tol=tol)
        case(op, fn, [rand((2, 1, 3), a, lo, hi), rand((4, 1), b, lo, hi)], tol=tol)
    # 0-d operands in promotion (a tensor with dims wins within its category)
    case(op, fn, [rand((3,), "float32", lo, hi), rand((), "float64", lo, hi)], tol=tol)
    case(op, fn, [rand((3,), "int32", lo, hi), rand((), "int64", lo, hi)], tol=tol)
    case(op, fn, [rand((), "int32", lo, hi), rand((), "float64", lo, hi)], tol=tol)
    case(op, fn, [rand((0, 3), "float32", lo, hi), rand((3,), "float32", lo, hi)], tol=tol)
    case(op, fn, [edge("float32"), edge("float32").flip(0)], tol=tol, grad=False)
    case(op, fn, [rand((3, 4), "float32"), rand((3,), "float32")], tol=tol)  # not broadcastable


# x[...] forms for the "index" cases (tg: Tensor::index with integers and slices)
INDEX_FORMS = [lambda x: x[1], lambda x: x[-1, 1:3], lambda x: x[:, ::2, 1],
               lambda x: x[1:0], lambda x: x[:, -100:100, -1], lambda x: x[0, 0, 0],
               lambda x: x[3], lambda x: x[0, 0, 0, 0], lambda x: x[:, :, 5]]


def run_optimizer(kind):
    def run(p0, g1, g2, g3, **kw):
        p = p0.detach().clone().requires_grad_()
        if kind == "sgd":
            opt = torch.optim.SGD([p], lr=kw["lr"], momentum=kw["momentum"],
                                  dampening=kw["dampening"], weight_decay=kw["wd"],
                                  nesterov=kw["nesterov"], maximize=kw["maximize"])
        else:
            cls = torch.optim.Adam if kind == "adam" else torch.optim.AdamW
            opt = cls([p], lr=kw["lr"], betas=(kw["b1"], kw["b2"]), eps=kw["eps"],
                      weight_decay=kw["wd"], amsgrad=kw["amsgrad"], maximize=kw["maximize"])
        for g in (g1, g2, g3):
            opt.zero_grad()
            (p * g).sum().backward()
            opt.step()
        return p.detach()
    return run


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    args = ap.parse_args()
    torch.set_num_threads(1)

    # ---- elementwise
    unary("neg", torch.neg, ints=("int32", "int8"))
    unary("abs", torch.abs, ints=("int32", "int64"))
    unary("sign", torch.sign, ints=("int32",))
    unary("exp", torch.exp)
    unary("exp2", torch.exp2)
    unary("log", torch.log, lo=0.01, hi=10.0)
    unary("log2", torch.log2, lo=0.01, hi=10.0)
    unary("sqrt", torch.sqrt, lo=0.01, hi=10.0)
    unary("rsqrt", torch.rsqrt, lo=0.01, hi=10.0)
    unary("reciprocal", torch.reciprocal, lo=0.1, hi=10.0)
    unary("sin", torch.sin, tol=2.0)
    unary("cos", torch.cos, tol=2.0)
    unary("tan", torch.tan, lo=-1.4, hi=1.4, tol=4.0)
    unary("tanh", torch.tanh, tol=2.0)
    unary("sigmoid", torch.sigmoid, tol=2.0)
    unary("relu", torch.relu, ints=("int32",))
    unary("leaky_relu", lambda x: F.leaky_relu(x, 0.1))
    unary("gelu", F.gelu, tol=20.0)
    unary("gelu_tanh", lambda x: F.gelu(x, approximate="tanh"), tol=4.0)
    unary("silu", F.silu, tol=2.0)
    unary("softplus", F.softplus, tol=2.0)
    unary("square", torch.square, ints=("int32",))
    unary("floor", torch.floor)
    unary("ceil", torch.ceil)
    unary("round", torch.round)
    unary("trunc", torch.trunc)
    unary("isnan", torch.isnan)
    unary("isinf", torch.isinf)
    unary("logical_not", torch.logical_not, ints=("int32", "bool"))
    for dt in FLOATS[:2]:
        case("cos", torch.cos, [torch.tensor([12345.678, -9876.5, 1e4], dtype=DT[dt])], tol=2.0)
        case("sin", torch.sin, [torch.tensor([12345.678, -9876.5, 1e4], dtype=DT[dt])], tol=2.0)
    for dt in ("float32", "float64"):
        case("cast", lambda x, dtype: x.to(DT[dtype]), [edge(dt)], {"dtype": "int32"}, grad=False)
        case("cast", lambda x, dtype: x.to(DT[dtype]), [rand((4,), dt, -300, 300)],
             {"dtype": "uint8"}, grad=False)
    case("cast", lambda x, dtype: x.to(DT[dtype]), [edge("float32")], {"dtype": "float16"})
    case("cast", lambda x, dtype: x.to(DT[dtype]), [edge("float32")], {"dtype": "bfloat16"})
    case("cast", lambda x, dtype: x.to(DT[dtype]), [rand((6,), "int32")], {"dtype": "bool"})

    binary("add", torch.add)
    binary("sub", torch.sub, dtypes=(("float32", "float32"), ("int32", "float32"),
                                     ("int32", "int64"), ("uint8", "int8")))
    binary("mul", torch.mul)
    binary("div", torch.div, tol=2.0)
    binary("pow", torch.pow, dtypes=(("float32", "float32"), ("float64", "float64"),
                                     ("int32", "int32")), lo=0.1, hi=3.0, tol=8.0)
    binary("maximum", torch.maximum)
    binary("minimum", torch.minimum)
    for op, fn in [("lt", torch.lt), ("gt", torch.gt), ("le", torch.le), ("ge", torch.ge),
                   ("eq", torch.eq), ("ne", torch.ne)]:
        binary(op, fn, dtypes=(("float32", "float32"), ("int32", "float32"), ("int32", "int64"),
                               ("bool", "bool")))
    for op, fn in [("logical_and", torch.logical_and), ("logical_or", torch.logical_or),
                   ("logical_xor", torch.logical_xor)]:
        binary(op, fn, dtypes=(("bool", "bool"), ("int32", "float32")))
    for c, a, b in [("bool", "float32", "float32"), ("bool", "int32", "float64"),
                    ("int32", "int64", "int8")]:
        case("where", torch.where, [rand((3, 1), c), rand((4,), a), rand((3, 4), b)])
    case("where", torch.where, [rand((3,), "bool"), rand((2,), "float32"), rand((3,), "float32")])

    # scalar forms (a C++ scalar next to a tensor: PyTorch's Python scalars)
    for dt in ("float32", "int32", "float16", "bool", "uint8"):
        for s in (2, 2.5, True):
            case("add_scalar", lambda x, s: x + s, [rand((4,), dt)], {"s": s})
            case("mul_scalar", lambda x, s: x * s, [rand((4,), dt)], {"s": s})
        case("div_scalar", lambda x, s: x / s, [rand((4,), dt)], {"s": 2})
    for dt in ("float32", "int32", "int64"):
        for e in (0, 1, 2, 3, -1, 0.5, 2.5, -2):
            case("pow_scalar", lambda x, e: x.pow(e), [rand((5,), dt, 0.5, 3.0)], {"e": e},
                 tol=4.0)
        case("clamp", lambda x, lo, hi: x.clamp(lo, hi), [rand((8,), dt, -5, 5)],
             {"lo": -1, "hi": 2})
        case("clamp", lambda x, lo, hi: x.clamp(lo, hi), [rand((8,), dt, -5, 5)],
             {"lo": -1.5, "hi": 2.5})

    # ---- reductions
    red = [("sum", lambda x, dim, keepdim: x.sum(dim, keepdim=keepdim)),
           ("mean", lambda x, dim, keepdim: x.mean(dim, keepdim=keepdim)),
           ("max", lambda x, dim, keepdim: x.amax(dim, keepdim=keepdim)),
           ("min", lambda x, dim, keepdim: x.amin(dim, keepdim=keepdim)),
           ("prod", lambda x, dim, keepdim: x.prod(dim[0], keepdim=keepdim)),
           ("any", lambda x, dim, keepdim: x.any(dim[0], keepdim=keepdim)),
           ("all", lambda x, dim, keepdim: x.all(dim[0], keepdim=keepdim)),
           ("logsumexp", lambda x, dim, keepdim: x.logsumexp(dim, keepdim=keepdim)),
           ("var", lambda x, dim, keepdim: x.var(dim, keepdim=keepdim)),
           ("std", lambda x, dim, keepdim: x.std(dim, keepdim=keepdim))]
    for op, fn in red:
        dts = ["float32", "float64"] + (["int32", "bool"] if op in ("sum", "max", "min", "prod",
                                                                      "any", "all") else [])
        for dt in dts:
            for dim, keep in [([1], False), ([0], True), ([-1], False)]:
                case(op, fn, [rand((3, 5), dt, -2, 2)], {"dim": dim, "keepdim": keep}, tol=4.0)
            if op not in ("prod", "any", "all"):
                case(op, fn, [rand((2, 3, 4), dt, -2, 2)], {"dim": [0, 2], "keepdim": False},
                     tol=4.0)
            case(op, fn, [rand((0, 3), dt)], {"dim": [1], "keepdim": False}, tol=4.0)
            case(op, fn, [rand((0, 3), dt)], {"dim": [0], "keepdim": False}, tol=4.0)
        case(op, fn, [rand((3, 4), "float32")], {"dim": [2], "keepdim": False})
    for op, fn in [("sum_all", lambda x: x.sum()), ("mean_all", lambda x: x.mean()),
                   ("max_all", lambda x: x.max()), ("min_all", lambda x: x.min())]:
        for shape in [(3, 4), (), (2, 3, 2)]:
            case(op, fn, [rand(shape, "float32")], tol=4.0)
        case(op, fn, [rand((0,), "float32")], tol=4.0)
    for op, fn in [("argmax", lambda x, dim, keepdim: x.argmax(dim, keepdim=keepdim)),
                   ("argmin", lambda x, dim, keepdim: x.argmin(dim, keepdim=keepdim))]:
        for dt in ("float32", "int32"):
            case(op, fn, [rand((4, 5), dt)], {"dim": 1, "keepdim": False})
            case(op, fn, [rand((4, 5), dt)], {"dim": 0, "keepdim": True})
            case(op, fn, [rand((0, 3), dt)], {"dim": 1, "keepdim": False})
            case(op, fn, [rand((0, 3), dt)], {"dim": 0, "keepdim": False})
    case("cumsum", lambda x, dim: x.cumsum(dim), [rand((3, 5), "float32")], {"dim": 1}, tol=4.0)
    case("cumsum", lambda x, dim: x.cumsum(dim), [rand((4, 2), "int32")], {"dim": 0})

    # ---- movement
    for dt in ("float32", "int32"):
        x = rand((2, 3, 4), dt)
        case("reshape", lambda x, shape: x.reshape(shape), [x], {"shape": [4, -1]})
        case("reshape", lambda x, shape: x.reshape(shape), [x], {"shape": [5, -1]})
        case("reshape", lambda x, shape: x.reshape(shape), [x], {"shape": [-1, -1]})
        case("permute", lambda x, dims: x.permute(dims), [x], {"dims": [2, 0, 1]})
        case("permute", lambda x, dims: x.permute(dims), [x], {"dims": [0, 0, 1]})
        case("transpose", lambda x, d0, d1: x.transpose(d0, d1), [x], {"d0": 0, "d1": -1})
        case("flip", lambda x, dims: x.flip(dims), [x], {"dims": [0, 2]})
        case("flip", lambda x, dims: x.flip(dims), [x], {"dims": [1, 1]})
        case("flatten", lambda x, start, end: x.flatten(start, end), [x], {"start": 1, "end": 2})
        case("flatten", lambda x, start, end: x.flatten(start, end), [x], {"start": 2, "end": 1})
        case("unsqueeze", lambda x, dim: x.unsqueeze(dim), [x], {"dim": -1})
        case("squeeze", lambda x, dim: x.squeeze(dim), [rand((3, 1), dt)], {"dim": 1})
        case("expand", lambda x, shape: x.expand(shape), [rand((3, 1), dt)], {"shape": [2, 3, 4]})
        case("expand", lambda x, shape: x.expand(shape), [rand((3, 2), dt)], {"shape": [3, 4]})
        case("repeat", lambda x, r: x.repeat(r), [rand((2, 3), dt)], {"r": [2, 1, 2]})
        case("pad", lambda x, p, v: F.pad(x, p, value=v), [rand((2, 3), dt)],
             {"p": [1, 2, 0, 1], "v": 0})
        case("pad", lambda x, p, v: F.pad(x, p, value=v), [rand((2, 5), dt)],
             {"p": [-1, 1], "v": 3})
        case("slice", lambda x, dim, start, stop, step: x[(slice(None),) * dim +
                                                          (slice(start, stop, step),)], [x],
             {"dim": 2, "start": 1, "stop": 4, "step": 2})
        case("slice", lambda x, dim, start, stop, step: x[(slice(None),) * dim +
                                                          (slice(start, stop, step),)], [x],
             {"dim": 1, "start": -2, "stop": 100, "step": 1})
        case("slice", lambda x, dim, start, stop, step: x[(slice(None),) * dim +
                                                          (slice(start, stop, step),)], [x],
             {"dim": 1, "start": 0, "stop": 2, "step": 0})
        for dim, size, step in [(2, 2, 1), (1, 3, 1), (2, 1, 3), (-1, 4, 2), (0, 1, 1),
                                (2, 5, 1), (1, 2, 0)]:
            case("unfold", lambda x, dim, size, step: x.unfold(dim, size, step), [x],
                 {"dim": dim, "size": size, "step": step})
        case("unfold", lambda x, dim, size, step: x.unfold(dim, size, step),
             [rand((7, 2), dt)], {"dim": 0, "size": 3, "step": 2})
        idx = torch.tensor([[0, 2], [1, 0]])
        case("gather", lambda x, i, dim: x.gather(dim, i), [rand((2, 3), dt), idx], {"dim": 1})
        case("gather", lambda x, i, dim: x.gather(dim, i), [rand((2, 3), dt), idx + 2], {"dim": 1})
        case("index_select", lambda x, i, dim: x.index_select(dim, i),
             [rand((4, 3), dt), torch.tensor([3, 0, 3])], {"dim": 0})
        case("index_select", lambda x, i, dim: x.index_select(dim, i),
             [rand((4, 3), dt), torch.tensor([4])], {"dim": 0})
        case("cat", lambda a, b, dim: torch.cat([a, b], dim), [rand((2, 3), dt),
                                                               rand((1, 3), dt)], {"dim": 0})
        case("cat", lambda a, b, dim: torch.cat([a, b], dim), [rand((2, 3), dt),
                                                               rand((2, 2), dt)], {"dim": 0})
        case("stack", lambda a, b, dim: torch.stack([a, b], dim), [rand((2, 3), dt),
                                                                   rand((2, 3), dt)], {"dim": 1})
    case("cat", lambda a, b, dim: torch.cat([a, b], dim), [rand((2,), "int32"),
                                                           rand((1,), "float32")], {"dim": 0})

    # ---- products and composites
    for sa, sb in [((3, 4), (4, 5)), ((4,), (4, 2)), ((2, 3, 4), (4,)), ((2, 1, 3, 4), (5, 4, 2)),
                   ((3, 4), (5, 6)), ((0, 4), (4, 3)), ((3, 0), (0, 2))]:
        case("matmul", torch.matmul, [rand(sa, "float32"), rand(sb, "float32")], tol=8.0)
    case("matmul", torch.matmul, [rand((3, 4), "int32"), rand((4, 2), "int32")])
    case("matmul", torch.matmul, [rand((3, 4), "float16"), rand((4, 2), "float16")], tol=4.0)
    case("dot", torch.dot, [rand((5,), "float32"), rand((5,), "float32")], tol=4.0)
    case("dot", torch.dot, [rand((5,), "float32"), rand((4,), "float32")])
    for dim in (0, 1, -1):
        case("softmax", lambda x, dim: x.softmax(dim), [rand((3, 4), "float32")], {"dim": dim},
             tol=4.0)
        case("log_softmax", lambda x, dim: x.log_softmax(dim), [rand((3, 4), "float32")],
             {"dim": dim}, tol=4.0)
    case("softmax", lambda x, dim: x.softmax(dim), [rand((3, 4), "float32")], {"dim": 2})

    # ---- nn.functional
    case("linear", F.linear, [rand((3, 4), "float32"), rand((5, 4), "float32"),
                              rand((5,), "float32")], tol=8.0)
    case("linear", F.linear, [rand((3, 4), "float32"), rand((5, 3), "float32"),
                              rand((5,), "float32")])
    for stride, padding, dilation, groups in [(1, 0, 1, 1), (2, 1, 1, 1), (1, 1, 2, 1),
                                              (1, 0, 1, 2), (2, 2, 2, 2), (3, 0, 1, 1),
                                              (1, 3, 1, 1), (2, 0, 2, 2)]:
        case("conv2d", lambda x, w, b, stride, padding, dilation, groups: F.conv2d(
            x, w, b, stride, padding, dilation, groups),
             [rand((2, 4, 6, 5), "float32"), rand((6, 4 // groups, 3, 3), "float32"),
              rand((6,), "float32")],
             {"stride": stride, "padding": padding, "dilation": dilation, "groups": groups},
             tol=16.0)
    case("conv2d", lambda x, w, b, stride, padding, dilation, groups: F.conv2d(
        x, w, b, stride, padding, dilation, groups),
         [rand((2, 4, 7, 6), "float32"), rand((6, 2, 2, 3), "float32"), rand((6,), "float32")],
         {"stride": 2, "padding": 1, "dilation": 1, "groups": 2}, tol=16.0)
    case("conv2d", lambda x, w, b, stride, padding, dilation, groups: F.conv2d(
        x, w, b, stride, padding, dilation, groups),
         [rand((1, 3, 5, 5), "float32"), rand((4, 3, 3, 3), "float32"), rand((3,), "float32")],
         {"stride": 1, "padding": 0, "dilation": 1, "groups": 1})
    case("conv2d", lambda x, w, b, stride, padding, dilation, groups: F.conv2d(
        x, w, b, stride, padding, dilation, groups),
         [rand((1, 3, 2, 2), "float32"), rand((4, 3, 3, 3), "float32"), rand((4,), "float32")],
         {"stride": 1, "padding": 0, "dilation": 1, "groups": 1})
    for k, s, p in [(2, 2, 0), (3, 1, 1), (3, 2, 1)]:
        case("max_pool2d", lambda x, k, s, p: F.max_pool2d(x, k, s, p),
             [rand((2, 3, 6, 5), "float32")], {"k": k, "s": s, "p": p})
        case("avg_pool2d", lambda x, k, s, p: F.avg_pool2d(x, k, s, p),
             [rand((2, 3, 6, 5), "float32")], {"k": k, "s": s, "p": p}, tol=4.0)
    case("max_pool2d", lambda x, k, s, p: F.max_pool2d(x, k, s, p),
         [rand((1, 1, 2, 2), "float32")], {"k": 3, "s": 1, "p": 0})
    for k, s, p, ceil, inc in [(2, 2, 0, True, True), (3, 2, 1, True, True), (3, 2, 1, True, False),
                               (2, 3, 1, True, False), (3, 3, 0, False, False)]:
        case("max_pool2d_ceil", lambda x, k, s, p, ceil: F.max_pool2d(x, k, s, p, ceil_mode=ceil),
             [rand((2, 3, 7, 6), "float32")], {"k": k, "s": s, "p": p, "ceil": ceil})
        case("avg_pool2d_ceil", lambda x, k, s, p, ceil, inc: F.avg_pool2d(
            x, k, s, p, ceil_mode=ceil, count_include_pad=inc),
             [rand((2, 3, 7, 6), "float32")], {"k": k, "s": s, "p": p, "ceil": ceil, "inc": inc},
             tol=4.0)
    for k, s, p, d, ceil in [(2, 2, 0, 1, False), (3, 2, 1, 1, False), (3, 1, 1, 2, False),
                             (3, 2, 1, 1, True)]:
        case("max_pool2d_indices", lambda x, k, s, p, d, ceil: F.max_pool2d(
            x, k, s, p, d, ceil_mode=ceil, return_indices=True)[1],
             [rand((2, 3, 7, 6), "float32")], {"k": k, "s": s, "p": p, "d": d, "ceil": ceil})
    case("avg_pool2d_divisor", lambda x, k, d: F.avg_pool2d(x, k, divisor_override=d),
         [rand((1, 2, 4, 4), "float32")], {"k": 2, "d": 3})
    case("layer_norm", lambda x, w, b: F.layer_norm(x, (4,), w, b, 1e-5),
         [rand((3, 4), "float32"), rand((4,), "float32"), rand((4,), "float32")], tol=16.0)
    for shape in [(3, 4), (2, 4, 3), (2, 4, 3, 2)]:
        stats = [rand((4,), "float32"), rand((4,), "float32", 0.5, 2), rand((4,), "float32"),
                 rand((4,), "float32")]
        case("batch_norm", lambda x, rm, rv, w, b, training: F.batch_norm(
            x, rm, rv, w, b, training), [rand(shape, "float32")] + stats, {"training": False},
             tol=16.0, nograd=(1, 2))
        case("batch_norm", lambda x, rm, rv, w, b, training: F.batch_norm(
            x, rm.clone(), rv.clone(), w, b, training),
             [rand(shape, "float32")] + stats, {"training": True}, tol=16.0, nograd=(1, 2))

        def running(x, momentum):  # the running statistics after one training step
            rm, rv = torch.zeros(x.shape[1], dtype=x.dtype), torch.ones(x.shape[1], dtype=x.dtype)
            F.batch_norm(x, rm, rv, None, None, True, momentum)
            return torch.stack([rm, rv])
        case("batch_norm_running", running, [rand(shape, "float64")], {"momentum": 0.3},
             grad=False, tol=4.0)
    case("batch_norm", lambda x, rm, rv, w, b, training: F.batch_norm(x, rm, rv, w, b, training),
         [rand((1, 4), "float32")] + stats, {"training": True}, nograd=(1, 2))  # one value per channel
    case("batch_norm", lambda x, rm, rv, w, b, training: F.batch_norm(x, rm, rv, w, b, training),
         [rand((2, 3), "float32")] + stats, {"training": False}, nograd=(1, 2))  # 3 channels, stats of 4
    case("embedding", lambda i, w: F.embedding(i, w), [torch.tensor([[0, 2], [3, 0]]),
                                                        rand((4, 3), "float32")])
    case("embedding", lambda i, w: F.embedding(i, w), [torch.tensor([4]), rand((4, 3), "float32")])
    for red in ("mean", "sum", "none"):
        for shape in [(3, 4), (5,), (2, 3, 2)]:
            case("mse_loss", lambda x, t, reduction: F.mse_loss(x, t, reduction=reduction),
                 [rand(shape, "float32"), rand(shape, "float32")], {"reduction": red}, tol=4.0)
            case("l1_loss", lambda x, t, reduction: F.l1_loss(x, t, reduction=reduction),
                 [rand(shape, "float32"), rand(shape, "float32")], {"reduction": red}, tol=4.0)
            case("binary_cross_entropy",
                 lambda x, t, reduction: F.binary_cross_entropy(x, t, reduction=reduction),
                 [rand(shape, "float32", 0.05, 0.95), rand(shape, "float32", 0, 1)],
                 {"reduction": red}, tol=4.0)
            case("binary_cross_entropy_with_logits",
                 lambda x, t, reduction: F.binary_cross_entropy_with_logits(
                     x, t, reduction=reduction),
                 [rand(shape, "float32"), rand(shape, "float32", 0, 1)], {"reduction": red},
                 tol=4.0)
        case("cross_entropy", lambda x, t, reduction: F.cross_entropy(x, t, reduction=reduction),
             [rand((4, 5), "float32"), torch.randint(0, 5, (4,), generator=g)],
             {"reduction": red}, tol=4.0)
        case("cross_entropy", lambda x, t, reduction: F.cross_entropy(x, t, reduction=reduction),
             [rand((2, 5, 3), "float32"), torch.randint(0, 5, (2, 3), generator=g)],
             {"reduction": red}, tol=4.0)
        case("nll_loss", lambda x, t, reduction: F.nll_loss(x, t, reduction=reduction),
             [rand((4, 5), "float32"), torch.randint(0, 5, (4,), generator=g)],
             {"reduction": red}, tol=4.0)

    # losses' options: class weights, ignore_index, label smoothing, probability targets
    wts = rand((5,), "float32", 0.2, 2)
    for red in ("mean", "sum", "none"):
        for ign, ls in ((-100, 0.0), (2, 0.0), (-100, 0.2), (1, 0.1)):
            t = torch.tensor([0, 2, 4, 1, 2, 3])
            case("cross_entropy_opts", lambda x, t, w, ign, ls, reduction: F.cross_entropy(
                x, t, w, ignore_index=ign, reduction=reduction, label_smoothing=ls),
                 [rand((6, 5), "float32"), t, wts], {"ign": ign, "ls": ls, "reduction": red},
                 tol=4.0, nograd=(2,))
            case("cross_entropy_opts", lambda x, t, w, ign, ls, reduction: F.cross_entropy(
                x, t, w, ignore_index=ign, reduction=reduction, label_smoothing=ls),
                 [rand((2, 5, 3), "float32"), t.reshape(2, 3), wts],
                 {"ign": ign, "ls": ls, "reduction": red}, tol=4.0, nograd=(2,))
        case("nll_loss_opts", lambda x, t, w, ign, reduction: F.nll_loss(
            x, t, w, ignore_index=ign, reduction=reduction),
             [rand((4, 5), "float32"), torch.tensor([4, 0, 3, 0]), wts], {"ign": 0,
                                                                          "reduction": red},
             tol=4.0, nograd=(2,))
        case("cross_entropy_probs", lambda x, t, ls, reduction: F.cross_entropy(
            x, t, reduction=reduction, label_smoothing=ls),
             [rand((3, 5), "float32"), rand((3, 5), "float32", 0, 1).softmax(1)],
             {"ls": 0.1, "reduction": red}, tol=4.0)
        case("binary_cross_entropy_weight", lambda x, t, w, reduction: F.binary_cross_entropy(
            x, t, w, reduction=reduction),
             [rand((3, 4), "float32", 0.05, 0.95), rand((3, 4), "float32", 0, 1),
              rand((4,), "float32", 0, 2)], {"reduction": red}, tol=4.0, nograd=(2,))
        case("bce_with_logits_pos_weight", lambda x, t, w, pw, reduction:
             F.binary_cross_entropy_with_logits(x, t, w, reduction=reduction, pos_weight=pw),
             [rand((3, 4), "float32"), rand((3, 4), "float32", 0, 1), rand((3, 1), "float32", 0, 2),
              rand((4,), "float32", 0.5, 3)], {"reduction": red}, tol=4.0, nograd=(2, 3))
    case("cross_entropy_opts", lambda x, t, w, ign, ls, reduction: F.cross_entropy(
        x, t, w, ignore_index=ign, reduction=reduction, label_smoothing=ls),
         [rand((3, 5), "float32"), torch.tensor([0, 1, 2]), rand((4,), "float32")],
         {"ign": -100, "ls": 0.0, "reduction": "mean"}, nograd=(2,))  # weight of the wrong size

    # ---- split, chunk, index, cat of several
    for dt in ("float32", "int32"):
        x = rand((5, 6), dt)
        for size, dim in ((2, 0), (4, 1), (6, 1)):
            for part in range(-(-x.shape[dim] // size)):
                case("split", lambda x, size, dim, part: x.split(size, dim)[part], [x],
                     {"size": size, "dim": dim, "part": part})
        for sizes, dim in (([1, 4], 0), ([3, 0, 3], 1)):
            for part in range(len(sizes)):
                case("split_sizes", lambda x, sizes, dim, part: x.split(sizes, dim)[part], [x],
                     {"sizes": sizes, "dim": dim, "part": part})
        case("split_sizes", lambda x, sizes, dim, part: x.split(sizes, dim)[part], [x],
             {"sizes": [2, 2], "dim": 0, "part": 0})  # sizes do not add up
        case("split", lambda x, size, dim, part: x.split(size, dim)[part], [x],
             {"size": 0, "dim": 0, "part": 0})
        for n, dim in ((3, 0), (4, 1), (6, 0), (5, 1)):
            # the number of chunks (PyTorch: ceil(len / ceil(len / n)), fewer than n at times)
            case("chunk_count", lambda x, n, dim: torch.tensor(len(x.chunk(n, dim))), [x],
                 {"n": n, "dim": dim})
            for part in range(len(x.chunk(n, dim))):
                case("chunk", lambda x, n, dim, part: x.chunk(n, dim)[part], [x],
                     {"n": n, "dim": dim, "part": part})
        case("chunk", lambda x, n, dim, part: x.chunk(n, dim)[part], [x],
             {"n": 0, "dim": 0, "part": 0})
        y = rand((3, 4, 5), dt)
        for which in range(len(INDEX_FORMS)):
            case("index", lambda x, which: INDEX_FORMS[which](x), [y], {"which": which})
        case("cat3", lambda a, b, c, dim: torch.cat([a, b, c], dim),
             [rand((2, 3), dt), rand((2, 1), dt), rand((2, 4), dt)], {"dim": 1})
        case("cat3", lambda a, b, c, dim: torch.cat([a, b, c], dim),
             [rand((2, 3), dt), rand((0, 3), dt), rand((1, 3), dt)], {"dim": -2})
    case("cat3", lambda a, b, c, dim: torch.cat([a, b, c], dim),
         [rand((2,), "int32"), rand((1,), "float64"), rand((3,), "uint8")], {"dim": 0})

    # ---- optimizers: a parameter after three steps of fixed gradients
    for kind, kw in [("sgd", {"lr": 0.1, "momentum": 0.0, "dampening": 0.0, "wd": 0.0,
                              "nesterov": False, "maximize": False}),
                     ("sgd", {"lr": 0.1, "momentum": 0.9, "dampening": 0.0, "wd": 0.01,
                              "nesterov": True, "maximize": False}),
                     ("sgd", {"lr": 0.05, "momentum": 0.5, "dampening": 0.3, "wd": 0.0,
                              "nesterov": False, "maximize": True}),
                     ("adam", {"lr": 0.01, "b1": 0.9, "b2": 0.999, "eps": 1e-8, "wd": 0.0,
                               "amsgrad": False, "maximize": False}),
                     ("adam", {"lr": 0.01, "b1": 0.8, "b2": 0.99, "eps": 1e-6, "wd": 0.1,
                               "amsgrad": True, "maximize": False}),
                     ("adamw", {"lr": 0.01, "b1": 0.9, "b2": 0.999, "eps": 1e-8, "wd": 0.05,
                                "amsgrad": False, "maximize": True})]:
        for dt in ("float32", "float64"):
            case("optim_" + kind, run_optimizer(kind),
                 [rand((3, 4), dt)] + [rand((3, 4), dt) for _ in range(3)], kw, grad=False,
                 tol=4.0)

    # ---- more math
    for op, fn, lo, hi, tol in [("erf", torch.erf, -3, 3, 4.0), ("erfc", torch.erfc, -3, 3, 4.0),
                                ("log1p", torch.log1p, -0.9, 3, 2.0),
                                ("expm1", torch.expm1, -2, 2, 2.0),
                                ("asin", torch.asin, -0.99, 0.99, 2.0),
                                ("acos", torch.acos, -0.99, 0.99, 2.0),
                                ("atan", torch.atan, -5, 5, 2.0), ("sinh", torch.sinh, -3, 3, 2.0),
                                ("cosh", torch.cosh, -3, 3, 2.0),
                                ("asinh", torch.asinh, -5, 5, 2.0),
                                ("acosh", torch.acosh, 1.01, 6, 2.0),
                                ("atanh", torch.atanh, -0.99, 0.99, 2.0)]:
        unary(op, fn, lo=lo, hi=hi, tol=tol, ints=("int32",))
    for dt in ("float32", "float64"):  # tiny arguments, where the plain compositions lose digits
        tiny = torch.tensor([1e-8, -3e-7, 2e-5, 1e-3], dtype=DT[dt])
        for op, fn in [("log1p", torch.log1p), ("expm1", torch.expm1), ("sinh", torch.sinh),
                       ("asinh", torch.asinh), ("atanh", torch.atanh), ("atan", torch.atan),
                       ("asin", torch.asin), ("erf", torch.erf)]:
            case(op, fn, [tiny], tol=2.0)
    binary("atan2", torch.atan2, dtypes=(("float32", "float32"), ("float64", "float64"),
                                         ("int32", "float32")), tol=2.0)
    case("atan2", torch.atan2, [torch.tensor([0.0, -0.0, 1.0, -1.0, 0.0]),
                                torch.tensor([0.0, -1.0, 0.0, -0.0, -2.0])], grad=False)
    binary("hypot", torch.hypot, dtypes=(("float32", "float32"), ("float64", "float32")),
           tol=2.0)
    case("hypot", torch.hypot, [torch.tensor([3e30, 1e-30, 0.0]), torch.tensor([4e30, 0.0, 0.0])])
    for op, fn in [("remainder", torch.remainder), ("fmod", torch.fmod),
                   ("floor_divide", torch.floor_divide)]:
        binary(op, fn, dtypes=(("float32", "float32"), ("int32", "int32"), ("int64", "int32"),
                               ("int32", "float32"), ("float64", "float64")), lo=-7, hi=7, tol=2.0)
    for op in ("bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_left_shift",
               "bitwise_right_shift"):
        fn = getattr(torch, op)
        for a, b in (("int32", "int32"), ("int64", "int8"), ("uint8", "uint8"), ("bool", "bool")):
            if "shift" in op and a == "bool":
                continue
            y = rand((4,), b) if "shift" not in op else torch.randint(0, 5, (4,), generator=g).to(
                DT[b])
            case(op, fn, [rand((3, 4), a), y])
        case(op, fn, [rand((3,), "float32"), rand((3,), "int32")])  # floats refused
    for dt in ("int32", "int64", "uint8", "bool"):
        case("bitwise_not", torch.bitwise_not, [rand((5,), dt)])
    case("bitwise_not", torch.bitwise_not, [rand((5,), "float32")])
    for w in (rand((4,), "float32", 0, 1), rand((3, 4), "float32", -0.5, 1.5)):
        case("lerp", torch.lerp, [rand((3, 4), "float32"), rand((3, 4), "float32"), w])
    case("lerp", torch.lerp, [rand((3, 4), "float64"), rand((4,), "float64"),
                              rand((), "float64", 0, 1)])
    for dt in ("float32", "float64"):
        x = rand((3, 4), dt)
        for p in (2, 1, 3, math.inf, -math.inf, 0):
            case("norm", lambda x, p, dim, keepdim: torch.linalg.vector_norm(x, p, dim, keepdim),
                 [x], {"p": float(p), "dim": [1], "keepdim": False}, tol=4.0)
        case("norm", lambda x, p, dim, keepdim: torch.linalg.vector_norm(x, p, dim, keepdim),
             [x], {"p": 2.0, "dim": [], "keepdim": False}, tol=4.0)
        case("norm", lambda x, p, dim, keepdim: torch.linalg.vector_norm(x, p, dim, keepdim),
             [torch.zeros(3, dtype=DT[dt])], {"p": 2.0, "dim": [0], "keepdim": True})

    # ---- selection, placement and order
    for dt in ("float32", "int32"):
        x = rand((3, 4), dt)
        case("amax", lambda x, dim, keepdim: x.amax(dim, keepdim), [x],
             {"dim": [0, 1], "keepdim": False})
        case("amin", lambda x, dim, keepdim: x.amin(dim, keepdim), [x],
             {"dim": [1], "keepdim": True})
        case("cumprod", lambda x, dim: x.cumprod(dim), [rand((3, 5), dt, -1.5, 1.5)], {"dim": 1},
             tol=4.0)
        case("cummax", lambda x, dim: x.cummax(dim).values, [x], {"dim": 1})
        case("cummax_indices", lambda x, dim: x.cummax(dim).indices, [x], {"dim": 0})
        case("cummin", lambda x, dim: x.cummin(dim).values, [x], {"dim": 1})
        case("masked_fill", lambda x, m, v: x.masked_fill(m, v), [x, rand((4,), "bool")],
             {"v": -2})
        case("tril", lambda x, k: x.tril(k), [rand((2, 3, 4), dt)], {"k": 0})
        case("tril", lambda x, k: x.tril(k), [x], {"k": -1})
        case("triu", lambda x, k: x.triu(k), [x], {"k": 1})
        case("triu", lambda x, k: x.triu(k), [rand((4,), dt)], {"k": 0})
        for dim in (0, 1):
            case("sort", lambda x, dim, descending: x.sort(dim, descending).values, [x],
                 {"dim": dim, "descending": bool(dim)})
            case("argsort", lambda x, dim, descending: x.argsort(dim, descending), [
                 torch.randperm(12, generator=g).reshape(3, 4).to(DT[dt])],
                 {"dim": dim, "descending": not dim})
        case("topk", lambda x, k, dim, largest: x.topk(k, dim, largest).values, [x],
             {"k": 2, "dim": 1, "largest": True})
        case("topk", lambda x, k, dim, largest: x.topk(k, dim, largest).values, [x],
             {"k": 3, "dim": 0, "largest": False})
        case("topk", lambda x, k, dim, largest: x.topk(k, dim, largest).values, [x],
             {"k": 5, "dim": 1, "largest": True})
        idx = torch.tensor([[0, 1, 2], [2, 0, 1]])
        case("scatter", lambda x, i, s, dim: x.scatter(dim, i, s),
             [x, idx, rand((2, 3), dt)], {"dim": 0})
        case("scatter_add", lambda x, i, s, dim: x.scatter_add(dim, i, s),
             [x, torch.tensor([[0, 1], [3, 3]]), rand((2, 2), dt)], {"dim": 1})
        case("scatter_add", lambda x, i, s, dim: x.scatter_add(dim, i, s),
             [x, torch.tensor([[0, 4]]), rand((1, 2), dt)], {"dim": 1})
        case("index_add", lambda x, i, s, dim: x.index_add(dim, i, s),
             [x, torch.tensor([2, 0, 2]), rand((3, 4), dt)], {"dim": 0})
        case("index_add", lambda x, i, s, dim: x.index_add(dim, i, s),
             [x, torch.tensor([1, 3]), rand((3, 2), dt)], {"dim": 1})
    # (+0 and -0 tie: their order, and so the gradient, is PyTorch's choice)
    case("sort", lambda x, dim, descending: x.sort(dim, descending).values, [edge("float32")],
         {"dim": 0, "descending": False}, grad=False)
    case("sort", lambda x, dim, descending: x.sort(dim, descending).values, [edge("float32")],
         {"dim": 0, "descending": True}, grad=False)
    case("cummax", lambda x, dim: x.cummax(dim).values, [edge("float32")], {"dim": 0})
    for op in ("cumprod", "logcumsumexp"):
        fn = (lambda x, dim: x.cumprod(dim)) if op == "cumprod" else (
            lambda x, dim: x.logcumsumexp(dim))
        case(op, fn, [rand((2, 3, 4), "float64")], {"dim": 2}, tol=4.0)
    case("logcumsumexp", lambda x, dim: x.logcumsumexp(dim), [rand((3, 5), "float32", -50, 50)],
         {"dim": 1}, tol=4.0)
    case("logcumsumexp", lambda x, dim: x.logcumsumexp(dim),
         [torch.tensor([-math.inf, -math.inf, 0.0, 1e4])], {"dim": 0}, grad=False)
    # later terms far above the running maximum (exp of their difference overflows float32)
    case("logcumsumexp", lambda x, dim: x.logcumsumexp(dim),
         [torch.tensor([[-49.0, 47.0, 0.0, -3.0], [10.0, -60.0, 60.0, 59.0]])], {"dim": 1})
    case("outer", torch.outer, [rand((3,), "float32"), rand((4,), "float32")])
    case("outer", torch.outer, [rand((3,), "int32"), rand((4,), "float32")])
    case("outer", torch.outer, [rand((3, 1), "float32"), rand((4,), "float32")])
    for eq, shapes in [("ij,jk->ik", [(3, 4), (4, 2)]), ("ij,kj", [(3, 4), (2, 4)]),
                       ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]), ("i,i->", [(5,), (5,)]),
                       ("ij->ji", [(3, 4)]), ("ij,j->i", [(3, 4), (4,)]),
                       ("i,j->ij", [(3,), (2,)]), ("ij,jk->ik", [(3, 4), (5, 2)]),
                       ("ii->i", [(3, 3)]), ("ii", [(3, 3)]), ("iij->j", [(2, 2, 3)])]:
        ins = [rand(s_, "float32") for s_ in shapes]
        case("einsum" + str(len(ins)), lambda *xs, eq: torch.einsum(eq, *xs), ins, {"eq": eq},
             tol=4.0)
    case("one_hot", lambda i, n: F.one_hot(i, n), [torch.tensor([0, 3, 1])], {"n": 4})
    case("one_hot", lambda i, n: F.one_hot(i, n), [torch.tensor([[0, 2], [1, 0]])], {"n": -1})
    case("one_hot", lambda i, n: F.one_hot(i, n), [torch.tensor([0, 4])], {"n": 3})

    # ---- nn.functional, more
    for size in ([6, 4], [2, 3]):
        case("interpolate_nearest", lambda x, size: F.interpolate(x, size=size, mode="nearest"),
             [rand((1, 2, 3, 4), "float32")], {"size": size})
        for ac in (False, True):
            case("interpolate_bilinear", lambda x, size, align: F.interpolate(
                x, size=size, mode="bilinear", align_corners=align),
                 [rand((2, 1, 3, 4), "float32")], {"size": size, "align": ac}, tol=4.0)
    case("adaptive_avg_pool2d", lambda x, s: F.adaptive_avg_pool2d(x, s),
         [rand((1, 2, 6, 6), "float32")], {"s": [3, 2]}, tol=4.0)
    case("adaptive_avg_pool2d", lambda x, s: F.adaptive_avg_pool2d(x, s),
         [rand((2, 1, 5, 7), "float32")], {"s": [3, 4]}, tol=4.0)
    for stride, padding, dilation, groups in [(1, 0, 1, 1), (2, 1, 1, 1), (1, 2, 2, 2)]:
        case("conv1d", lambda x, w, b, stride, padding, dilation, groups: F.conv1d(
            x, w, b, stride, padding, dilation, groups),
             [rand((2, 4, 9), "float32"), rand((6, 4 // groups, 3), "float32"),
              rand((6,), "float32")],
             {"stride": stride, "padding": padding, "dilation": dilation, "groups": groups},
             tol=8.0)
    for stride, padding, outpad, groups, dilation in [(1, 0, 0, 1, 1), (2, 1, 1, 1, 1),
                                                      (2, 0, 0, 2, 1), (1, 1, 0, 1, 2),
                                                      (3, 2, 1, 1, 1)]:
        case("conv_transpose2d", lambda x, w, b, stride, padding, outpad, groups, dilation:
             F.conv_transpose2d(x, w, b, stride, padding, outpad, groups, dilation),
             [rand((2, 4, 4, 3), "float32"), rand((4, 6 // groups, 3, 2), "float32"),
              rand((6,), "float32")],
             {"stride": stride, "padding": padding, "outpad": outpad, "groups": groups,
              "dilation": dilation}, tol=8.0)
    for n in (1, 2, 4):
        case("group_norm", lambda x, w, b, n: F.group_norm(x, n, w, b),
             [rand((2, 4, 3, 3), "float32"), rand((4,), "float32"), rand((4,), "float32")],
             {"n": n}, tol=16.0)
    case("group_norm", lambda x, w, b, n: F.group_norm(x, n, w, b),
         [rand((2, 4, 3), "float32"), rand((4,), "float32"), rand((4,), "float32")],
         {"n": 3})
    case("instance_norm", lambda x: F.instance_norm(x), [rand((2, 3, 4, 4), "float32")],
         tol=16.0)

    # ---- recurrent layers, with the module's parameters as inputs
    def rnn(x, *ps, mode, layers, bidir, bf):
        m = getattr(torch.nn, mode)(3, 4, layers, batch_first=bf, bidirectional=bidir)
        m._flat_weights = list(ps)  # what forward reads (functional_call misses it in 1.13)
        return m(x)[0]

    for mode in ("LSTM", "GRU"):
        for layers, bidir, bf, shape in ((1, False, False, (5, 2, 3)), (2, True, True, (2, 4, 3)),
                                         (1, True, False, (4, 3))):
            m = getattr(torch.nn, mode)(3, 4, layers, batch_first=bf, bidirectional=bidir)
            ps = [p.detach() for p in m.parameters()]
            case(mode.lower(), rnn, [rand(shape, "float32")] + ps,
                 {"mode": mode, "layers": layers, "bidir": bidir, "bf": bf}, tol=16.0)

    with open(args.out, "w") as f:
        f.write("# made by tests/torch/make_cases.py with torch %s\n" % torch.__version__)
        f.write("\n".join(out_lines) + "\n")
    print("make_cases: %d cases of %d ops (torch %s) -> %s" %
          (sum(counts.values()), len(counts), torch.__version__, args.out))


if __name__ == "__main__":
    sys.exit(main())
