"""Trace names are mangled (NVBit), profiler names demangled: one kernel either way."""

from __future__ import annotations

import sys

import pandas as pd
import pytest

from gclsampler.trace.kernel_names import demangle, same_kernel

BP = "_Z22bpnn_layerforward_CUDAPfS_S_S_ii"
EW = ("_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_13BinaryFunctorIN3c104HalfES4_S4_NS0_15binary_internal"
      "10MulFunctorIfEEEESt5arrayIPcLm3EEEEviT0_T1_")


@pytest.mark.parametrize("profiled", [
    BP,
    "bpnn_layerforward_CUDA(float*, float*, float*, float*, int, int)",   # __cxa_demangle spelling
    "bpnn_layerforward_CUDA(float *, float *, float *, float *, int, int)",  # nsys / ncu spelling
    "bpnn_layerforward_CUDA",                                             # ncu --print-kernel-base function
])
def test_spellings_of_one_kernel_match(profiled):
    assert same_kernel(profiled, BP) and same_kernel(BP, profiled)


@pytest.mark.parametrize("profiled", [
    "void at::native::vectorized_elementwise_kernel<4, at::native::BinaryFunctor<c10::Half, c10::Half, c10::Half, "
    "at::native::binary_internal::MulFunctor<float>>, std::array<char*, 3ul>>(int, at::native::BinaryFunctor<c10::Half, "
    "c10::Half, c10::Half, at::native::binary_internal::MulFunctor<float>>, std::array<char*, 3ul>)",
    "at::native::vectorized_elementwise_kernel", "vectorized_elementwise_kernel",
])
def test_templated_namespaced_kernel_matches_its_torch_and_base_names(profiled):
    assert same_kernel(EW, profiled)


@pytest.mark.parametrize("other", [
    "bpnn_layerforward_CUDA(float*, float*, float*, float*, int, int, int)",  # another overload
    "bpnn_adjust_weights_cuda", "_Z24bpnn_adjust_weights_cudaPfiS_iS_S_", "layerforward", "",
])
def test_other_kernels_do_not_match(other):
    assert not same_kernel(BP, other) and not same_kernel(other, BP)


def test_ncu_const_spelling_matches_the_demangled_trace_name():
    """Nsight Compute 2025.3.1 on an H200 printed ``const int *``; the demangler writes
    ``int const*``. Every real nw/lud/bfs kernel with a const pointer failed to match."""
    nw = "_Z15nw_kernel_upperPiPKiii"
    assert same_kernel(nw, "nw_kernel_upper(int *, const int *, int, int)")
    assert same_kernel("_Z1fPKjPVf", "f(const unsigned int *, volatile float *)")
    assert not same_kernel(nw, "nw_kernel_upper(int *, int *, int, int)")  # constness still tells overloads apart
    assert not same_kernel(nw, "nw_kernel_upper(const int *, int *, int, int)")


def test_real_ncu_names_match_the_tracer_time_only_names():
    """Both ends as the H200 wrote them: the tool's mangled names (real/*/raw/gcl_time_only.csv)
    and Nsight Compute's demangled ones (real/*/profile.csv), launch by launch."""
    from pathlib import Path

    from gclsampler.profile import read_profile

    real = Path(__file__).resolve().parents[1] / "real"
    pairs = [(d / "raw" / "gcl_time_only.csv", d / "profile.csv") for d in sorted(real.glob("*"))
             if (d / "raw" / "ncu.csv.xz").exists()]
    if not pairs:
        pytest.skip("no real workload with an Nsight Compute profile committed")
    for tool, ncu in pairs:
        a, b = read_profile(tool)["kernel_name"], read_profile(ncu)["kernel_name"]
        assert len(a) == len(b) and all(same_kernel(x, y) for x, y in zip(a, b)), tool


def test_without_a_demangler_only_equal_spellings_match(monkeypatch):
    demangle.cache_clear(), same_kernel.cache_clear()
    monkeypatch.setitem(sys.modules, "cxxfilt", None)  # import fails
    try:
        assert demangle(BP) == BP
        assert not same_kernel(BP, "bpnn_layerforward_CUDA") and same_kernel(BP, BP)
    finally:
        demangle.cache_clear(), same_kernel.cache_clear()


def test_validate_accepts_a_demangled_profile_of_mangled_traces(tmp_path, capsys):
    from gclsampler.cli import main
    from gclsampler.synth import generate

    wl = generate("backprop", tmp_path / "wl", params={"input": 64, "trace_cap": 16, "max_traced_ctas": 1},
                  arch="turing", progress=False, jobs=1)
    prof = pd.read_csv(wl / "profile.csv")
    assert prof["kernel_name"].str.startswith("_Z").all()
    prof["kernel_name"] = [demangle(n).replace("*", " *") for n in prof["kernel_name"]]  # as nsys prints them
    prof.to_csv(wl / "profile.csv", index=False)
    assert main(["validate", str(wl)]) == 0
    prof.loc[1, "kernel_name"] = "bpnn_layerforward_CUDA(float *, float *, float *, float *, int, int)"
    prof.to_csv(wl / "profile.csv", index=False)
    capsys.readouterr()
    assert main(["validate", str(wl)]) == 2
    assert "profile.csv:3: kernel_name" in capsys.readouterr().err


def test_validate_accepts_an_arch_profile_from_another_profiler(tmp_path, capsys):
    """profiles/<arch>.csv from nsys beside an ncu profile.csv: the same kernels spelt two ways."""
    from gclsampler.cli import main
    from gclsampler.synth import generate

    wl = generate("backprop", tmp_path / "wl", params={"input": 64, "trace_cap": 16, "max_traced_ctas": 1,
                                                       "archs": ["turing", "ampere"]},
                  arch="turing", progress=False, jobs=1)
    other = wl / "profiles" / "ampere.csv"
    prof = pd.read_csv(other)
    prof["kernel_name"] = [demangle(n).replace("*", " *") for n in prof["kernel_name"]]
    prof.to_csv(other, index=False)
    assert main(["validate", str(wl)]) == 0
    prof.loc[0, "kernel_name"] = "bpnn_adjust_weights_cuda"
    prof.to_csv(other, index=False)
    capsys.readouterr()
    assert main(["validate", str(wl)]) == 2
    assert "ampere.csv:2: kernel_name" in capsys.readouterr().err


# EW as Nsight Compute and Nsight Systems print it: template parameters in the parameter list,
# integer template arguments as casts (nsys), no "3ul" suffix
EW_NCU = ("void at::native::vectorized_elementwise_kernel<4, at::native::BinaryFunctor<c10::Half, c10::Half, "
          "c10::Half, at::native::binary_internal::MulFunctor<float>>, std::array<char *, 3>>(int, T2, T3)")
EW_NSYS = ("void at::native::vectorized_elementwise_kernel<(int)4, at::native::BinaryFunctor<c10::Half, c10::Half, "
           "c10::Half, at::native::binary_internal::MulFunctor<float>>, std::array<char *, (unsigned long)3>>(int, T2, "
           "T3)")


@pytest.mark.parametrize("profiled", [EW_NCU, EW_NSYS])
def test_nvidia_demangler_spelling_of_a_template_kernel_matches(profiled):
    """ncu and nsys write a template kernel's parameters as T1, T2, ... and nsys its integer
    arguments as casts; every PyTorch elementwise kernel failed to match its trace before."""
    assert same_kernel(EW, profiled) and same_kernel(profiled, EW)


@pytest.mark.parametrize("other", [
    EW_NCU.replace("<4,", "<2,"),                     # another vector width: another kernel
    EW_NSYS.replace("MulFunctor<float>", "AddFunctor<float>"),
    EW_NCU.replace("c10::Half, c10::Half, c10::Half", "float, float, float"),
])
def test_template_arguments_still_tell_kernels_apart_when_parameters_are_placeholders(other):
    assert not same_kernel(EW, other)


def test_anonymous_namespaces_lambdas_and_bool_arguments_in_either_spelling():
    assert same_kernel("_ZN12_GLOBAL__N_16kernelEPf", "<unnamed>::kernel(float *)")
    assert not same_kernel("_ZN12_GLOBAL__N_16kernelEPf", "<unnamed>::kernel(double *)")
    assert same_kernel("_Z3fooILb1ELc3EEvv", "void foo<(bool)1, (char)3>()")
    assert not same_kernel("_Z3fooILb1ELc3EEvv", "void foo<(bool)0, (char)3>()")
    gnu = "void k<128, f()::{lambda(int)#1}>(int, f()::{lambda(int)#1})"
    assert same_kernel(gnu, "void k<128, f()::[lambda(int) (instance 1)]>(int, T2)")
    assert not same_kernel(gnu, "void k<128, f()::[lambda(int) (instance 2)]>(int, T2)")


# PyTorch's elementwise_kernel with its lambda, as g++ mangles it, and as nsys prints it: the
# lambda's enclosing function with a return type and T1 inside the template arguments
EW_LAMBDA = ("_ZN2at6native18elementwise_kernelILi128ELi2EZNS0_22gpu_kernel_impl_nocastINS0_13BinaryFunctorIfffNS0_"
             "15binary_internal10MulFunctorIfEEEEEEvRNS_18TensorIteratorBaseERKT_EUliE_EEviT1_")
EW_LAMBDA_NSYS = ("void at::native::elementwise_kernel<(int)128, (int)2, void at::native::gpu_kernel_impl_nocast<"
                  "at::native::BinaryFunctor<float, float, float, at::native::binary_internal::MulFunctor<float>>>("
                  "at::TensorIteratorBase &, const T1 &)::[lambda(int) (instance 1)]>(int, T3)")
CUTLASS = "_ZN7cutlass7Kernel2I43cutlass_80_simt_sgemm_256x128_8x4_nn_align1EEvNT_6ParamsE"


@pytest.mark.parametrize("profiled", [EW_LAMBDA_NSYS, EW_LAMBDA_NSYS.replace("(int)128", "128").replace("(int)2,", "2,")])
def test_placeholders_inside_template_arguments_match(profiled):
    assert same_kernel(EW_LAMBDA, profiled)


@pytest.mark.parametrize("other", [
    EW_LAMBDA_NSYS.replace("MulFunctor", "DivFunctor"), EW_LAMBDA_NSYS.replace("(int)2,", "(int)4,"),
    EW_LAMBDA_NSYS.replace("instance 1", "instance 2"),
])
def test_placeholders_inside_template_arguments_keep_kernels_apart(other):
    assert not same_kernel(EW_LAMBDA, other)


def test_cutlass_params_placeholder_matches_its_kernel_only():
    assert same_kernel(CUTLASS, "void cutlass::Kernel2<cutlass_80_simt_sgemm_256x128_8x4_nn_align1>(T1::Params)")
    assert not same_kernel(CUTLASS, "void cutlass::Kernel2<cutlass_80_simt_sgemm_128x128_8x4_nn_align1>(T1::Params)")


def test_placeholder_parameters_are_wildcards_position_by_position():
    """Overloads sharing a name and template arguments stay apart by their parameter count and
    by the parameters that name no template parameter."""
    assert same_kernel("void k<float>(float*, float*, int)", "void k<float>(T1 *, T1 *, int)")
    assert not same_kernel("void k<float>(float*, int)", "void k<float>(T1 *, T1 *, int)")
    assert not same_kernel("void k<float>(float*, float*, int)", "void k<float>(T1 *, T1 *, long)")
