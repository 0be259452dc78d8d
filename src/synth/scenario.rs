//! The four modelled platforms: kernel names, categories, calls per layer, per-call durations,
//! streams, ranks and the published figures of DeepSeek-R1 serving runs the generator is
//! calibrated to (the targets are listed in `docs/SYNTH.md`).
//!
//! Categories and collective kinds are assigned here, per kernel, and the ground truth is computed
//! from them; they follow the taxonomy's intent but do not depend on it.

/// Microseconds to integer nanoseconds (table literals only).
fn us(v: f64) -> u64 {
    (v * 1000.0).round() as u64
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Vendor {
    Nvidia,
    Amd,
}

/// One kernel (or memcpy) the scenario launches.
#[derive(Debug, Clone)]
pub(crate) struct Spec {
    pub name: &'static str,
    pub cat: &'static str,
    /// Collective kind of a `comm` kernel (`allreduce`, `allgather`, `other`).
    pub collective: Option<&'static str>,
    /// Mean duration per call in a decode step.
    pub dur_ns: u64,
    /// Runs on the auxiliary stream (B200's MoE stream 380).
    pub aux: bool,
    /// The `cpu_op` that launches it in eager mode.
    pub op: &'static str,
    /// (K, N) of a GEMM-like op for `Input Dims` `[[M, K], [K, N]]`; (0, 0): `[[M, 7168]]`.
    pub kn: (u32, u32),
    /// Per-call factor on rank 0 (H200's twoshot rank-0 asymmetry).
    pub rank0_factor: f64,
    /// A `gpu_memcpy` activity, not a kernel.
    pub memcpy: bool,
}

impl Spec {
    pub(crate) fn is_comm(&self) -> bool {
        self.cat == "comm"
    }
    pub(crate) fn is_allreduce(&self) -> bool {
        self.collective == Some("allreduce")
    }
    /// Compute in the sense of METRICS.md: neither comm nor memcpy.
    pub(crate) fn is_compute(&self) -> bool {
        !self.is_comm() && self.cat != "memcpy"
    }
}

/// How an op waits before it starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dep {
    /// After the previous op of its stream; an aux op that follows a main op also waits for the
    /// main stream (fork).
    Seq,
    /// A main op that also waits for the aux stream (join).
    Join,
    /// An aux op that starts while the last main op runs (after its start).
    Concurrent,
}

#[derive(Debug, Clone, Copy)]
pub(crate) struct Op {
    pub spec: usize,
    pub dep: Dep,
    /// Weight of the idle gap before the op (calibrated to the target wall).
    pub w: f64,
}

/// Per-rank calibration: target decode wall, and factors on compute and comm per-call durations.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RankTune {
    pub wall_ns: u64,
    pub compute: f64,
    pub comm: f64,
}

#[derive(Debug, Clone)]
pub(crate) struct PrefillTune {
    pub wall_ns: u64,
    pub compute_ns: u64,
    pub comm_ns: u64,
    /// One large call of this spec (MI355X's ~35 ms cross_device_reduce).
    pub big: Option<(usize, u64)>,
    pub toks: u32,
}

/// An RCCL set-up burst between prefill and decode (MI325X).
#[derive(Debug, Clone)]
pub(crate) struct Burst {
    pub spec: usize,
    pub count: u32,
    pub dur_ns: u64,
    pub gap_min_ns: u64,
    pub gap_max_ns: u64,
}

#[derive(Debug, Clone)]
pub(crate) struct Scenario {
    pub name: &'static str,
    pub device: &'static str,
    pub vendor: Vendor,
    pub ranks: u32,
    pub main_stream: u32,
    pub aux_stream: Option<u32>,
    /// SGLang `step[...]` annotations present.
    pub annotations: bool,
    pub specs: Vec<Spec>,
    pub prologue: Vec<Op>,
    pub dense_layer: Vec<Op>,
    pub moe_layer: Vec<Op>,
    pub epilogue: Vec<Op>,
    pub n_dense: u32,
    pub n_moe: u32,
    /// The last call of `.0` in a step is replaced by `.1` (121 fused allreduces + a bulk one).
    pub replace_last: Option<(usize, usize)>,
    pub tune: Vec<RankTune>,
    /// On ranks other than 0, the idle wait for rank 0 sits before calls of this spec, with this
    /// gap weight (H200: ranks are paced by rank 0's slow twoshot allreduce).
    pub paced: Option<(usize, f64)>,
    pub prefill: PrefillTune,
    /// First call of this spec in the first decode step takes this long (cold start); bool: rank 0 only.
    pub cold_first: Option<(usize, u64, bool)>,
    pub burst: Option<Burst>,
    /// Decode step index (counting warm-up) that stalls for this long mid-step (an outlier).
    pub stall: Option<(u32, u64)>,
    /// The main allreduce spec and the name of the other implementation (`protocol=F`).
    pub protocol: (usize, &'static str),
}

pub(crate) const NAMES: &[&str] = &[
    "mi355x-dsr1-fp4-tp4",
    "b200-dsr1-fp4-tp4-ep4",
    "h200-dsr1-fp8-tp8",
    "mi325x-dsr1-fp8-tp8",
];

pub(crate) fn by_name(name: &str) -> Option<Scenario> {
    match name {
        "mi355x-dsr1-fp4-tp4" => Some(mi355x()),
        "b200-dsr1-fp4-tp4-ep4" => Some(b200()),
        "h200-dsr1-fp8-tp8" => Some(h200()),
        "mi325x-dsr1-fp8-tp8" => Some(mi325x()),
        _ => None,
    }
}

#[derive(Default)]
struct B {
    specs: Vec<Spec>,
}

impl B {
    fn k(&mut self, name: &'static str, cat: &'static str, us_: f64, op: &'static str) -> usize {
        self.specs.push(Spec {
            name,
            cat,
            collective: None,
            dur_ns: us(us_),
            aux: false,
            op,
            kn: (0, 0),
            rank0_factor: 1.0,
            memcpy: false,
        });
        self.specs.len() - 1
    }
    fn gemm(
        &mut self,
        name: &'static str,
        cat: &'static str,
        us_: f64,
        op: &'static str,
        kn: (u32, u32),
    ) -> usize {
        let i = self.k(name, cat, us_, op);
        self.specs[i].kn = kn;
        i
    }
    fn comm(
        &mut self,
        name: &'static str,
        coll: &'static str,
        us_: f64,
        op: &'static str,
    ) -> usize {
        let i = self.k(name, "comm", us_, op);
        self.specs[i].collective = Some(coll);
        i
    }
    fn aux(&mut self, i: usize) -> usize {
        self.specs[i].aux = true;
        i
    }
}

fn seq(ids: &[usize]) -> Vec<Op> {
    ids.iter()
        .map(|&spec| Op {
            spec,
            dep: Dep::Seq,
            w: 1.0,
        })
        .collect()
}

fn op(spec: usize, dep: Dep, w: f64) -> Op {
    Op { spec, dep, w }
}

fn ms(v: f64) -> u64 {
    (v * 1e6).round() as u64
}

// ---------------------------------------------------------------------------------------------
// MI355X, FP4, TP4, one HIP stream (7). Decode 20.11 ms wall, 20.06 ms kernels, 10.5 % comm.

fn mi355x() -> Scenario {
    let mut b = B::default();
    let norm_arq = b.k(
        "_ZN5aiter24add_rmsnorm_quant_kernelIDF16bDF16bLi256ELi16ELb0ELb0ELb1ELi1EEEvPT0_PT_PfS4_S4_S4_diiiiiiib",
        "norm",
        4.367,
        "aiter::add_rmsnorm_quant",
    );
    let norm_ck = b.k(
        "void ck_tile::kentry<1, ck_tile::Rmsnorm2dFwd<ck_tile::Rmsnorm2dFwdPipelineOnePass<ck_tile::Rmsnorm2dFwdPipelineProblem<ck_tile::bf16_t, ck_tile::bf16_t, float, ck_tile::bf16_t>>>>",
        "norm",
        4.367,
        "aiter::rmsnorm2d_fwd",
    );
    let qa = b.gemm(
        "Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT16x64x256_MI16x16x1_SN_LDSB1_AFC1_AFEM1_CLR1_GRVWA8_GRVWB8_ISA950_K1_SK3_WG16_16_1",
        "dense_gemm",
        22.0,
        "aten::mm",
        (7168, 1536),
    );
    let kva = b.gemm(
        "Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT32x64x128_MI16x16x1_SN_LDSB1_AFC1_AFEM1_CLR1_GRVWA8_GRVWB8_ISA950_K1_SK3_WG32_8_1",
        "dense_gemm",
        11.0,
        "aten::mm",
        (7168, 576),
    );
    let qb = b.gemm(
        "Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT16x32x256_MI16x16x1_SN_LDSB1_AFC1_AFEM1_CLR1_GRVWA8_GRVWB8_ISA950_K1_SK3_WG16_8_1",
        "dense_gemm",
        19.5,
        "aten::mm",
        (1536, 6144),
    );
    let lm = b.gemm(
        "Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT32x64x256_MI16x16x1_SN_LDSB1_AFC1_AFEM1_CLR1_GRVWA8_GRVWB8_ISA950_K1_SK3_WG32_8_1",
        "dense_gemm",
        87.5,
        "aten::mm",
        (7168, 32320),
    );
    let kvb = b.gemm(
        "_batched_gemm_a16wfp4_kernel_BLOCK_SIZE_M_16_BLOCK_SIZE_N_64_BLOCK_SIZE_K_128_GROUP_SIZE_M_1_num_warps_4_num_stages_2_waves_per_eu_0_matrix_instr_nonkdim_16_kpack_1",
        "dense_gemm",
        5.0,
        "aiter::batched_gemm_a16wfp4",
        (512, 256),
    );
    let oproj = b.gemm(
        "_batched_gemm_a16wfp4_kernel_BLOCK_SIZE_M_16_BLOCK_SIZE_N_32_BLOCK_SIZE_K_512_GROUP_SIZE_M_1_num_warps_4_num_stages_2_waves_per_eu_0_matrix_instr_nonkdim_16_kpack_1",
        "dense_gemm",
        5.5,
        "aiter::batched_gemm_a16wfp4",
        (512, 4096),
    );
    let router = b.gemm(
        "_gemm_a16_w16_atomic_kernel_BLOCK_SIZE_M_16_BLOCK_SIZE_N_64_BLOCK_SIZE_K_256_GROUP_SIZE_M_1_KSPLIT_14",
        "dense_gemm",
        6.207,
        "aiter::gemm_a16w16_atomic",
        (7168, 256),
    );
    let shared = b.gemm(
        "_gemm_afp4_wfp4_kernel_BLOCK_SIZE_M_64_BLOCK_SIZE_N_256_BLOCK_SIZE_K_256_GROUP_SIZE_M_1_NUM_KSPLIT_1",
        "dense_gemm",
        43.33,
        "aiter::gemm_afp4wfp4",
        (7168, 4608),
    );
    let quant = b.k(
        "_dynamic_mxfp4_quant_kernel",
        "quant",
        6.667,
        "aiter::dynamic_mxfp4_quant",
    );
    let ew_add = b.k(
        "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>, std::array<char*, 3ul>>(int, at::native::CUDAFunctor_add<c10::BFloat16>, std::array<char*, 3ul>)",
        "elementwise",
        4.868,
        "aten::add",
    );
    let ew_copy = b.k(
        "void at::native::unrolled_elementwise_kernel<at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#12}::operator()() const::{lambda(c10::BFloat16)#1}, std::array<char*, 2ul>, 4, TrivialOffsetCalculator<1, unsigned int>, TrivialOffsetCalculator<1, unsigned int>, at::native::memory::LoadWithCast<1>, at::native::memory::StoreWithCast<1>>",
        "elementwise",
        4.868,
        "aten::copy_",
    );
    let mla = b.k(
        "_ZN5aiter36mla_a8w8_qh16_qseqlen1_gqaratio16_psE",
        "attention",
        19.51,
        "aiter::mla_decode_fwd",
    );
    let rope = b.k(
        "_fused_qk_rope_cat_and_cache_mla_kernel",
        "attention",
        6.423,
        "aiter::fused_qk_rope_cat_and_cache_mla",
    );
    let mla_red = b.k(
        "void aiter::kn_mla_reduce_v1<aiter::MlaReduceKernelV1Traits<512, 16, 1>, __hip_bfloat16, __hip_bfloat16>(aiter::MlaReduceKernelV1Params)",
        "attention",
        6.423,
        "aiter::mla_reduce_v1",
    );
    let mla_meta = b.k(
        "void aiter::kn_get_mla_metadata_v1<aiter::MlaMetadataV1Traits<16, 1>>(aiter::MlaMetadataV1KernelParameter)",
        "attention",
        6.423,
        "aiter::get_mla_metadata_v1",
    );
    let topk = b.k(
        "void aiter::biased_grouped_topk_kernel<c10::BFloat16, float, 8, true>(c10::BFloat16*, c10::BFloat16*, float*, int*, int, int, int, int, float)",
        "moe_routing",
        4.138,
        "aiter::biased_grouped_topk",
    );
    let append = b.k(
        "void aiter::append_shared_expert_ids_kernel<int>(int*, float*, int, int, int)",
        "moe_routing",
        3.966,
        "aiter::append_shared_expert",
    );
    let sort1 = b.k(
        "void ck_tile::kentry<1, ck_tile::MoeSortingKernel<ck_tile::MoeSortingProblemEx<int, float, 1, true, false, true, 0>>>",
        "moe_routing",
        4.957,
        "aiter::moe_sorting_fwd",
    );
    let sort2 = b.k(
        "void ck_tile::kentry<1, ck_tile::MoeSortingMultiPhaseKernel_P23<ck_tile::MoeSortingProblemMp<int, float, 1, true, false, 0>>>",
        "moe_routing",
        4.957,
        "aiter::moe_sorting_fwd",
    );
    let moe_up = b.gemm(
        "void ck::kernel_moe_mxgemm_2lds<ck::GridwiseMoeGemmMX_BPreshuffle<ck::tensor_layout::gemm::RowMajor, ck::tensor_layout::gemm::ColumnMajor, ck::f4x2_pk_t, ck::e8m0_bexp_t, ck::bhalf_t, float, 32, 256, 128, 16, 16, true, 1>, true, 2, (ck::TailNumber)2>",
        "moe_gemm",
        68.0,
        "aiter::ck_moe_stage1",
        (7168, 4096),
    );
    let moe_down = b.gemm(
        "void ck::kernel_moe_mxgemm_2lds<ck::GridwiseMoeGemmMX_BPreshuffle<ck::tensor_layout::gemm::RowMajor, ck::tensor_layout::gemm::ColumnMajor, ck::f4x2_pk_t, ck::e8m0_bexp_t, ck::bhalf_t, float, 32, 128, 256, 16, 16, false, 1>, true, 2, (ck::TailNumber)2>",
        "moe_gemm",
        59.76,
        "aiter::ck_moe_stage2",
        (2048, 7168),
    );
    let cdr_attn = b.comm(
        "void aiter::cross_device_reduce_2stage<__hip_bfloat16, 4>(aiter::RankData*, aiter::RankSignals, aiter::Signal*, __hip_bfloat16*, int, int)",
        "allreduce",
        14.0,
        "aiter::all_reduce",
    );
    let cdr_moe = b.comm(
        "void aiter::cross_device_reduce_2stage<__hip_bfloat16, 4>(aiter::RankData*, aiter::RankSignals, aiter::Signal*, __hip_bfloat16*, int, int)",
        "allreduce",
        16.0,
        "aiter::all_reduce",
    );
    let cdr_tail = b.comm(
        "void aiter::cross_device_reduce_2stage<__hip_bfloat16, 4>(aiter::RankData*, aiter::RankSignals, aiter::Signal*, __hip_bfloat16*, int, int)",
        "allreduce",
        15.0,
        "aiter::all_reduce",
    );
    let rccl = b.comm(
        "void rcclGenericKernel<1, false>(ncclDevKernelArgsStorage<4096ul>)",
        "other",
        255.0,
        "c10d::allgather_",
    );

    let attn = [
        norm_arq, ew_copy, norm_ck, qa, kva, norm_ck, qb, kvb, rope, ew_add, mla, mla_red, oproj,
        cdr_attn, norm_arq,
    ];
    let mut moe = attn.to_vec();
    moe.extend([
        router, topk, append, sort1, sort2, sort1, sort2, moe_up, moe_down, ew_add, ew_copy,
        cdr_moe,
    ]);
    let mut dense = attn.to_vec();
    dense.extend([quant, shared, quant, shared, ew_add, ew_copy, cdr_moe]);
    let mut pro = vec![rccl, mla_meta];
    pro.extend([ew_add; 10]);
    let mut epi = vec![norm_arq, lm, cdr_tail];
    epi.extend([ew_copy; 11]);

    let w = |wall: f64, compute: f64, comm: f64| RankTune {
        wall_ns: ms(wall),
        compute,
        comm,
    };
    Scenario {
        name: "mi355x-dsr1-fp4-tp4",
        device: "AMD Instinct MI355X",
        vendor: Vendor::Amd,
        ranks: 4,
        main_stream: 7,
        aux_stream: None,
        annotations: true,
        specs: b.specs,
        prologue: seq(&pro),
        dense_layer: seq(&dense),
        moe_layer: seq(&moe),
        epilogue: seq(&epi),
        n_dense: 3,
        n_moe: 58,
        replace_last: None,
        tune: vec![
            w(20.11, 1.0, 1.0),
            w(20.12, 1.001, 1.008),
            w(20.10, 0.999, 0.992),
            w(20.11, 1.0, 1.004),
        ],
        paced: None,
        prefill: PrefillTune {
            wall_ns: ms(759.0),
            compute_ns: ms(50.5),
            comm_ns: ms(55.5),
            big: Some((cdr_moe, ms(35.0))),
            toks: 16384,
        },
        cold_first: None,
        burst: None,
        stall: Some((7, ms(25.0))),
        protocol: (
            cdr_attn,
            "void aiter::cross_device_reduce_1stage<__hip_bfloat16, 4>(aiter::RankData*, aiter::RankSignals, aiter::Signal*, __hip_bfloat16*, int)",
        ),
    }
}

// ---------------------------------------------------------------------------------------------
// B200, FP4, TP4 EP4, streams 39 (main + comm) and 380 (MoE). 24.5 ms wall, 20.1 ms kernels.

fn b200() -> Scenario {
    let mut b = B::default();
    let oneshot = b.comm(
        "void flashinfer::trtllm_allreduce_fusion::allreduce_fusion_kernel_oneshot_lamport<(flashinfer::trtllm_allreduce_fusion::AllReduceFusionPattern)1, __nv_bfloat16, 4, true, true>(flashinfer::trtllm_allreduce_fusion::AllReduceFusionParams<__nv_bfloat16>)",
        "allreduce",
        21.5,
        "sglang::flashinfer_allreduce_residual_rmsnorm",
    );
    let symk = b.comm(
        "ncclSymkDevKernel_AllReduce_AGxLLMC_R_sum_bf16(ncclSymkDevWorkArgs4K)",
        "allreduce",
        1045.0,
        "c10d::allreduce_",
    );
    let allgather = b.comm(
        "ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
        "allgather",
        100.0,
        "c10d::_allgather_base_",
    );
    let cvt = b.k(
        "void cvt_fp16_to_fp4<__nv_bfloat16, false>(int, int, __nv_bfloat16 const*, float const*, unsigned int*, unsigned int*, bool)",
        "quant",
        2.13,
        "sgl_kernel::scaled_fp4_quant",
    );
    let fp4gemm = b.gemm(
        "void cutlass::device_kernel<flashinfer::gemm::DeviceGemmFp4GemmSm100<cutlass::bfloat16_t, cutlass::gemm::GemmShape<128, 64, 256>, cutlass::gemm::GemmShape<1, 1, 1>, cutlass::gemm::KernelTmaWarpSpecialized1SmNvf4Sm100>::GemmKernel>(flashinfer::gemm::DeviceGemmFp4GemmSm100<cutlass::bfloat16_t, cutlass::gemm::GemmShape<128, 64, 256>, cutlass::gemm::GemmShape<1, 1, 1>, cutlass::gemm::KernelTmaWarpSpecialized1SmNvf4Sm100>::GemmKernel::Params)",
        "dense_gemm",
        8.4,
        "sglang::cutlass_scaled_fp4_mm",
        (7168, 2112),
    );
    let nv64 = b.gemm(
        "nvjet_tst_64x32_64x16_2x1_2cta_v_bz_splitK_TNT",
        "dense_gemm",
        8.9,
        "aten::mm",
        (512, 4096),
    );
    let nv48 = b.gemm(
        "nvjet_tst_48x64_64x15_4x1_v_bz_TNN",
        "dense_gemm",
        6.4,
        "aten::bmm",
        (128, 512),
    );
    let nv128 = b.gemm(
        "nvjet_tst_128x64_64x8_4x1_v_bz_TNT",
        "dense_gemm",
        4.1,
        "aten::bmm",
        (512, 128),
    );
    let lm = b.gemm(
        "nvjet_tst_128x128_64x4_2x1_v_bz_TNT",
        "dense_gemm",
        320.0,
        "aten::mm",
        (7168, 32320),
    );
    // Dense FFN of layers 0-2: not in the reference's top-kernel table, which counts the FP4
    // projection GEMM and its quantisation at exactly 3 per layer (183).
    let ffn = b.gemm(
        "nvjet_tst_256x64_64x4_1x2_h_bz_TNT",
        "dense_gemm",
        10.5,
        "aten::mm",
        (7168, 4608),
    );
    let fmha = b.k(
        "fmhaSm100fKernel_QkvE4m3OBfloat16HQk576HV512HVPerCta256PagedKvDenseP64MultiCtasKvCgaVarSeqQ8Kv128StaticKeepsAbForGen",
        "attention",
        18.9,
        "sglang::trtllm_batch_decode_with_kv_cache_mla",
    );
    let rope = b.k(
        "void flashinfer::BatchQKApplyRotaryPosIdsCosSinCacheHeadParallelismKernel<false, 64u, 8u, 16u, __nv_bfloat16, long>(__nv_bfloat16*, __nv_bfloat16*, __nv_bfloat16*, __nv_bfloat16*, float*, long*, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int)",
        "attention",
        4.4,
        "sgl_kernel::apply_rope_pos_ids_cos_sin_cache",
    );
    let norm = b.k(
        "void flashinfer::norm::RMSNormKernel<8u, __nv_bfloat16>(__nv_bfloat16*, __nv_bfloat16*, __nv_bfloat16*, unsigned int, unsigned int, unsigned int, float, float)",
        "norm",
        3.2,
        "sgl_kernel::rmsnorm",
    );
    let ew = b.k(
        "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>, std::array<char*, 3ul>>(int, at::native::CUDAFunctor_add<c10::BFloat16>, std::array<char*, 3ul>)",
        "elementwise",
        2.7,
        "aten::add",
    );
    let ew_embed = b.k(
        "void at::native::(anonymous namespace)::indexSelectLargeIndex<c10::BFloat16, long, unsigned int, 2, 2, -2, true>(at::cuda::detail::TensorInfo<c10::BFloat16, unsigned int>, at::cuda::detail::TensorInfo<c10::BFloat16 const, unsigned int>, at::cuda::detail::TensorInfo<long const, unsigned int>, int, int, unsigned int, unsigned int, long)",
        "elementwise",
        6.0,
        "aten::embedding",
    );
    let ew_sample = b.k(
        "void at::native::vectorized_elementwise_kernel<4, at::native::BinaryFunctor<float, float, float, at::native::binary_internal::DivFunctor<float>>, std::array<char*, 3ul>>(int, at::native::BinaryFunctor<float, float, float, at::native::binary_internal::DivFunctor<float>>, std::array<char*, 3ul>)",
        "elementwise",
        11.6,
        "aten::div",
    );
    let router = b.gemm(
        "void router_gemm_kernel_float_output<__nv_bfloat16, 128, 8, 256, 7168>(float*, __nv_bfloat16 const*, __nv_bfloat16 const*)",
        "dense_gemm",
        5.0,
        "sgl_kernel::dsv3_router_gemm",
        (7168, 256),
    );
    // Stream 380: the MoE path.
    let r_main = b.k(
        "void moe::dev::routing::routingDeepSeek::routingMainKernel<moe::dev::routing::routingDeepSeek::KernelParams<__nv_bfloat16, __nv_bfloat16, 8, true>>(moe::dev::routing::routingDeepSeek::KernelParams<__nv_bfloat16, __nv_bfloat16, 8, true>)",
        "moe_routing",
        6.0,
        "sglang::trtllm_fp4_block_scale_moe",
    );
    let r_idx = b.k(
        "void moe::dev::routing::routingIndicesClusterKernel<moe::dev::routing::routingDeepSeek::KernelParams<__nv_bfloat16, __nv_bfloat16, 8, true>>(moe::dev::routing::routingDeepSeek::KernelParams<__nv_bfloat16, __nv_bfloat16, 8, true>)",
        "moe_routing",
        5.0,
        "sglang::trtllm_fp4_block_scale_moe",
    );
    let bmm1 = b.gemm(
        "bmm_E2m1_E2m1E2m1_Fp32_t128x8x512u2_s4_et128x8_m128x8x64_cga1x1x1_16dp256b_rM_TN_transOut_schedS_bN_sm100f",
        "moe_gemm",
        82.4,
        "sglang::trtllm_fp4_block_scale_moe",
        (7168, 4096),
    );
    let bmm2 = b.gemm(
        "bmm_Bfloat16_E2m1E2m1_Fp32_t128x8x512u2_s4_et128x8_m128x8x64_cga1x1x1_16dp256b_rM_TN_transOut_schedS_bN_sm100f",
        "moe_gemm",
        49.0,
        "sglang::trtllm_fp4_block_scale_moe",
        (2048, 7168),
    );
    let fin = b.k(
        "void moe::dev::finalize::finalizeKernelVecLoad<moe::dev::finalize::KernelParams<__nv_bfloat16, __nv_bfloat16, __nv_bfloat16, false>>(moe::dev::finalize::KernelParams<__nv_bfloat16, __nv_bfloat16, __nv_bfloat16, false>)",
        "moe_routing",
        7.3,
        "sglang::trtllm_fp4_block_scale_moe",
    );
    let shared = b.gemm(
        "nvjet_tst_64x32_64x16_2x2_2cta_h_bz_TNT",
        "dense_gemm",
        5.2,
        "aten::mm",
        (7168, 512),
    );
    let aux_ew = b.k(
        "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<int>, std::array<char*, 1ul>>(int, at::native::FillFunctor<int>, std::array<char*, 1ul>)",
        "elementwise",
        27.0,
        "aten::fill_",
    );
    for i in [r_main, r_idx, bmm1, bmm2, fin, shared, aux_ew] {
        b.aux(i);
    }

    let s = |spec| op(spec, Dep::Seq, 1.0);
    let attn = [
        s(cvt),
        s(fp4gemm),
        s(norm),
        s(norm),
        s(cvt),
        s(fp4gemm),
        s(nv48),
        s(rope),
        s(ew),
        s(fmha),
        s(nv64),
        s(nv128),
        s(cvt),
        s(fp4gemm),
        s(oneshot),
    ];
    let mut moe = attn.to_vec();
    moe.extend([
        s(router),
        s(ew),
        op(r_main, Dep::Seq, 15.0),
        s(r_idx),
        s(bmm1),
        s(bmm2),
        s(fin),
        s(shared),
        s(ew), // main stream, concurrent with the MoE stream
        op(ew, Dep::Join, 15.0),
        s(oneshot),
    ]);
    let mut dense = attn.to_vec();
    dense.extend([s(ffn), s(ew), s(ew), s(ffn), s(ew), s(oneshot)]);
    let pro = vec![
        s(ew_embed),
        s(symk),
        op(aux_ew, Dep::Concurrent, 1.0),
        s(aux_ew),
        s(allgather),
    ];
    let mut epi = vec![s(norm), s(lm)];
    epi.extend([s(ew_sample); 10]);

    let w = |wall: f64, compute: f64, comm: f64| RankTune {
        wall_ns: ms(wall),
        compute,
        comm,
    };
    Scenario {
        name: "b200-dsr1-fp4-tp4-ep4",
        device: "NVIDIA B200",
        vendor: Vendor::Nvidia,
        ranks: 4,
        main_stream: 39,
        aux_stream: Some(380),
        annotations: true,
        specs: b.specs,
        prologue: pro,
        dense_layer: dense,
        moe_layer: moe,
        epilogue: epi,
        n_dense: 3,
        n_moe: 58,
        replace_last: Some((oneshot, symk)),
        tune: vec![
            w(24.5, 1.0, 1.0),
            w(24.48, 0.998, 1.01),
            w(24.46, 1.001, 0.995),
            w(24.49, 0.999, 1.003),
        ],
        paced: None,
        prefill: PrefillTune {
            wall_ns: ms(182.0),
            compute_ns: ms(112.0),
            comm_ns: ms(24.0),
            big: None,
            toks: 16384,
        },
        cold_first: None,
        burst: None,
        stall: None,
        protocol: (
            oneshot,
            "void flashinfer::trtllm_allreduce_fusion::allreduce_fusion_kernel_twoshot_sync<(flashinfer::trtllm_allreduce_fusion::AllReduceFusionPattern)1, __nv_bfloat16, 4, true, true>(flashinfer::trtllm_allreduce_fusion::AllReduceFusionParams<__nv_bfloat16>)",
        ),
    }
}

// ---------------------------------------------------------------------------------------------
// H200, FP8, TP8, one stream (116), no step annotations. 282.6 ms wall on rank 0, 82.7 % comm.

fn h200() -> Scenario {
    let mut b = B::default();
    let twoshot = b.comm(
        "void flashinfer::trtllm_allreduce_fusion::allreduce_fusion_kernel_twoshot_sync<(flashinfer::trtllm_allreduce_fusion::AllReduceFusionPattern)1, __nv_bfloat16, 8, true, true>(flashinfer::trtllm_allreduce_fusion::AllReduceFusionParams<__nv_bfloat16>)",
        "allreduce",
        127.0,
        "sglang::flashinfer_allreduce_residual_rmsnorm",
    );
    b.specs[twoshot].rank0_factor = 1535.4 / 127.0;
    let nccl_ar = b.comm(
        "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
        "allreduce",
        13635.0,
        "c10d::allreduce_",
    );
    let allgather = b.comm(
        "ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
        "allgather",
        840.0,
        "c10d::_allgather_base_",
    );
    let fused_moe = b.gemm(
        "fused_moe_kernel",
        "moe_gemm",
        259.0,
        "sglang::fused_moe",
        (7168, 4096),
    );
    let dg_up = b.gemm(
        "void deep_gemm::sm90_fp8_gemm_1d2d_impl<(cute::UMMA::Major)0, 2112u, 7168u, 128u, 64u, 128u, 132u, 1u, 8u, 1u, 1u, true, (deep_gemm::GemmType)0, false, cutlass::bfloat16_t>(float*, int*, unsigned int, unsigned int, unsigned int, CUtensorMap, CUtensorMap, CUtensorMap, CUtensorMap)",
        "dense_gemm",
        26.7,
        "sglang::deep_gemm_fp8_fp8_bf16_nt",
        (7168, 2112),
    );
    let dg_down = b.gemm(
        "void deep_gemm::sm90_fp8_gemm_1d2d_impl<(cute::UMMA::Major)0, 3072u, 1536u, 128u, 64u, 128u, 132u, 1u, 8u, 1u, 1u, true, (deep_gemm::GemmType)0, false, cutlass::bfloat16_t>(float*, int*, unsigned int, unsigned int, unsigned int, CUtensorMap, CUtensorMap, CUtensorMap, CUtensorMap)",
        "dense_gemm",
        11.8,
        "sglang::deep_gemm_fp8_fp8_bf16_nt",
        (1536, 3072),
    );
    let dg_other = b.gemm(
        "void deep_gemm::sm90_fp8_gemm_1d2d_impl<(cute::UMMA::Major)0, 7168u, 2048u, 64u, 128u, 128u, 132u, 1u, 8u, 1u, 1u, true, (deep_gemm::GemmType)0, false, cutlass::bfloat16_t>(float*, int*, unsigned int, unsigned int, unsigned int, CUtensorMap, CUtensorMap, CUtensorMap, CUtensorMap)",
        "dense_gemm",
        19.9,
        "sglang::deep_gemm_fp8_fp8_bf16_nt",
        (2048, 7168),
    );
    let nvjet = b.gemm(
        "nvjet_tst_64x64_64x13_2x1_v_bz_splitK_TNT",
        "dense_gemm",
        11.9,
        "aten::mm",
        (7168, 256),
    );
    let bmm = b.gemm(
        "nvjet_tst_64x8_64x16_4x1_v_bz_TNN",
        "dense_gemm",
        24.0,
        "aten::bmm",
        (128, 512),
    );
    let lm = b.gemm(
        "nvjet_tst_128x128_64x4_2x1_v_bz_TNT",
        "dense_gemm",
        260.0,
        "aten::mm",
        (7168, 16160),
    );
    let attn_k = b.k(
        "void flashinfer::PrefillWithKVCacheKernel<flashinfer::mla::hopper::HopperAttentionParams<__nv_bfloat16, int>, 64u, 512u, 2u>(flashinfer::mla::hopper::Params)",
        "attention",
        20.4,
        "sglang::mla_decode",
    );
    let rope = b.k(
        "void flashinfer::BatchQKApplyRotaryPosIdsCosSinCacheKernel<false, 64u, 8u, 16u, __nv_bfloat16, long>(__nv_bfloat16*, __nv_bfloat16*, __nv_bfloat16*, __nv_bfloat16*, float*, long*, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int)",
        "attention",
        4.0,
        "sgl_kernel::apply_rope_pos_ids_cos_sin_cache",
    );
    let kvset = b.k(
        "void set_mla_kv_buffer_kernel<__nv_bfloat16>(__nv_bfloat16*, __nv_bfloat16 const*, __nv_bfloat16 const*, long const*, int, int, int)",
        "attention",
        3.0,
        "sglang::set_mla_kv_buffer",
    );
    let gate = b.k(
        "void moe_fused_gate_kernel<__nv_bfloat16, 8, 256, 32, 8>(void*, void*, float*, int*, long, long, long, bool, double)",
        "moe_routing",
        5.0,
        "sgl_kernel::moe_fused_gate",
    );
    let align = b.k(
        "void moe_align_block_size_kernel<int>(int*, int*, int*, int*, int, int, int, int, unsigned long, int*, bool)",
        "moe_routing",
        4.5,
        "sgl_kernel::moe_align_block_size",
    );
    let sort = b.k(
        "void count_and_sort_expert_tokens_kernel<int>(int const*, int*, int*, unsigned long)",
        "moe_routing",
        3.5,
        "sgl_kernel::moe_align_block_size",
    );
    let sumred = b.k(
        "void moe_sum_reduce_warp_per_token_vec_kernel<__nv_bfloat16, 8, 4>(__nv_bfloat16 const*, __nv_bfloat16*, long, long, long, long, float)",
        "moe_routing",
        6.0,
        "sgl_kernel::moe_sum_reduce",
    );
    let quant = b.k(
        "void per_token_group_quant_8bit_kernel<__nv_bfloat16, __nv_fp8_e4m3, false, false>(__nv_bfloat16 const*, void*, float*, int, int, int, float, float, float, int, int)",
        "quant",
        5.2,
        "sgl_kernel::sgl_per_token_group_quant_8bit",
    );
    let norm = b.k(
        "void flashinfer::norm::RMSNormKernel<8u, __nv_bfloat16>(__nv_bfloat16*, __nv_bfloat16*, __nv_bfloat16*, unsigned int, unsigned int, unsigned int, float, float)",
        "norm",
        3.5,
        "sgl_kernel::rmsnorm",
    );
    // Unpublished per-call times, set so the step's kernel time stays at the reference's 258.7 ms.
    let ew = b.k(
        "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>, std::array<char*, 3ul>>(int, at::native::CUDAFunctor_add<c10::BFloat16>, std::array<char*, 3ul>)",
        "elementwise",
        8.0,
        "aten::add",
    );
    let act = b.k(
        "void flashinfer::activation::act_and_mul_kernel<__nv_bfloat16, &silu<float>>(__nv_bfloat16*, __nv_bfloat16 const*, int)",
        "elementwise",
        5.0,
        "sgl_kernel::silu_and_mul",
    );

    // Per layer, as the reference counts: 6 FP8 quantisations (366 per step), DeepGEMM 2112x7168
    // and 3072x1536 once each, 128 other DeepGEMM calls per step (2 per MoE layer, 4 per dense).
    let attn = [
        quant, dg_other, norm, norm, quant, dg_up, bmm, rope, kvset, attn_k, bmm, quant, dg_down,
        quant, twoshot,
    ];
    let mut moe = attn.to_vec();
    moe.extend([
        nvjet, gate, align, sort, quant, dg_other, fused_moe, act, quant, fused_moe, sumred,
        twoshot,
    ]);
    let mut dense = attn.to_vec();
    dense.extend([quant, dg_other, act, quant, dg_other, dg_other, ew, twoshot]);
    let mut pro = vec![nccl_ar];
    pro.extend([ew; 20]);
    let mut epi = vec![norm, lm, allgather];
    epi.extend([ew; 30]);

    let w = |wall: f64, compute: f64, comm: f64| RankTune {
        wall_ns: ms(wall),
        compute,
        comm,
    };
    Scenario {
        name: "h200-dsr1-fp8-tp8",
        device: "NVIDIA H200",
        vendor: Vendor::Nvidia,
        ranks: 8,
        main_stream: 116,
        aux_stream: None,
        annotations: false,
        specs: b.specs,
        prologue: seq(&pro),
        dense_layer: seq(&dense),
        moe_layer: seq(&moe),
        epilogue: seq(&epi),
        n_dense: 3,
        n_moe: 58,
        replace_last: Some((twoshot, nccl_ar)),
        tune: vec![
            w(282.6, 1.0, 1.0),
            w(282.42, 1.002, 1.0),
            w(282.38, 0.998, 1.01),
            w(282.45, 1.001, 0.99),
            w(282.40, 0.999, 1.0),
            w(282.36, 1.0, 1.005),
            w(282.44, 1.002, 0.995),
            w(282.39, 0.999, 1.0),
        ],
        paced: Some((twoshot, 100.0)),
        prefill: PrefillTune {
            wall_ns: ms(612.0),
            compute_ns: ms(298.0),
            comm_ns: ms(176.0),
            big: None,
            toks: 16384,
        },
        cold_first: Some((twoshot, ms(26.4), true)),
        burst: None,
        stall: None,
        protocol: (
            twoshot,
            "void flashinfer::trtllm_allreduce_fusion::allreduce_fusion_kernel_oneshot_lamport<(flashinfer::trtllm_allreduce_fusion::AllReduceFusionPattern)1, __nv_bfloat16, 8, true, true>(flashinfer::trtllm_allreduce_fusion::AllReduceFusionParams<__nv_bfloat16>)",
        ),
    }
}

// ---------------------------------------------------------------------------------------------
// MI325X, FP8, TP8, one HIP stream (7), no step annotations. 36.47 ms wall on rank 0, 6.9 % comm.

fn mi325x() -> Scenario {
    let mut b = B::default();
    let a8_qa = b.gemm(
        "_gemm_a8w8_blockscale_kernel_GROUP_K_128_GROUP_N_128_BLOCK_SIZE_M_16_BLOCK_SIZE_N_64_BLOCK_SIZE_K_128_GROUP_SIZE_M_1_NUM_KSPLIT_1_num_warps_4_num_stages_2_waves_per_eu_2_matrix_instr_nonkdim_16_cache_modifier_.cg",
        "dense_gemm",
        123.0,
        "aiter::gemm_a8w8_blockscale",
        (7168, 1536),
    );
    let a8_kva = b.gemm(
        "_gemm_a8w8_blockscale_kernel_GROUP_K_128_GROUP_N_128_BLOCK_SIZE_M_16_BLOCK_SIZE_N_32_BLOCK_SIZE_K_128_GROUP_SIZE_M_1_NUM_KSPLIT_4_num_warps_4_num_stages_2_waves_per_eu_2_matrix_instr_nonkdim_16_cache_modifier_.cg",
        "dense_gemm",
        30.0,
        "aiter::gemm_a8w8_blockscale",
        (7168, 576),
    );
    let a8_o = b.gemm(
        "_gemm_a8w8_blockscale_kernel_GROUP_K_128_GROUP_N_128_BLOCK_SIZE_M_16_BLOCK_SIZE_N_16_BLOCK_SIZE_K_128_GROUP_SIZE_M_1_NUM_KSPLIT_1_num_warps_4_num_stages_2_waves_per_eu_2_matrix_instr_nonkdim_16_cache_modifier_.cg",
        "dense_gemm",
        34.0,
        "aiter::gemm_a8w8_blockscale",
        (512, 896),
    );
    let a8_up = b.gemm(
        "_gemm_a8w8_blockscale_kernel_GROUP_K_128_GROUP_N_128_BLOCK_SIZE_M_16_BLOCK_SIZE_N_64_BLOCK_SIZE_K_128_GROUP_SIZE_M_1_NUM_KSPLIT_1_num_warps_4_num_stages_2_waves_per_eu_2_matrix_instr_nonkdim_16_cache_modifier_.cg",
        "dense_gemm",
        122.0,
        "aiter::gemm_a8w8_blockscale",
        (7168, 576),
    );
    let a8_down = b.gemm(
        "_gemm_a8w8_blockscale_kernel_GROUP_K_128_GROUP_N_128_BLOCK_SIZE_M_16_BLOCK_SIZE_N_16_BLOCK_SIZE_K_128_GROUP_SIZE_M_1_NUM_KSPLIT_1_num_warps_4_num_stages_2_waves_per_eu_2_matrix_instr_nonkdim_16_cache_modifier_.cg",
        "dense_gemm",
        39.0,
        "aiter::gemm_a8w8_blockscale",
        (576, 7168),
    );
    let fmoe = b.gemm(
        "_ZN5aiter50fmoe_bf16_blockscaleFp8_g1u1_vs_silu_1tg_ps_32x256E",
        "moe_gemm",
        160.0,
        "aiter::fmoe_fp8_blockscale_g1u1",
        (7168, 4096),
    );
    let mla = b.k(
        "_ZN5aiter41mla_a16w8_qh16_m16x4_n16x1_coex0_mask1_psE",
        "attention",
        54.75,
        "aiter::mla_decode_fwd",
    );
    let mla_red = b.k(
        "void aiter::kn_mla_reduce_v1<aiter::MlaReduceKernelV1Traits<512, 16, 1>, __hip_bfloat16, __hip_bfloat16>(aiter::MlaReduceKernelV1Params)",
        "attention",
        11.48,
        "aiter::mla_reduce_v1",
    );
    let kvc = b.k(
        "void aiter::concat_and_cache_mla_kernel<__hip_bfloat16, unsigned char, (vllm::Fp8KVCacheDataType)1>(__hip_bfloat16 const*, __hip_bfloat16 const*, unsigned char*, long const*, int, int, int, int, int, float const*)",
        "attention",
        4.262,
        "aiter::concat_and_cache_mla",
    );
    let ew_add = b.k(
        "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>, std::array<char*, 3ul>>(int, at::native::CUDAFunctor_add<c10::BFloat16>, std::array<char*, 3ul>)",
        "elementwise",
        6.511,
        "aten::add",
    );
    let ew_mul = b.k(
        "void at::native::vectorized_elementwise_kernel<4, at::native::BinaryFunctor<c10::BFloat16, c10::BFloat16, c10::BFloat16, at::native::binary_internal::MulFunctor<float>>, std::array<char*, 3ul>>(int, at::native::BinaryFunctor<c10::BFloat16, c10::BFloat16, c10::BFloat16, at::native::binary_internal::MulFunctor<float>>, std::array<char*, 3ul>)",
        "elementwise",
        6.511,
        "aten::mul",
    );
    let cat = b.k(
        "void at::native::(anonymous namespace)::CatArrayBatchedCopy_aligned16_contig<at::native::(anonymous namespace)::OpaqueType<2u>, unsigned int, 2, 128, 1>(at::native::(anonymous namespace)::OpaqueType<2u>*, at::native::(anonymous namespace)::CatArrInputTensorMetadata<at::native::(anonymous namespace)::OpaqueType<2u>, unsigned int, 128, 1>, at::native::(anonymous namespace)::TensorSizeStride<unsigned int, 4u>, int, unsigned int)",
        "elementwise",
        5.984,
        "aten::cat",
    );
    let cdr_attn = b.comm(
        "void aiter::cross_device_reduce_2stage<__hip_bfloat16, 8>(aiter::RankData*, aiter::RankSignals, aiter::Signal*, __hip_bfloat16*, int, int)",
        "allreduce",
        18.6,
        "aiter::all_reduce",
    );
    let cdr_moe = b.comm(
        "void aiter::cross_device_reduce_2stage<__hip_bfloat16, 8>(aiter::RankData*, aiter::RankSignals, aiter::Signal*, __hip_bfloat16*, int, int)",
        "allreduce",
        20.6,
        "aiter::all_reduce",
    );
    let cdr_tail = b.comm(
        "void aiter::cross_device_reduce_2stage<__hip_bfloat16, 8>(aiter::RankData*, aiter::RankSignals, aiter::Signal*, __hip_bfloat16*, int, int)",
        "allreduce",
        19.6,
        "aiter::all_reduce",
    );
    let rccl = b.comm(
        "void rcclGenericKernel<1, false>(ncclDevKernelArgsStorage<4096ul>)",
        "other",
        90.0,
        "c10d::allreduce_",
    );
    let blas_kvb = b.gemm(
        "Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT32x64x128_MI16x16x1_SN_LDSB1_AFC1_AFEM1_CLR1_GRVWA8_GRVWB8_ISA942_K1_SK3_WG32_8_1",
        "dense_gemm",
        5.5,
        "aten::mm",
        (512, 256),
    );
    let blas_small = b.gemm(
        "Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT16x16x256_MI16x16x1_SN_LDSB1_AFC1_AFEM1_CLR1_GRVWA8_GRVWB8_ISA942_K1_SK3_WG16_16_1",
        "dense_gemm",
        5.4,
        "aten::mm",
        (1536, 3072),
    );
    let blas_router = b.gemm(
        "Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT16x16x256_MI16x16x1_SN_LDSB1_AFC1_AFEM1_CLR1_GRVWA8_GRVWB8_ISA942_K1_SK3_WG16_16_1",
        "dense_gemm",
        10.0,
        "aten::mm",
        (7168, 256),
    );
    let blas_lm = b.gemm(
        "Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT64x64x256_MI16x16x1_SN_LDSB1_AFC1_AFEM1_CLR1_GRVWA8_GRVWB8_ISA942_K1_SK3_WG32_8_1",
        "dense_gemm",
        55.1,
        "aten::mm",
        (7168, 16160),
    );
    let norm_arq = b.k(
        "_ZN5aiter24add_rmsnorm_quant_kernelIDF16bDF16bLi256ELi16ELb0ELb0ELb1ELi1EEEvPT0_PT_PfS4_S4_S4_diiiiiiib",
        "norm",
        4.408,
        "aiter::add_rmsnorm_quant",
    );
    let norm_ck = b.k(
        "void ck_tile::kentry<1, ck_tile::Rmsnorm2dFwd<ck_tile::Rmsnorm2dFwdPipelineOnePass<ck_tile::Rmsnorm2dFwdPipelineProblem<ck_tile::bf16_t, ck_tile::bf16_t, float, ck_tile::bf16_t>>>>",
        "norm",
        4.408,
        "aiter::rmsnorm2d_fwd",
    );
    let quant = b.k(
        "void aiter::dynamic_per_group_scaled_quant_kernel<__hip_bfloat16, __hip_fp8_e4m3_fnuz, 128>(__hip_fp8_e4m3_fnuz*, __hip_bfloat16 const*, float*, int, int)",
        "quant",
        4.372,
        "aiter::dynamic_per_token_group_quant",
    );
    let sort1 = b.k(
        "void ck_tile::kentry<1, ck_tile::MoeSortingKernel<ck_tile::MoeSortingProblemEx<int, float, 1, true, false, true, 0>>>",
        "moe_routing",
        4.397,
        "aiter::moe_sorting_fwd",
    );
    let sort2 = b.k(
        "void ck_tile::kentry<1, ck_tile::MoeSortingMultiPhaseKernel_P23<ck_tile::MoeSortingProblemMp<int, float, 1, true, false, 0>>>",
        "moe_routing",
        4.397,
        "aiter::moe_sorting_fwd",
    );
    let topk = b.k(
        "void aiter::biased_grouped_topk_kernel<c10::BFloat16, float, 8, true>(c10::BFloat16*, c10::BFloat16*, float*, int*, int, int, int, int, float)",
        "moe_routing",
        4.31,
        "aiter::biased_grouped_topk",
    );
    let append = b.k(
        "void aiter::append_shared_expert_ids_kernel<int>(int*, float*, int, int, int)",
        "moe_routing",
        4.138,
        "aiter::append_shared_expert",
    );
    let other = b.k(
        "void sglang::compute_position_kernel<long>(long const*, long const*, long*, long*, int)",
        "elementwise",
        7.0,
        "sglang::compute_position",
    );

    // Per layer: 4 norm, 4 quant, 8 elementwise, 2 cat, 2 allreduce.
    let attn = [
        norm_arq, quant, a8_qa, ew_add, norm_ck, quant, blas_small, a8_kva, norm_ck, ew_mul,
        blas_kvb, cat, kvc, mla, mla_red, ew_add, cat, quant, a8_o, cdr_attn, norm_arq,
    ];
    let mut moe = attn.to_vec();
    moe.extend([
        blas_router,
        topk,
        append,
        sort1,
        sort2,
        quant,
        ew_mul,
        fmoe,
        ew_add,
        ew_mul,
        ew_add,
        ew_mul,
        cdr_moe,
    ]);
    let mut dense = attn.to_vec();
    dense.extend([
        quant, a8_up, ew_mul, a8_down, ew_add, ew_mul, ew_add, cdr_moe,
    ]);
    // quant: 4 per layer + 3 = 247; the dense layers have 4 too (3 attention + 1 MLP).
    let mut pro = vec![rccl, other, other, other, other, other, quant, quant, quant];
    pro.extend([ew_add; 5]);
    let epi = vec![
        norm_arq, blas_lm, cdr_tail, other, other, other, other, other, other,
    ];

    // Reference per-rank table: wall, kernel, comm (ms); rank 0 kernel 36.45 = 33.95 compute + 2.50 comm.
    let table = [
        (36.47, 36.45, 2.50),
        (37.03, 36.61, 2.66),
        (36.46, 36.44, 2.48),
        (37.14, 36.71, 2.89),
        (37.14, 36.62, 2.43),
        (37.15, 36.73, 2.54),
        (36.48, 36.46, 2.24),
        (37.15, 36.72, 2.40),
    ];
    let tune = table
        .iter()
        .map(|&(wall, kernel, comm)| RankTune {
            wall_ns: ms(wall),
            compute: (kernel - comm) / 33.95,
            comm: comm / 2.50,
        })
        .collect();
    Scenario {
        name: "mi325x-dsr1-fp8-tp8",
        device: "AMD Instinct MI325X",
        vendor: Vendor::Amd,
        ranks: 8,
        main_stream: 7,
        aux_stream: None,
        annotations: false,
        specs: b.specs,
        prologue: seq(&pro),
        dense_layer: seq(&dense),
        moe_layer: seq(&moe),
        epilogue: seq(&epi),
        n_dense: 3,
        n_moe: 58,
        replace_last: None,
        tune,
        paced: None,
        prefill: PrefillTune {
            wall_ns: ms(91.35),
            compute_ns: ms(53.49),
            comm_ns: ms(18.5),
            big: None,
            toks: 8192,
        },
        cold_first: Some((cdr_attn, us(269.0), false)),
        burst: Some(Burst {
            spec: rccl,
            count: 108,
            dur_ns: us(1634.0),
            gap_min_ns: ms(2.0),
            gap_max_ns: ms(4.9),
        }),
        stall: None,
        protocol: (
            cdr_attn,
            "void aiter::cross_device_reduce_1stage<__hip_bfloat16, 8>(aiter::RankData*, aiter::RankSignals, aiter::Signal*, __hip_bfloat16*, int)",
        ),
    }
}
