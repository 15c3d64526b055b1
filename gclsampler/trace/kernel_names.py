"""When a trace's kernel name and a profiler's kernel name are the same kernel.

Why this exists: the NVBit tracer records the *mangled* symbol
(``_Z22bpnn_layerforward_CUDAPfS_S_S_ii``) while Nsight Compute, Nsight Systems and
torch.profiler print it *demangled*, with their own spacing
(``bpnn_layerforward_CUDA(float *, float *, ...)``), or only the function's base name
(ncu's ``--print-kernel-base function``). An exact string comparison refused every real
trace + profile pair. Names are compared in this order, and the first rule that holds wins:

1. equal strings;
2. equal after demangling either side (``__cxa_demangle`` via cxxfilt) and removing
   whitespace, with a cv-qualifier written before its type moved behind it (Nsight Compute
   prints ``const int *`` where the demangler writes ``int const*``; seen on the first real
   exports, where every kernel with a const pointer failed to match its trace);
3. one side is the other's demangled name without its parameter list and return type
   (``void ns::f<int>(int*)`` -> ``ns::f<int>``), without template arguments too
   (``ns::f``), or without namespaces (``f``).

4. equal in the spelling both demanglers share: NVIDIA's (Nsight Compute, Nsight Systems)
   writes a template kernel's parameters as its template parameters (``(int, T2, T3)``),
   integer template arguments as casts (``(int)2``, ``(unsigned long)2`` where the
   demangler writes ``2``, ``2ul``), an anonymous namespace as ``<unnamed>`` (the demangler:
   ``(anonymous namespace)``) and a lambda as ``[lambda(int) (instance 1)]`` (``{lambda(int)#1}``).
   Those are brought to one form; where either name holds a template parameter (``T2``,
   ``T1::Params``), parameter lists and return types inside template arguments are left out,
   the qualified names and template arguments still compared, and the kernels' own
   parameters compared position by position, a placeholder standing for any type. Every PyTorch elementwise kernel in
   an ncu or nsys export failed rules 1-3 before.

Rule 3 is what a base-name profile can say; the launch's grid and block, which
``validate`` compares as well, keep two different kernels of one base name apart.
"""

from __future__ import annotations

import functools
import re

__all__ = ["demangle", "same_kernel"]


@functools.lru_cache(maxsize=65536)
def demangle(name: str) -> str:
    """The demangled form of an Itanium-mangled name (``_Z...``); other names unchanged.

    Falls back to the name itself when cxxfilt or the C++ runtime it loads is missing,
    or the symbol does not demangle: comparisons then need equal spellings.
    """
    if not name.startswith("_Z"):
        return name
    try:
        import cxxfilt

        return cxxfilt.demangle(name) or name
    except Exception:  # noqa: BLE001 - no libstdc++/libc++ or an invalid symbol: keep the name
        return name


def _squeeze(name: str) -> str:
    return "".join(name.split())


# "const T" -> "T const" for a simple type T (optionally signed/unsigned/long/short, with
# namespaces and one level of template arguments): the demangler's spelling
_PREFIX_CV = re.compile(r"\b(const|volatile)\s+((?:(?:unsigned|signed|long|short)\s+)*[A-Za-z_][\w:]*(?:<[^<>]*>)?)")


def _canonical(name: str) -> str:
    return _squeeze(_PREFIX_CV.sub(r"\2 \1", name))


def _params(name: str) -> str:
    """The trailing top-level parameter list of ``name`` (empty when it has none)."""
    s = name.strip()
    if s.endswith(")"):
        depth = 0
        for i in range(len(s) - 1, -1, -1):
            depth += {")": 1, "(": -1}.get(s[i], 0)
            if depth == 0:
                return s[i:]
    return ""


def _strip_params(name: str) -> str:
    """``void f<int>(int*)`` -> ``f<int>``: drop the trailing parameter list and a return type."""
    s = name.strip()
    s = s[:len(s) - len(_params(s))]
    depth, cut = 0, 0  # a return type is what precedes the last top-level space
    for i, ch in enumerate(s):
        depth += {"<": 1, ">": -1, "(": 1, ")": -1}.get(ch, 0)
        if ch == " " and depth == 0:
            cut = i + 1
    return s[cut:]


def _strip_templates(name: str) -> str:
    out, depth = [], 0
    for ch in name:
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth = max(0, depth - 1)
        elif depth == 0:
            out.append(ch)
    return "".join(out)


_CAST = re.compile(r"\((?:unsigned |signed )?(?:char|short|int|long|long long|__int128)\)(?=-?\d)")
_BOOL = re.compile(r"\(bool\)([01])\b")
_INT_SUFFIX = re.compile(r"(?<![\w.])(-?\d+)(?:ull|ul|ll|u|l)\b", re.IGNORECASE)
_NV_LAMBDA = re.compile(r"\[lambda\(([^()]*)\) \(instance (\d+)\)\]")
_GNU_LAMBDA = re.compile(r"\{lambda\(([^()]*)\)#(\d+)\}")
_TEMPLATE_PARAM = re.compile(r"(?<![\w:])T\d+(?!\w)")  # T2, and T1::Params (CUTLASS's parameter struct)
_NESTED_VOID = re.compile(r"(^|[<,]\s*)void\s+")


def _unify(name: str) -> str:
    """Rule 4's spelling: NVIDIA's and the GNU demangler's ways of writing one name made equal
    (the parameter list kept)."""
    s = name.replace("<unnamed>", "(anonymous namespace)")
    s = _NV_LAMBDA.sub(r"lambda(\1)#\2", _GNU_LAMBDA.sub(r"lambda(\1)#\2", s))
    s = _BOOL.sub(lambda m: "true" if m.group(1) == "1" else "false", _CAST.sub("", s))
    # one token, so that finding the return type and the parameter list does not split it
    return _INT_SUFFIX.sub(r"\1", s).replace("(anonymous namespace)", "anonymous_namespace")


@functools.lru_cache(maxsize=65536)
def same_kernel(a: str, b: str) -> bool:
    """True when ``a`` and ``b`` name the same kernel (see the module docstring)."""
    if a == b:
        return True
    da, db = demangle(a), demangle(b)
    if _squeeze(da) == _squeeze(db) or _canonical(da) == _canonical(db):
        return True
    for short, full in ((da, db), (db, da)):
        if "(" in short:
            continue  # a full signature that differs is another kernel
        base = _strip_params(full)
        bare = _strip_templates(base)
        if _squeeze(short) in (_squeeze(base), _squeeze(bare), _squeeze(bare.rsplit("::", 1)[-1])):
            return True
    ua, ub = _unify(da), _unify(db)
    if _canonical(ua) == _canonical(ub):
        return True
    if _TEMPLATE_PARAM.search(ua) or _TEMPLATE_PARAM.search(ub):
        return (_canonical(_without_signatures(ua)) == _canonical(_without_signatures(ub))
                and _same_parameters(_params(ua), _params(ub)))
    return False


def _top_level(params: str) -> list[str]:
    """``(int, f<a, b>, T3)`` -> ``["int", "f<a, b>", "T3"]``: the parameters of one list."""
    inner = params[1:-1].strip()
    if not inner:
        return []
    out, depth, start = [], 0, 0
    for i, ch in enumerate(inner):
        depth += {"<": 1, "(": 1, "[": 1, "{": 1, ">": -1, ")": -1, "]": -1, "}": -1}.get(ch, 0)
        if ch == "," and depth == 0:
            out.append(inner[start:i])
            start = i + 1
    return out + [inner[start:]]


def _same_parameters(a: str, b: str) -> bool:
    """The kernels' own parameter lists, position by position: a parameter naming a template
    parameter (``T2``, ``const T1 &``) stands for any type, the others must be equal. So
    ``k<float>(float *, int)`` and ``k<float>(T1 *, T1 *, int)`` stay two overloads."""
    pa, pb = _top_level(a) if a else [], _top_level(b) if b else []
    if len(pa) != len(pb):
        return False
    return all(_TEMPLATE_PARAM.search(x) or _TEMPLATE_PARAM.search(y) or _canonical(x) == _canonical(y)
               for x, y in zip(pa, pb))


def _without_signatures(name: str) -> str:
    """``name`` with every function parameter list and return type left out, at any depth.

    Why: NVIDIA's demangler writes a template parameter (``T1``) in place of a type wherever
    one appears, also inside template arguments: PyTorch's most common kernel,
    ``elementwise_kernel<128, 2, void gpu_kernel_impl_nocast<F>(TensorIteratorBase &, const T1 &)
    ::[lambda(int) (instance 1)]>(int, T3)``, names the lambda's enclosing function with a
    return type and placeholder parameters, where the GNU demangler writes the types and no
    return type. What is left (qualified names and template arguments) still tells kernels apart.
    """
    out: list[str] = []
    i = 0
    while i < len(name):
        ch = name[i]
        if ch == "(" and out and (out[-1].isalnum() or out[-1] in "_>"):
            depth = 0
            while i < len(name):  # skip the parameter list, nested parentheses and all
                depth += {"(": 1, ")": -1}.get(name[i], 0)
                i += 1
                if depth == 0:
                    break
            continue
        out.append(ch)
        i += 1
    return _NESTED_VOID.sub(r"\1", "".join(out).strip())
