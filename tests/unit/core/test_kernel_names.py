"""Kernel identity from real kernel names (H100/H200 traces, torch 2.11) and CPU op names."""

from __future__ import annotations

import pytest
from support import paths

from sdpa_tui.core.protocol.records import KernelInfo
from sdpa_tui.core.traces import trace
from sdpa_tui.core.traces.kernel_names import KernelIdentity, identify, main_kernel
from sdpa_tui.core.traces.kernel_short_names import MAX_SHORT, short_name

FIXTURES = paths.FIXTURES / "traces" / "h200-torch2.11"

CUDNN_H100 = "cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x128x64_4x1x1_cga1x1x1_kernel0_0"
CUDNN_A100 = "cudnn_generated_fort_native_sdpa_sm80_flash_fprop_wmma_f16_knob_6_128x64x64_4x1x1_kernel0_0"
# backward names below were seen on an H200 (torch 2.11.0+cu130, cuDNN 9.19) for [2, 8, 512, 64] fp16
CUDNN_BWD = "cudnn_generated_fort_native_sdpa_sm90_flash_bprop_wgmma_f16_knob_26_64x64x64_1x4x1_cga1x1x1_kernel0_0"
CUDNN_BWD_DOT = (
    "void cudnn::fusion::compute_dot_do_o_specialized<false, 64>(void const*, void const*, void*, void*, "
    "unsigned int, unsigned int, float, void const*, bool, void const*, void*, int, int)"
)
CUDNN_BWD_CONVERT = (
    "void cudnn::fusion::convert_dq_to_16bits<false>(void const*, void*, unsigned int, unsigned int, "
    "float const*, float*, void const*, void*, void*, bool, bool)"
)
MEM_EFF_BWD_SEQALIGNED = (
    "fmha_cutlassB_f16_aligned_64x64_k64_seqaligned_sm80(PyTorchMemEffAttention::AttentionBackwardKernel<"
    "cutlass::arch::Sm80, cutlass::half_t, true, false, true, 64, 64, 64, true>::Params)"
)
FLASH_BWD_CONVERT_REAL = (
    "void pytorch_flash::flash_bwd_convert_dq_kernel<Flash_bwd_kernel_traits<64, 128, 128, 8, 4, 4, 4, "
    "false, false, cutlass::half_t, Flash_kernel_traits<64, 128, 128, 8, cutlass::half_t> > >"
    "(pytorch_flash::Flash_bwd_params, int)"
)
FLASH_FWD = (
    "void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, "
    "cutlass::bfloat16_t, Flash_kernel_traits<128, 128, 64, 4, cutlass::bfloat16_t> >, false, true, "
    "false, false, true, true, false, false>(pytorch_flash::Flash_fwd_params)"
)
FLASH_SPLITKV = (
    "void pytorch_flash::flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<64, 64, 256, 4, false, false, "
    "cutlass::half_t, Flash_kernel_traits<64, 64, 256, 4, cutlass::half_t> >, false, false, false, true, "
    "true, false, true, false>(pytorch_flash::Flash_fwd_params)"
)
FLASH_COMBINE = (
    "void pytorch_flash::flash_fwd_splitkv_combine_kernel<Flash_fwd_kernel_traits<64, 64, 256, 4, false, "
    "false, cutlass::half_t, Flash_kernel_traits<64, 64, 256, 4, cutlass::half_t> >, 8, 1, true>"
    "(pytorch_flash::Flash_fwd_params)"
)
FLASH_BWD = (
    "void pytorch_flash::flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<Flash_bwd_kernel_traits<64, 128, 128, "
    "8, 2, 4, 2, false, false, cutlass::half_t, Flash_kernel_traits<64, 128, 128, 8, cutlass::half_t> >, "
    "false, false, false, false, false, false, false, false>(pytorch_flash::Flash_bwd_params)"
)
FLASH_BWD_DOT = "void pytorch_flash::flash_bwd_dot_do_o_kernel<true, Flash_bwd_kernel_traits<...>>(pytorch_flash::Flash_bwd_params)"
FLASH_BWD_CONVERT = "void pytorch_flash::flash_bwd_convert_dq_kernel<...>(...)"
MEM_EFF_F32 = (
    "fmha_cutlassF_f32_aligned_64x64_rf_sm80(PyTorchMemEffAttention::AttentionKernel<float, "
    "cutlass::arch::Sm80, true, 64, 64, 64, true, true>::Params)"
)
MEM_EFF_BWD = (
    "fmha_cutlassB_f16_aligned_64x64_k64_sm80(PyTorchMemEffAttention::AttentionBackwardKernel<"
    "cutlass::arch::Sm80, cutlass::half_t, true, false, true, 64, 64, 64, false>::Params)"
)
CUBLAS_SM90 = "sm90_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas"
CUBLAS_AMPERE = "ampere_fp16_s16816gemm_fp16_128x128_ldg8_f2f_stages_32x5_nn"
SOFTMAX = (
    "void (anonymous namespace)::softmax_warp_forward<c10::Half, c10::Half, float, 9, false, false>"
    "(c10::Half*, c10::Half const*, int, int, int, bool const*, int, bool)"
)
DIRECT_COPY = (
    "void at::native::elementwise_kernel<128, 2, at::native::gpu_kernel_impl_nocast<at::native::"
    "direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#7}::"
    "operator()() const::{lambda(c10::Half)#1}>(at::TensorIteratorBase&, at::native::direct_copy_kernel_cuda"
    "(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#7}::operator()() const::"
    "{lambda(c10::Half)#1} const&)::{lambda(int)#1}>(int, at::native::gpu_kernel_impl_nocast<...>)"
)
FILL = (
    "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<c10::Half>, "
    "std::array<char*, 1ul> >(int, at::native::FillFunctor<c10::Half>, std::array<char*, 1ul>)"
)


# ------------------------------------------------------------------------------ short_name
@pytest.mark.parametrize(
    ("name", "short"),
    [
        (FLASH_SPLITKV, "flash_fwd_splitkv_kernel"),
        (FLASH_COMBINE, "flash_fwd_splitkv_combine_kernel"),
        (FLASH_FWD, "flash_fwd_kernel"),
        (FLASH_BWD, "flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel"),
        (FLASH_BWD_CONVERT, "flash_bwd_convert_dq_kernel"),
        (MEM_EFF_F32, "fmha_cutlassF_f32_aligned_64x64_rf_sm80"),
        (CUDNN_H100, "cudnn_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x128x64_4x1x1"),
        (CUDNN_A100, "cudnn_sdpa_sm80_flash_fprop_wmma_f16_knob_6_128x64x64_4x1x1"),
        (CUDNN_BWD, "cudnn_sdpa_sm90_flash_bprop_wgmma_f16_knob_26_64x64x64_1x4x1"),
        (SOFTMAX, "softmax_warp_forward"),
        (DIRECT_COPY, "elementwise_kernel"),
        (CUBLAS_AMPERE, CUBLAS_AMPERE),
        ("Memset (Device)", "Memset (Device)"),
        ("Memcpy DtoD (Device -> Device)", "Memcpy DtoD (Device -> Device)"),
        ("aten::_scaled_dot_product_flash_attention_for_cpu", "aten::_scaled_dot_product_flash_attention_for_cpu"),
        ("aten::bmm", "aten::bmm"),
        ("void cutlass::Kernel2<cutlass_80_wmma_tensorop_f16_s161616gemm_f16_32x32_128x2_tn_align8>(cutlass_80_wmma_tensorop_f16_s161616gemm_f16_32x32_128x2_tn_align8::Params)",
         "cutlass_80_wmma_tensorop_f16_s161616gemm_f16_32x32_128x2_tn…"),
    ],
)
def test_short_name(name: str, short: str) -> None:
    assert short_name(name) == short


def test_short_name_cuts_long_names_with_an_ellipsis() -> None:
    s = short_name(CUBLAS_SM90)
    assert len(s) == MAX_SHORT and s.endswith("…") and CUBLAS_SM90.startswith(s[:-1])


# -------------------------------------------------------------------------------- identify
@pytest.mark.parametrize(
    ("name", "expected"),
    [
        (CUDNN_H100, ("cuDNN fused attention", "sm90", "wgmma", "64x128x64", "fp16", "forward")),
        (CUDNN_A100, ("cuDNN fused attention", "sm80", "wmma", "128x64x64", "fp16", "forward")),
        (CUDNN_BWD, ("cuDNN fused attention", "sm90", "wgmma", "64x64x64", "fp16", "backward")),
        (CUDNN_BWD_DOT, ("cuDNN fused attention", None, None, None, None, "backward")),
        (CUDNN_BWD_CONVERT, ("cuDNN fused attention", None, None, None, None, "backward")),
        (MEM_EFF_BWD_SEQALIGNED, ("CUTLASS memory-efficient backward", "sm80", None, "64x64", "fp16", "backward")),
        (FLASH_BWD_CONVERT_REAL, ("FlashAttention-2 backward", None, None, None, "fp16", "backward")),
        # Flash tile is BlockM x BlockN x HeadDim from Flash_fwd_kernel_traits<HeadDim, BlockM, BlockN, ...>
        (FLASH_FWD, ("FlashAttention-2 forward", None, None, "128x64x128", "bf16", "forward")),
        (FLASH_SPLITKV, ("FlashAttention-2 split-KV forward", None, None, "64x256x64", "fp16", "forward")),
        (FLASH_COMBINE, ("FlashAttention-2 split-KV combine", None, None, None, "fp16", "forward")),
        (FLASH_BWD, ("FlashAttention-2 backward", None, None, "128x128x64", "fp16", "backward")),
        (FLASH_BWD_DOT, ("FlashAttention-2 backward", None, None, None, None, "backward")),
        (FLASH_BWD_CONVERT, ("FlashAttention-2 backward", None, None, None, None, "backward")),
        (MEM_EFF_F32, ("CUTLASS memory-efficient forward", "sm80", None, "64x64", "fp32", "forward")),
        (MEM_EFF_BWD, ("CUTLASS memory-efficient backward", "sm80", None, "64x64", "fp16", "backward")),
        (CUBLAS_SM90, ("cuBLAS GEMM", "sm90", None, "128x128x64", "fp16", None)),
        (CUBLAS_AMPERE, ("cuBLAS GEMM", "sm80", None, "128x128", "fp16", None)),
        (SOFTMAX, ("softmax", None, None, None, "fp16", "forward")),
        (DIRECT_COPY, ("copy", None, None, None, None, None)),
        (FILL, ("fill", None, None, None, "fp16", None)),
        ("Memset (Device)", ("memset", None, None, None, None, None)),
        ("Memcpy DtoD (Device -> Device)", ("copy", None, None, None, None, None)),
        ("aten::_scaled_dot_product_flash_attention_for_cpu", ("CPU flash attention", None, None, None, None, "forward")),
        ("aten::_softmax", ("softmax", None, None, None, None, "forward")),
        ("aten::bmm", ("CPU matmul", None, None, None, None, None)),
    ],
)
def test_identify(name: str, expected: tuple) -> None:
    i = identify(name)
    assert (i.family, i.arch, i.instruction, i.tile, i.dtype, i.direction) == expected


def test_describe() -> None:
    assert identify(CUDNN_H100).describe() == "cuDNN fused attention, sm90, wgmma, tile 64x128x64, fp16"
    assert identify(CUDNN_BWD).describe() == "cuDNN fused attention backward, sm90, wgmma, tile 64x64x64, fp16"
    assert identify(FLASH_SPLITKV).describe() == "FlashAttention-2 split-KV forward, tile 64x256x64, fp16"
    assert identify(MEM_EFF_F32).describe() == "CUTLASS memory-efficient forward, sm80, tile 64x64, fp32"


@pytest.mark.parametrize("name", ["some_vendor_kernel<int>(int)", "aten::empty", "", "triton_poi_fused_0"])
def test_unknown_names_are_not_guessed(name: str) -> None:
    i = identify(name)
    assert i == KernelIdentity(short_name(name))
    assert i.describe() == short_name(name)


def test_every_fixture_kernel_is_identified() -> None:
    for path in sorted(FIXTURES.glob("*.json")):
        for k in trace.gpu_activities(trace.load_trace(path)):
            assert identify(k.name).family is not None, (path.name, k.name)


# ----------------------------------------------------------------------------- main_kernel
def _k(name: str, us: float, category: str = "kernel") -> KernelInfo:
    return KernelInfo(name=name, duration_us=us, category=category)


def test_main_kernel_prefers_attention_over_longer_helpers() -> None:
    calls = [_k("Memset (Device)", 50.0, "gpu_memset"), _k(DIRECT_COPY, 40.0), _k(CUDNN_H100, 7.7)]
    assert main_kernel(calls).name == CUDNN_H100


def test_main_kernel_prefers_the_split_kv_kernel_over_its_combine() -> None:
    assert main_kernel([_k(FLASH_COMBINE, 9.0), _k(FLASH_SPLITKV, 7.0)]).name == FLASH_SPLITKV
    assert main_kernel([_k(FLASH_COMBINE, 9.0), _k(DIRECT_COPY, 20.0)]).name == FLASH_COMBINE


def test_main_kernel_math_path_is_the_longest_non_copy_kernel() -> None:
    calls = [_k(DIRECT_COPY, 30.0), _k(CUBLAS_SM90, 10.0), _k(SOFTMAX, 12.0), _k(FILL, 50.0)]
    assert main_kernel(calls).name == SOFTMAX


def test_main_kernel_falls_back_to_longest_of_all_and_none() -> None:
    calls = [_k("Memset (Device)", 1.0, "gpu_memset"), _k(DIRECT_COPY, 3.0)]
    assert main_kernel(calls).name == DIRECT_COPY
    assert main_kernel([]) is None


def test_main_kernel_on_fixtures() -> None:
    expected = {
        "MATH_3calls.json": "sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize64x64x8",
        "CUDNN_ATTENTION.json": "cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x128x64",
        "FLASH_ATTENTION.json": "void pytorch_flash::flash_fwd_splitkv_kernel<",
        "FLASH_causal_8k.json": "void pytorch_flash::flash_fwd_kernel<",
        "EFFICIENT_ATTENTION.json": "fmha_cutlassF_f16_aligned_64x64_rf_sm80(",
        "DEFAULT_fp32.json": "fmha_cutlassF_f32_aligned_64x64_rf_sm80(",
    }
    for file, prefix in expected.items():
        call = trace.calls_of(trace.load_trace(FIXTURES / file))[0]
        assert main_kernel(call).name.startswith(prefix), file


def test_main_kernel_of_cpu_math_is_its_matmul_whichever_op_ran_longest() -> None:
    """On the CPU, MATH's softmax and matmuls take similar times: the main kernel must not flip between runs."""
    softmax_longer = [_k("aten::bmm", 10.0, "cpu_op"), _k("aten::_softmax", 14.0, "cpu_op"), _k("aten::bmm", 9.0, "cpu_op")]
    bmm_longer = [_k("aten::bmm", 15.0, "cpu_op"), _k("aten::_softmax", 14.0, "cpu_op"), _k("aten::bmm", 9.0, "cpu_op")]
    assert main_kernel(softmax_longer).name == main_kernel(bmm_longer).name == "aten::bmm"
    flash = [_k("aten::_scaled_dot_product_flash_attention_for_cpu", 5.0, "cpu_op"), _k("aten::bmm", 9.0, "cpu_op")]
    assert main_kernel(flash).name.startswith("aten::_scaled_dot_product_flash"), "attention still comes first"
