//! Tests of the built-in rule table and of user rules.

use std::io::Write;

use super::*;
use crate::reader::model::NameTable;

/// (kernel name, category key, collective key). Names are verbatim: most from the public traces
/// under `/work/shared/traces` (HTA, PARAM, TraceLens test traces), the rest as written in
/// `REFERENCE-ANALYSES.md` and `DESIGN.md` for the DSR1 runs (MI355X, MI325X, B200, H200).
const TRACE_CASES: &[(&str, &str, Option<&str>)] = &[
    ("fmhaSm100aKernel_QkvE4m3OBfloat16H64PagedKvCausalP16VarSeqQ128Kv128PersistentContext", "attention", None),
    ("fmhaSm100aKernel_QkvE4m3OBfloat16H64PagedKvSlidingOrChunkedCausalP16VarSeqQ128Kv128PersistentContext", "attention", None),
    ("attn_fwd", "attention", None),
    ("sage_fwd", "attention", None),
    ("void pytorch_flash::flash_fwd_kernel<pytorch_flash::Flash_fwd_kernel_traits<64, 128, 128, 4, false, false, cutlass::bfloat16_t, pytorch_flash::Flash_kernel_traits<64, 128, 128, 4, cutlass::bfloat16_t> >, false, true, false, false, false, true, false>(pytorch_flash::Flash_fwd_params)", "attention", None),
    ("_ZN7ck_tile6kentryILi2ENS_38FmhaBatchPrefillWithPagedKVCacheKernelINS_40BlockFmhaBatchPrefillPipelineQRKSVSAsyncINS_36BlockFmhaBatchPrefillPipelineProblemIDF16bDF16bDF16bffDF16bhfDF16bfDF16bNS_13TileFmhaShapeINS_8sequenceIJLi128ELi128ELi32ELi128ELi32ELi128EEEENS5_IJLi4ELi1ELi1EEEENS5_IJLi32ELi32ELi16EEEES7_S8_Lb1EEELb1ENS_17ComposedAttentionILj0ELb1EEENS_30SimplifiedGenericAttentionMaskILb1EEELb0ELi1ENS_26TileFmhaBatchPrefillTraitsILb1ELb1ELb1ELb1ELb0ELNS_22BlockAttentionBiasEnumE0ELb0ELb0ELb0ELNS_28BlockAttentionQuantScaleEnumE0ELin1ELb0ELb0ELi1ELNS_37BlockAttentionKVCacheMemoryLayoutEnumE1ELNS_36BlockAttentionKVCacheLookupTableEnumE1ELNS_33BlockAttentionKVCacheLoadModeEnumE0EEEEENS_53BlockFmhaBatchPrefillPipelineQRKSVSAsyncDefaultPolicyEEENS_17Default2DEpilogueINS_24Default2DEpilogueProblemIfDF16bLb1ELb1ELb1EEEvEEEEJNSS_21FmhaFwdGroupModeKargsEEEEvDpT1_", "attention", None),
    ("void paged_attention_ll4mi_reduce_kernel<__hip_bfloat16, __hip_bfloat16, 128, 128, 256, 3, false>(__hip_bfloat16*, float const*, float const*, __hip_bfloat16 const*, int const*, int const*, int, int, float const*)", "attention", None),
    ("void paged_attention_ll4mi_QKV_mfma16_kernel<0, __hip_bfloat16, __hip_bfloat16, (vllm::Fp8KVCacheDataType)0, 1, 128, 256, false, 4, 1, ck_tile::ComposedAttention<0u, false> >(__hip_bfloat16 const*, __hip_bfloat16 const*, __hip_bfloat16 const*, float, int const*, int const*, int const*, float const*, int, int, int, int, float*, float*, __hip_bfloat16*, float, float, float const*, float const*, float const*, ck_tile::ComposedAttention<0u, false> const*)", "attention", None),
    ("kernel_unified_attention_2d", "attention", None),
    ("kernel_unified_attention_3d", "attention", None),
    ("reduce_segments", "attention", None),
    ("ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)", "comm", Some("allgather")),
    ("ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)", "comm", Some("allreduce")),
    ("ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)", "comm", Some("allreduce")),
    ("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclWorkElem)", "comm", Some("send_recv")),
    ("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)", "comm", Some("send_recv")),
    ("void (anonymous namespace)::multimem_all_reduce_kernel<c10::BFloat16, 16>(c10::BFloat16*, unsigned long, unsigned int**, unsigned long, unsigned long)", "comm", Some("allreduce")),
    ("void cutlass::Kernel2<cutlass_80_simt_sgemm_128x32_8x5_nn_align1>(cutlass_80_simt_sgemm_128x32_8x5_nn_align1::Params)", "dense_gemm", None),
    ("void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_64x64_32x6_nt_align4>(cutlass_80_tensorop_s1688gemm_64x64_32x6_nt_align4::Params)", "dense_gemm", None),
    ("void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_256x64_32x3_nt_align1>(cutlass_80_tensorop_s1688gemm_256x64_32x3_nt_align1::Params)", "dense_gemm", None),
    ("void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_128x128_32x3_tn_align1>(cutlass_80_tensorop_s1688gemm_128x128_32x3_tn_align1::Params)", "dense_gemm", None),
    ("volta_sgemm_64x64_nn", "dense_gemm", None),
    ("volta_sgemm_128x64_nn", "dense_gemm", None),
    ("ampere_sgemm_128x64_nn", "dense_gemm", None),
    ("volta_sgemm_32x32_sliced1x4_tn", "dense_gemm", None),
    ("void epilogue::impl::globalKernel<float, float, float, true, true>(int, int, long, float*, cublasLtEpilogue_t, int, float*, long, void*, long, long, long, float*, long, int*)", "dense_gemm", None),
    ("void splitKreduce_kernel<32, 16, int, float, float, float, float, true, true, false>(cublasSplitKParams<float>, float const*, float const*, float*, float const*, float const*, float const*, float const*, float*, void*, long, float*, int*)", "dense_gemm", None),
    ("void gemmSN_NN_kernel<float, 256, 4, 2, 8, 4, 4, false, cublasGemvTensorStridedBatched<float const>, cublasGemvTensorStridedBatched<float const>, cublasGemvTensorStridedBatched<float> >(cublasGemmSmallNParams<cublasGemvTensorStridedBatched<float const>, cublasGemvTensorStridedBatched<float const>, cublasGemvTensorStridedBatched<float>, float>)", "dense_gemm", None),
    ("void gemv2T_kernel_val<int, int, float, float, float, float, 128, 16, 2, 2, false, false, cublasGemvParams<cublasGemvTensorStridedBatched<float const>, cublasGemvTensorStridedBatched<float const>, cublasGemvTensorStridedBatched<float>, float> >(cublasGemvParams<cublasGemvTensorStridedBatched<float const>, cublasGemvTensorStridedBatched<float const>, cublasGemvTensorStridedBatched<float>, float>, float, float)", "dense_gemm", None),
    ("nvjet_tst_192x8_64x8_4x1_v_bz_TNT", "dense_gemm", None),
    ("nvjet_tst_144x128_64x6_2x1_v_bz_bias_TNN", "dense_gemm", None),
    ("nvjet_tst_64x16_64x16_2x4_2cta_h_bz_bias_TNT", "dense_gemm", None),
    ("nvjet_tst_64x64_64x16_2x1_2cta_v_bz_bias_TNT", "dense_gemm", None),
    ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas", "dense_gemm", None),
    ("Cijk_Ailk_Bjlk_SB_Bias_AS_SAV_UserArgs_MT64x16x16_MI16x16x1_SN_LDSB0_AFC1_AFEM1_AFEM1_ASEM1_CLR1_CADS0_EPS0_GRVWA1_GRVWB1_GSUAMB_ISA90a_IU1_K1_LBSPPA0_LBSPPB0_LBSPPM0_LPA0_LPB0_LPM0_LRVW1_LWPMn1_MIAV0_MIWT1_1_MO40_NTn1_NTA0_NTB0_NTC0_NTD0_NTM0_NEPBS2_NLCA1_NLCB1_ONLL1_PGR2_PLR1_PKA1_SIA3_SS1_SPO1_SRVW0_SSO0_SVW1_TLDS0_USFGROn1_VSn1_VWA1_VWB1_WSGRA0_WSGRB0_WS64_WG64_4_1", "dense_gemm", None),
    ("Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT32x64x128_MI16x16x1_SN_LDSB1_AFC1_AFEM1_AFEM1_ASEM1_CLR1_CADS0_DTVA0_DTVB0_EPS0_FDSI0_GRPM1_GRVWA8_GRVWB8_GSUAMB_GLS0_ISA942_IU1_K1_LBSPPA512_LBSPPB256_LBSPPM0_LPA16_LPB16_LPM0_LRVW8_LWPMn1_MIAV0_MIWT2_1_MO40_NTn1_NTA0_NTB4_NTC0_NTD4_NTM0_NEPBS16_NLCA1_NLCB1_ONLL1_PGR2_PLR1_PKA1_SIA3_SS1_SPO0_SRVW0_SSO0_SVW2_SK0_SKXCCM0_TLDS1_ULSGRO0_USL1_UIOFGRO0_USFGROn1_VSn1_VWA2_VWB1_WSGRA0_WSGRB0_WS64_WG16_16_1", "dense_gemm", None),
    ("Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT256x32x64_MI16x16x1_SN_LDSB1_AFC1_AFEM1_AFEM1_ASEM1_CLR1_CADS0_DTLA0_DTLB0_DTVA0_DTVB0_EPS0_FDSI0_GRPM1_GRVWA8_GRVWB8_GSUAMBSK_GLS0_ISA942_IU1_K1_LDSTI0_LBSPPA512_LBSPPB256_LBSPPM0_LPA16_LPB16_LPM0_LRVW8_LWPMn1_MIAV0_MIWT4_2_MO40_NTn1_NTA0_NTB0_NTC0_NTD4_NTM0_NEPBS16_NLCA1_NLCB1_ONLL1_PGR2_PLR1_PKA1_SIA3_SS1_SPO0_SRVW0_SSO0_SVW4_SK0_SKFTR0_SKXCCM0_TLDS1_ULSGRO0_USL1_UIOFGRO0_USFGROn1_VSn1_VWA4_VWB2_WSGRA0_WSGRB0_WS64_WG64_4_1", "dense_gemm", None),
    ("Cijk_Ailk_Bljk_BBS_BH_MT32x64x64_MI16x16x16x1_SN_1LDSB0_APM1_AF0EM1_AF1EM1_AMAS3_ASE_ASGT_ASLT_ASM_ASAE01_ASCE01_ASEM1_BL1_BS1_CLR0_DTVA0_DTVB0_ETSP_EPS1_ELFLR4_EMLL0_FSSC10_FL0_GLVWA8_GLVWB4_GRCGA1_GRCGB1_GRPM1_GRVWn1_GSU1_GSUASB_GLS0_ISA942_IU1_K1_KLA_LBSPPA256_LBSPPB256_LPA32_LPB4_LRVW4_LWPMn1_MIAV0_MKFGSU256_NTA0_NTB0_NTC0_NTD0_NEPBS16_NLCA1_NLCB1_ONLL1_PK0_PGR2_PLR3_PKA0_SIA3_SLW1_SS0_SU0_SUM0_SUS0_SPO0_SRVW0_SSO0_SVW4_TSGRA0_TSGRB0_TT2_32_TLDSn1_UMLDSA0_UMLDSB1_U64SL1_USFGROn1_VAW1_VSn1_VW2_VWB2_VFLRP0_WSGRA0_WSGRB0_WG16_8_2_WGM1", "dense_gemm", None),
    ("Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT192x128x64_MI16x16x1_SN_LDSB1_AFC1_AG0_AFEM1_AFEM1_ASEM1_CB0_CD1_1_CLR1_CADS0_DTLA0_DTLB0_DTLM0_DTVA0_DTVB0_DTVMXSA0_DTVMXSB0_DTVSM0_DPLB0_EPS0_ELFLR0_EMLLn1_FDSI0_GRPM1_GRVWA8_GRVWB8_GSUAMBSK_GLS0_HPLR0_ISA942_ICIW0_IU1_K1_LDSTI0_LBSPPA256_LBSPPB512_LBSPPMXSA0_LBSPPMXSB0_LBSPPM0_LPA16_LPB16_LPMXSA0_LPMXSB0_LPM0_LRVW8_LWPMn1_MIAV0_MIWT6_4_MXLIBL_MXSFNS_MO40_MGRIPM1_NTn1_NTA0_NTB0_NTC0_NTD4_NTE0_NTMXSA0_NTMXSB0_NTM0_NTWS0_NVn1_NVA0_NVB0_NVC0_NVD0_NVE0_NVMXSA0_NVMXSB0_NVM0_NVWS0_NEPBS16_NLCA1_NLCB1_ONLL1_PGR2_PLR1_PKA1_SGROB0_SIA3_SS1_SPO0_SRVW0_SSO0_SVW2_SK0_SKFTR0_SKXCCM0_SIP1_SGRO0_TDMI0_TDMS0_TIN0_THn1_THA0_THB0_THC0_THD0_THE0_THMXSA0_THMXSB0_THM0_THWS0_TLDS1_TLDSM1_ULSGRO1_USL1_USLMX0_UIOFGRO0_UPLRP0_USFGROn1_USI0_VSn1_VWA2_VWB4_WSGRA0_WSGRB0_WS64_WG32_8_1", "dense_gemm", None),
    ("Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT128x96x128_MI16x16x1_SN_LDSB1_AFC1_AG0_AFEM1_AFEM1_ASEM1_CB0_CD1_1_CLR1_CADS0_DTLA0_DTLB0_DTLM0_DTVA0_DTVB0_DTVMXSA0_DTVMXSB0_DTVSM0_DPLB0_EPS0_ELFLR0_EMLLn1_FDSI0_GRPM1_GRVWA8_GRVWB8_GSUAMBSK_GLS0_HPLR0_ISA942_ICIW0_IU1_K1_LDSTI0_LBSPPA1024_LBSPPB512_LBSPPMXSA0_LBSPPMXSB0_LBSPPM0_LPA16_LPB16_LPMXSA0_LPMXSB0_LPM0_LRVW8_LWPMn1_MIAV0_MIWT4_6_MXLIBL_MXSFNS_MO40_MGRIPM1_NTn1_NTA0_NTB0_NTC0_NTD4_NTE0_NTMXSA0_NTMXSB0_NTM0_NTWS0_NVn1_NVA0_NVB0_NVC0_NVD0_NVE0_NVMXSA0_NVMXSB0_NVM0_NVWS0_NEPBS16_NLCA1_NLCB1_ONLL1_PGR2_PLR1_PKA1_SGROB0_SIA3_SS1_SPO0_SRVW0_SSO0_SVW4_SK0_SKFTR0_SKXCCM0_SIP1_SGRO0_TDMI0_TDMS0_TIN0_THn1_THA0_THB0_THC0_THD0_THE0_THMXSA0_THMXSB0_THM0_THWS0_TLDS1_TLDSM1_ULSGRO1_USL1_USLMX0_UIOFGRO0_UPLRP0_USFGROn1_USI0_VSn1_VWA4_VWB2_WSGRA0_WSGRB0_WS64_WG32_4_2", "dense_gemm", None),
    ("void at::native::vectorized_gather_kernel<16, long>(char*, char*, long*, int, long, long, long, long, bool)", "elementwise", None),
    ("void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous namespace)::CompareFunctor<long>, at::detail::Array<char*, 3> >(int, at::native::(anonymous namespace)::CompareFunctor<long>, at::detail::Array<char*, 3>)", "elementwise", None),
    ("void at::native::vectorized_elementwise_kernel<8, at::native::BUnaryFunctor<c10::BFloat16, c10::BFloat16, c10::BFloat16, at::native::binary_internal::MulFunctor<float> >, std::array<char*, 2ul> >(int, at::native::BUnaryFunctor<c10::BFloat16, c10::BFloat16, c10::BFloat16, at::native::binary_internal::MulFunctor<float> >, std::array<char*, 2ul>)", "elementwise", None),
    ("void at::native::vectorized_elementwise_kernel<4, at::native::exp_kernel_cuda(at::TensorIteratorBase&)::{lambda()#2}::operator()() const::{lambda()#2}::operator()() const::{lambda(float)#1}, at::detail::Array<char*, 2> >(int, at::native::exp_kernel_cuda(at::TensorIteratorBase&)::{lambda()#2}::operator()() const::{lambda()#2}::operator()() const::{lambda(float)#1}, at::detail::Array<char*, 2>)", "elementwise", None),
    ("void at::native::_scatter_gather_elementwise_kernel<128, 4, at::native::_cuda_scatter_gather_internal_kernel<false, at::native::OpaqueType<4> >::operator()<at::native::TensorAssign>(at::TensorIterator&, long, long, long, at::native::TensorAssign const&)::{lambda(int)#1}>(int, at::native::_cuda_scatter_gather_internal_kernel<false, at::native::OpaqueType<4> >::operator()<at::native::TensorAssign>(at::TensorIterator&, long, long, long, at::native::TensorAssign const&)::{lambda(int)#1})", "elementwise", None),
    ("void at::native::unrolled_elementwise_kernel<at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#2}::operator()() const::{lambda()#7}::operator()() const::{lambda(float)#1}, at::detail::Array<char*, 2>, TrivialOffsetCalculator<1, unsigned int>, TrivialOffsetCalculator<1, unsigned int>, at::native::memory::LoadWithCast<1>, at::native::memory::StoreWithCast<1> >(int, at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#2}::operator()() const::{lambda()#7}::operator()() const::{lambda(float)#1}, at::detail::Array<char*, 2>, TrivialOffsetCalculator<1, unsigned int>, TrivialOffsetCalculator<1, unsigned int>, at::native::memory::LoadWithCast<1>, at::native::memory::StoreWithCast<1>)", "elementwise", None),
    ("void cub::DeviceScanInitKernel<cub::ScanTileState<int, true> >(cub::ScanTileState<int, true>, int)", "elementwise", None),
    ("void cub::DeviceCompactInitKernel<cub::ReduceByKeyScanTileState<int, int, true>, int*>(cub::ReduceByKeyScanTileState<int, int, true>, int, int*)", "elementwise", None),
    ("void cub::DeviceRadixSortOnesweepKernel<cub::DeviceRadixSortPolicy<long, int, int>::Policy800, false, long, int, int, int>(int*, int*, int*, int const*, long*, long const*, int*, int const*, int, int, int)", "elementwise", None),
    ("void at_cuda_detail::cub::DeviceRadixSortSingleTileKernel<at_cuda_detail::cub::DeviceRadixSortPolicy<long, at::cuda::cub::detail::OpaqueType<8>, int>::Policy800, false, long, at::cuda::cub::detail::OpaqueType<8>, int>(long const*, long*, at::cuda::cub::detail::OpaqueType<8> const*, at::cuda::cub::detail::OpaqueType<8>*, int, int, int)", "elementwise", None),
    ("triton_poi_fused_0", "elementwise", None),
    // Inductor's names list their fused ops: an RMSNorm or LayerNorm is norm, an op called
    // all_reduce inside a fused kernel is no collective.
    ("triton_red_fused__to_copy_add_mean_mul_pow_rsqrt_2", "norm", None),
    ("triton_per_fused__to_copy_add_mean_mul_pow_rsqrt_view_11", "norm", None),
    ("triton_red_fused_native_layer_norm_3", "norm", None),
    ("triton_red_fused_add_all_reduce_mean_mul_pow_rsqrt_4", "norm", None),
    ("triton_poi_fused_all_reduce_copy_5", "elementwise", None),
    ("triton_per_fused__to_copy_addmm_mean_pow_view_7", "elementwise", None),
    ("triton_red_fused_add_addmm_mul_native_layer_norm_split_unsqueeze_view_6", "elementwise", None),
    ("triton_per_fused__to_copy_add_mean_mul_neg_stack_transpose_unbind_unsqueeze_view_15", "elementwise", None),
    ("void (anonymous namespace)::store_kvcache<2048l, 4, false, long>((anonymous namespace)::StoreKVCacheParams)", "attention", None),
    ("void vllm::reshape_and_cache_flash_kernel<__nv_bfloat16, unsigned char, (vllm::Fp8KVCacheDataType)1>(__nv_bfloat16 const*, __nv_bfloat16 const*, unsigned char*, unsigned char*, long const*, long, long, long, long, long, int, int, int, float const*, float const*)", "attention", None),
    ("void vllm::reshape_and_cache_flash_kernel<__hip_bfloat16, __hip_bfloat16, (vllm::Fp8KVCacheDataType)0>(__hip_bfloat16 const*, __hip_bfloat16 const*, __hip_bfloat16*, __hip_bfloat16*, long const*, long, long, long, long, long, int, int, int, float const*, float const*, int)", "attention", None),
    ("SubTensorOpWithScalar1d", "elementwise", None),
    ("batched_transpose_16x32_half", "elementwise", None),
    ("batched_transpose_32x32_half", "elementwise", None),
    ("void recat_copy_async_kernel<float>(long const*, long const*, float const*, float*, long, long, long)", "elementwise", None),
    ("_ZN7sgl_hip10activation18act_and_mul_kernelI14__hip_bfloat16TnPFT_RKS3_EXadL_Z4siluIS2_ES3_S5_EEEEvPS3_PS4_i", "elementwise", None),
    ("void rotary_embedding_kernel<c10::BFloat16, true>(long const*, c10::BFloat16*, c10::BFloat16*, c10::BFloat16 const*, int, long, long, long, int, int, int)", "attention", None),
    ("void vllm::rotary_embedding_kernel<c10::BFloat16, true>(long const*, c10::BFloat16*, c10::BFloat16*, c10::BFloat16 const*, int, long, long, long, int, int, int)", "attention", None),
    ("compute_position_kernel", "elementwise", None),
    ("_copy_page_indices_kernel", "elementwise", None),
    ("create_flashinfer_kv_indices_triton", "elementwise", None),
    ("void (anonymous namespace)::clamp_position_kernel<long>(long*, long const*, unsigned long)", "elementwise", None),
    ("void at::native::(anonymous namespace)::CatArrayBatchedCopy<long, unsigned int, 2, 128, 1>(long*, at::native::(anonymous namespace)::CatArrInputTensorMetadata<long, unsigned int, 128, 1>, at::native::(anonymous namespace)::TensorSizeStride<unsigned int, 4u>, int, unsigned int)", "elementwise", None),
    ("void at::native::(anonymous namespace)::CatArrayBatchedCopy<float, unsigned int, 2, 128, 1>(float*, at::native::(anonymous namespace)::CatArrInputTensorMetadata<float, unsigned int, 128, 1>, at::native::(anonymous namespace)::TensorSizeStride<unsigned int, 4u>, int, unsigned int)", "elementwise", None),
    ("void at::native::(anonymous namespace)::CatArrayBatchedCopy<float, unsigned int, 3, 128, 1>(float*, at::native::(anonymous namespace)::CatArrInputTensorMetadata<float, unsigned int, 128, 1>, at::native::(anonymous namespace)::TensorSizeStride<unsigned int, 4u>, int, unsigned int)", "elementwise", None),
    ("void at::native::(anonymous namespace)::CatArrayBatchedCopy<at::native::(anonymous namespace)::OpaqueType<4u>, unsigned int, 3, 64, 64>(at::native::(anonymous namespace)::OpaqueType<4u>*, at::native::(anonymous namespace)::CatArrInputTensorMetadata<at::native::(anonymous namespace)::OpaqueType<4u>, unsigned int, 64, 64>, at::native::(anonymous namespace)::TensorSizeStride<unsigned int, 4u>, int, unsigned int)", "elementwise", None),
    ("bmm_Bfloat16_MxE2m1MxE4m3_Fp32_t128x16x256u2_s3_et128x16_m128x16x32_cga1x1x1_16dp256b_rM_TN_transOut_schedP2x1x2x3_biasM_bN_tmaOpt_clmp_dynBatch_sm100f", "moe_gemm", None),
    ("bmm_MxE4m3_MxE2m1MxE4m3_Fp32_t128x16x256u2_s3_et128x16_m128x16x32_cga1x1x1_16dp256b_rM_TN_transOut_schedP2x1x2x3_biasM_bN_tma_tmaOpt_clmp_swiGlu_dynBatch_sm100f", "moe_gemm", None),
    ("_matmul_ogs_NNT_bf16xbf16xmxfp4_16x128x256x1", "moe_gemm", None),
    ("_matmul_ogs_NNT_bf16xbf16xmxfp4_128x128x128x1", "moe_gemm", None),
    ("_matmul_ogs_NNT_bf16xbf16xmxfp4_16x128x256x1_swiglu", "moe_gemm", None),
    ("_matmul_ogs_NNT_bf16xbf16xmxfp4_128x128x128x1_swiglu", "moe_gemm", None),
    ("_topk_forward", "moe_routing", None),
    ("void moe::dev::finalize::finalizeKernelVecLoad<moe::dev::finalize::KernelParams<cutlass::bfloat16_t, cutlass::bfloat16_t, 4, true> >(moe::dev::finalize::KernelParams<cutlass::bfloat16_t, cutlass::bfloat16_t, 4, true>)", "moe_routing", None),
    ("void moe::dev::routing::routingIndicesOffsetsKernel<moe::dev::routing::routingRenormalize::KernelParams<__nv_bfloat16, __nv_bfloat16, 128, false, true, true> >(moe::dev::routing::routingRenormalize::KernelParams<__nv_bfloat16, __nv_bfloat16, 128, false, true, true>)", "moe_routing", None),
    ("void moe::dev::routing::routingIndicesHistogramKernel<moe::dev::routing::routingRenormalize::KernelParams<__nv_bfloat16, __nv_bfloat16, 128, false, true, true> >(moe::dev::routing::routingRenormalize::KernelParams<__nv_bfloat16, __nv_bfloat16, 128, false, true, true>)", "moe_routing", None),
    ("void moe::dev::routing::routingRenormalize::routingIndicesHistogramScoresKernel<moe::dev::routing::routingRenormalize::KernelParams<__nv_bfloat16, __nv_bfloat16, 128, false, true, true> >(moe::dev::routing::routingRenormalize::KernelParams<__nv_bfloat16, __nv_bfloat16, 128, false, true, true>)", "moe_routing", None),
    ("_finalize_matmul_scatter_bf16", "moe_routing", None),
    ("_sum_bitmatrix_rows", "moe_routing", None),
    ("_combined_routing_memset", "moe_routing", None),
    ("_combined_routing_compute", "moe_routing", None),
    ("void (anonymous namespace)::groupnorm_kernel_dispatch_up<__hip_bfloat16, 1024u>(unsigned int, unsigned int, long, bool, __hip_bfloat16 const*, float*, float*)", "norm", None),
    ("void (anonymous namespace)::groupnorm_kernel_dispatch_down<__hip_bfloat16, 1024u>(unsigned int, unsigned int, long, float, bool, __hip_bfloat16 const*, __hip_bfloat16 const*, __hip_bfloat16 const*, float const*, float const*, __hip_bfloat16*)", "norm", None),
    ("void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float, float>(int, float, float const*, float const*, float const*, float*, float*, float*)", "norm", None),
    ("void at::native::(anonymous namespace)::GammaBetaBackwardCUDAKernel<float, float>(long, long, float const*, float const*, float const*, float const*, float*, float*)", "norm", None),
    ("void at::native::(anonymous namespace)::layer_norm_grad_input_kernel<float, float>(float const*, float const*, float const*, float const*, float const*, float*, int)", "norm", None),
    ("void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16, float, false>(int, float, c10::BFloat16 const*, c10::BFloat16 const*, c10::BFloat16 const*, float*, float*, c10::BFloat16*)", "norm", None),
    ("_ZN5aiter24add_rmsnorm_quant_kernelIDF16bDF16bLi64ELi8ELb0ELb0ELb1ELi1EEEvPT0_PT_PfS4_S4_S4_diiiiiiib", "norm", None),
    ("_ZN5aiter24add_rmsnorm_quant_kernelIDF16bDF16bLi256ELi16ELb0ELb0ELb1ELi1EEEvPT0_PT_PfS4_S4_S4_diiiiiiib", "norm", None),
    ("_ZN5aiter24add_rmsnorm_quant_kernelIDF16bDF16bLi256ELi16ELb1ELb0ELb1ELi1EEEvPT0_PT_PfS4_S4_S4_diiiiiiib", "norm", None),
    ("void vllm::rms_norm_kernel<c10::BFloat16, 8, 2>(c10::BFloat16*, c10::BFloat16 const*, long, long, long, long, long, c10::BFloat16 const*, float, int, int)", "norm", None),
    ("void at::to_dense_representation_kernel<float>(long, long, long const*, float const*, long const*, float*)", "elementwise", None),
    ("void permute_pooled_embs_kernel<float>(float const*, long const*, long const*, long const*, float*, long, long, long)", "elementwise", None),
    ("void bounds_check_indices_kernel<long>(at::GenericPackedTensorAccessor<long, 1ul, at::RestrictPtrTraits, int>, at::GenericPackedTensorAccessor<long, 1ul, at::RestrictPtrTraits, int>, at::GenericPackedTensorAccessor<long, 1ul, at::RestrictPtrTraits, int>, long, at::GenericPackedTensorAccessor<long, 1ul, at::RestrictPtrTraits, int>, fbgemm_gpu::FixedDivisor)", "elementwise", None),
    ("Im2d2Col_v2", "other", None),
    ("igemm_fwd_gtcx3_nhwc_bf16_bx0_ex1_bt128x128x32_wt32x32x8_ws1x1_wr2x2_ta1x8x2x1_1x4x1x64_tb1x8x2x1_1x4x1x64_gkgs", "other", None),
    ("_ZN2ck16tensor_operation6device12_GLOBAL__N_139kernel_grouped_conv_fwd_xdl_cshuffle_v3INS_34GridwiseGemmMultiD_xdl_cshuffle_v3INS_13tensor_layout4gemm8RowMajorENS6_11ColumnMajorENS_5TupleIJEEES7_DF16bDF16bfDF16bSA_DF16bNS0_12element_wise11PassThroughESC_SC_LNS1_18GemmSpecializationE7ELi256ELi128ELi128ELi64ELi8ELi8ELi32ELi32ELi2ELi2ENS_8SequenceIJLi8ELi32ELi1EEEENSE_IJLi1ELi0ELi2EEEESG_Li2ELi8ELi8ELb0ELi0ESF_SG_SG_Li2ELi8ELi8ELb0ELi0ELi1ELi1ENSE_IJLi1ELi32ELi1ELi8EEEENSE_IJLi8EEEELNS_26BlockGemmPipelineSchedulerE0ELNS_24BlockGemmPipelineVersionE2EDF16bDF16bDF16bDF16bLb0ELb0ELb0EEENS1_30ComputePtrOffsetOfStridedBatchILi1ELi1ELi0EvEENS_16TensorDescriptorINS9_IJNS_5EmbedINS9_IJiiiiEEESQ_Lb0EEENS_11PassThroughIiEENS_3PadIiiiLb0EEESV_ST_ST_NSP_INS9_IJiiEEESW_Lb0EEESX_ST_NS_23Merge_v2_magic_divisionINS9_IJiiiEEEEES10_NS_8RightPadIiiLb0EEES12_NS_7UnMergeISW_Lb0EEEST_EEENS9_IJNSE_IJLi0EEEENSE_IJLi1EEEENSE_IJLi2EEEENSE_IJLi3EEEENSE_IJLi4EEEENSE_IJLi5EEEENSE_IJLi6EEEENSE_IJLi7EEEESI_NSE_IJLi9ELi11ELi13EEEENSE_IJLi10ELi12ELi14EEEENSE_IJLi15EEEENSE_IJLi16EEEENSE_IJLi18EEEENSE_IJLi17EEEEEEENS9_IJNSE_IJLi1ELi2ELi3ELi4EEEES1B_S1C_S1D_SI_NSE_IJLi9EEEENSE_IJLi10ELi11EEEENSE_IJLi12ELi13EEEENSE_IJLi14EEEES1G_S1H_S1J_S1I_NSE_IJLi19ELi20EEEENSE_IJLi21EEEEEEENSE_IJLi19ELi21ELi20EEEElEENSO_INS9_IJS14_S12_S12_S14_ST_EEENS9_IJS16_S17_S18_S1A_S19_EEENS9_IJNSE_IJLi1ELi2EEEES19_S1A_NSE_IJLi5ELi6EEEES1D_EEENSE_IJLi5ELi7ELi6EEEElEESA_NSO_INS9_IJSX_S12_S12_EEENS9_IJS16_S17_S18_EEENS9_IJS1X_S19_S1A_EEENSE_IJLi3ELi4EEEElEELb1ELNS_25InMemoryDataOperationEnumE0ELi1ELNS_10TailNumberE10EEEvNT_8ArgumentET1_T2_T3_T4_T0_S2F_", "other", None),
    ("_ZN2ck16tensor_operation6device12_GLOBAL__N_149kernel_grouped_conv_fwd_multiple_abd_xdl_cshuffleINS_34GridwiseGemmMultipleD_xdl_cshuffleIDF16bDF16bDF16bfDF16bNS_5TupleIJEEEDF16bNS0_12element_wise11PassThroughES8_S8_Li1ELi64ELi64ELi32ELi32ELi8ELi8ELi32ELi32ELi2ELi1ENS_8SequenceIJLi4ELi16ELi1EEEENS9_IJLi1ELi0ELi2EEEESB_Li2ELi8ELi8ELb0ELi1ESA_SB_SB_Li2ELi8ELi8ELb0ELi1ELi1ELi1ENS9_IJLi1ELi16ELi1ELi4EEEELi1ELNS_13LoopSchedulerE0ELNS_15PipelineVersionE0EDF16bLb0EEEPKDF16bSH_S6_DF16bS8_S8_S8_NS_16TensorDescriptorINS5_IJNS_5EmbedINS5_IJiiiiEEESK_Lb0EEENS_11PassThroughIiEENS_3PadIiiiLb0EEESP_SN_SN_NSJ_INS5_IJiiEEESQ_Lb0EEESR_SN_NS_23Merge_v2_magic_divisionINS5_IJiiiEEEEESU_NS_8RightPadIiiLb0EEESW_NS_7UnMergeINS5_IJiNS_17integral_constantIiLi8EEEEEELb0EEESN_EEENS5_IJNS9_IJLi0EEEENS9_IJLi1EEEENS9_IJLi2EEEENS9_IJLi3EEEENS9_IJLi4EEEENS9_IJLi5EEEENS9_IJLi6EEEENS9_IJLi7EEEENS9_IJLi8EEEENS9_IJLi9ELi11ELi13EEEENS9_IJLi10ELi12ELi14EEEENS9_IJLi15EEEENS9_IJLi16EEEENS9_IJLi18EEEENS9_IJLi17EEEEEEENS5_IJNS9_IJLi1ELi2ELi3ELi4EEEES18_S19_S1A_S1B_NS9_IJLi9EEEENS9_IJLi10ELi11EEEENS9_IJLi12ELi13EEEENS9_IJLi14EEEES1E_S1F_S1H_S1G_NS9_IJLi19ELi20EEEENS9_IJLi21EEEEEEENS9_IJLi19ELi21ELi20EEEElEENSI_INS5_IJNSX_ISQ_Lb0EEESW_SW_S11_SN_EEENS5_IJS13_S14_S15_S17_S16_EEENS5_IJNS9_IJLi1ELi2EEEES16_S17_NS9_IJLi5ELi6EEEES1A_EEENS9_IJLi5ELi7ELi6EEEElEES6_NSI_INS5_IJSR_SW_SW_NSX_INS5_IJiNSY_IiLi64EEEEEELb0EEENSX_INS5_IJiNSY_IiLi32EEEEEELb0EEEEEENS5_IJS13_S14_S15_S16_S17_EEENS5_IJS1W_S16_S17_S1X_NS9_IJLi7ELi8EEEEEEENS9_IJLi5ELi6ELi7ELi8EEEElEENS_31BlockToCTileMap_M00_N0_M01AdaptILi64ELi32ENSI_INS5_IJSR_SW_SW_EEENS5_IJS13_S14_S15_EEENS5_IJS1W_S16_S17_EEENS9_IJLi3ELi4EEEElEEiEENS1_30ComputePtrOffsetOfStridedBatchILi1ELi1ELi0EvEES2L_Lb1ELb0ELb0ELb0EEEvT0_T1_T2_PT3_T4_T5_T6_T7_T8_T9_T10_T11_T12_T13_", "other", None),
    ("void fbgemm_gpu::_offsets_range_cuda_kernel<long>(long, long, long const*, long*)", "elementwise", None),
    ("split_embedding_backward_codegen_rowwise_adagrad_weighted_find_long_segments(at::GenericPackedTensorAccessor<int, 1ul, at::RestrictPtrTraits, int>, at::GenericPackedTensorAccessor<int, 1ul, at::RestrictPtrTraits, int>, at::GenericPackedTensorAccessor<int, 1ul, at::RestrictPtrTraits, int>, at::GenericPackedTensorAccessor<long, 1ul, at::RestrictPtrTraits, int>, int)", "elementwise", None),
    ("void split_embedding_codegen_forward_unweighted_kernel<float, float, float, long, 5ul>(at::GenericPackedTensorAccessor<float, 1ul, at::RestrictPtrTraits, long>, at::GenericPackedTensorAccessor<float, 1ul, at::RestrictPtrTraits, long>, at::GenericPackedTensorAccessor<float, 2ul, at::RestrictPtrTraits, long>, at::GenericPackedTensorAccessor<int, 1ul, at::RestrictPtrTraits, int>, at::GenericPackedTensorAccessor<long, 1ul, at::RestrictPtrTraits, int>, at::GenericPackedTensorAccessor<int, 1ul, at::RestrictPtrTraits, int>, at::GenericPackedTensorAccessor<long, 1ul, at::RestrictPtrTraits, int>, at::GenericPackedTensorAccessor<long, 1ul, at::RestrictPtrTraits, int>, long, at::GenericPackedTensorAccessor<int, 1ul, at::RestrictPtrTraits, int>, at::GenericPackedTensorAccessor<float, 2ul, at::RestrictPtrTraits, int>)", "elementwise", None),
    ("void split_embedding_backward_codegen_adagrad_unweighted_kernel_warp_per_row_1<float, float, float, 1ul, 8>(at::GenericPackedTensorAccessor<float, 2ul, at::RestrictPtrTraits, long>, at::GenericPackedTensorAccessor<float, 1ul, at::RestrictPtrTraits, long>, at::GenericPackedTensorAccessor<float, 1ul, at::RestrictPtrTraits, long>, at::GenericPackedTensorAccessor<float, 2ul, at::RestrictPtrTraits, long>, at::GenericPackedTensorAccessor<int, 1ul, at::RestrictPtrTraits, int>, at::GenericPackedTensorAccessor<long, 1ul, at::RestrictPtrTraits, int>, at::GenericPackedTensorAccessor<int, 1ul, at::RestrictPtrTraits, int>, at::GenericPackedTensorAccessor<long, 1ul, at::RestrictPtrTraits, int>, at::GenericPackedTensorAccessor<long, 1ul, at::RestrictPtrTraits, int>, at::GenericPackedTensorAccessor<int, 1ul, at::RestrictPtrTraits, int>, at::GenericPackedTensorAccessor<int, 1ul, at::RestrictPtrTraits, int>, at::GenericPackedTensorAccessor<int, 1ul, at::RestrictPtrTraits, int>, at::GenericPackedTensorAccessor<int, 1ul, at::RestrictPtrTraits, int>, int, bool, at::PhiloxCudaState, fbgemm_gpu::FixedDivisor, at::GenericPackedTensorAccessor<at::AccumulateType<float, true>::type, 1ul, at::RestrictPtrTraits, long>, at::GenericPackedTensorAccessor<at::AccumulateType<float, true>::type, 1ul, at::RestrictPtrTraits, long>, at::GenericPackedTensorAccessor<int, 1ul, at::RestrictPtrTraits, int>, at::GenericPackedTensorAccessor<long, 1ul, at::RestrictPtrTraits, int>, float, float)", "elementwise", None),
    ("sage_quant_kernel", "quant", None),
    ("void vllm::scaled_fp8_quant_kernel_strided<c10::BFloat16, c10::Float8_e4m3fn>(c10::Float8_e4m3fn*, c10::BFloat16 const*, float const*, int, long, long)", "quant", None),
    ("void tensorrt_llm::kernels::quantize_with_block_size<(tensorrt_llm::BlockScaleQuantizationType)2, __nv_bfloat16, 32, true>(int, int, int, int, __nv_bfloat16 const*, float const*, unsigned int*, unsigned int*, flashinfer::QuantizationSFLayout)", "quant", None),
    ("_ZN7ck_tile6kentryILi1ENS_12Rmsnorm2dFwdINS_27Rmsnorm2dFwdPipelineOnePassINS_27Rmsnorm2dFwdPipelineProblemIDF16bDF16bfDF16bDF16bDF16bffNS_19Generic2dBlockShapeINS_8sequenceIJLi1ELi3072EEEENS5_IJLi1ELi128EEEENS5_IJLi1ELi8EEEEEENS_18Rmsnorm2dFwdTraitsILb1ELb0ELb0ELb0ELNS_21Rmsnorm2dFusedAddEnumE1ELNS_23Rmsnorm2dFusedQuantEnumE0ELNS_22Rmsnorm2dSensitiveEnumE0EEEEENS_33Rmsnorm2dFwdPipelineDefaultPolicyEEENS_17Default2DEpilogueINS_24Default2DEpilogueProblemIfDF16bLb0ELb1ELb0EEEvEEEEJNSM_5KargsEEEEvDpT1_", "norm", None),
    ("_ZN7ck_tile6kentryILi1ENS_12Rmsnorm2dFwdINS_27Rmsnorm2dFwdPipelineOnePassINS_27Rmsnorm2dFwdPipelineProblemIDF16bDF16bfDF16bDF16bDF16bffNS_19Generic2dBlockShapeINS_8sequenceIJLi1ELi3072EEEENS5_IJLi1ELi128EEEENS5_IJLi1ELi8EEEEEENS_18Rmsnorm2dFwdTraitsILb1ELb0ELb0ELb0ELNS_21Rmsnorm2dFusedAddEnumE1ELNS_23Rmsnorm2dFusedQuantEnumE0ELNS_22Rmsnorm2dSensitiveEnumE0EEEEENS_33Rmsnorm2dFwdPipelineDefaultPolicyEEENS_17Default2DEpilogueINS_24Default2DEpilogueProblemIfDF16bLb0ELb1ELb0EEEvEEEEJNSM_5KargsEEEEvDpT1_", "norm", None),
    ("std::enable_if<(((8)>(0)))&&vllm::_typeConvert<c10::BFloat16>::exists, void>::type vllm::fused_add_rms_norm_kernel<c10::BFloat16, 8>(c10::BFloat16*, long, c10::BFloat16*, c10::BFloat16 const*, float, int, int)", "norm", None),
    ("void (anonymous namespace)::softmax_warp_forward<float, float, float, 9, false, false>(float*, float const*, int, int, int, bool const*, int, bool)", "elementwise", None),
    ("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, at::detail::Array<char*, 1> >(int, at::native::FillFunctor<float>, at::detail::Array<char*, 1>)", "elementwise", None),
];

const REFERENCE_CASES: &[(&str, &str, Option<&str>)] = &[
    // Communication
    (
        "aiter::cross_device_reduce_2stage",
        "comm",
        Some("allreduce"),
    ),
    ("cross_device_reduce_1stage", "comm", Some("allreduce")),
    ("rcclGenericKernel", "comm", Some("other")),
    ("ncclDevKernel_Generic", "comm", Some("other")),
    (
        "flashinfer::allreduce_fusion_kernel_oneshot_lamport",
        "comm",
        Some("allreduce"),
    ),
    (
        "flashinfer::allreduce_fusion_kernel_twoshot_sync",
        "comm",
        Some("allreduce"),
    ),
    ("ncclSymkDevKernel_AllReduce", "comm", Some("allreduce")),
    ("ncclDevKernel_AllReduce_Sum", "comm", Some("allreduce")),
    ("ncclDevKernel_AllGather", "comm", Some("allgather")),
    (
        "ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL",
        "comm",
        Some("reduce_scatter"),
    ),
    ("ncclDevKernel_Broadcast_RING_LL", "comm", Some("broadcast")),
    (
        "multimem_all_reduce_kernel<c10::BFloat16>",
        "comm",
        Some("allreduce"),
    ),
    ("vllm::custom_all_reduce", "comm", Some("allreduce")),
    (
        "allreduce_prototype_twoshot<__hip_bfloat16, aiter::CodecQ4, true>",
        "comm",
        Some("allreduce"),
    ),
    ("twoshotAllreduce", "comm", Some("allreduce")),
    (
        "void deep_ep::intranode::dispatch<8, 768, 8192>(int4*, float*)",
        "comm",
        Some("all_to_all"),
    ),
    (
        "void deep_ep::internode_ll::combine<false, 7168>(void*)",
        "comm",
        Some("all_to_all"),
    ),
    // MoE GEMMs
    ("fused_moe_kernel", "moe_gemm", None),
    ("moe_mxgemm_2lds", "moe_gemm", None),
    (
        "aiter::fmoe_bf16_blockscaleFp8_g1u1_vs_silu_1tg_ps_32x256",
        "moe_gemm",
        None,
    ),
    (
        "fmoe_bf16_blockscaleFp8_g1u1_vs_silu_1tg_ps_32x256",
        "moe_gemm",
        None,
    ),
    ("bmm_E2m1_E2m1E2m1_Fp32", "moe_gemm", None),
    ("bmm_Bfloat16_E2m1E2m1_Fp32", "moe_gemm", None),
    (
        "deep_gemm::sm90_m_grouped_fp8_gemm_masked_1d2d",
        "moe_gemm",
        None,
    ),
    // Dense GEMMs
    ("deep_gemm::sm90_fp8_gemm_1d2d", "dense_gemm", None),
    ("DeviceGemmFp4GemmSm100", "dense_gemm", None),
    ("nvjet_tst_64x32_64x16_2x1_2cta", "dense_gemm", None),
    ("nvjet_tst_48x64_64x15_4x1", "dense_gemm", None),
    ("nvjet_tst_64x32_64x16_2x2_2cta_h", "dense_gemm", None),
    ("aiter::_gemm_a8w8_blockscale", "dense_gemm", None),
    ("_gemm_afp4wfp4_kernel", "dense_gemm", None),
    ("_batched_gemm_a16wfp4_kernel", "dense_gemm", None),
    ("_gemm_a16_w16_atomic_kernel", "dense_gemm", None),
    ("gemm_a16w16", "dense_gemm", None),
    // Attention
    ("mla_a8w8_qh16_qseqlen1_gqaratio16_ps", "attention", None),
    ("aiter::mla_a16w8_qh16_m16x4_n16x1", "attention", None),
    ("kn_mla_reduce_v1", "attention", None),
    ("PrefillWithKVCacheKernel", "attention", None),
    ("BatchDecodeWithPagedKVCacheKernel", "attention", None),
    ("BatchPrefillWithPagedKVCacheKernel", "attention", None),
    (
        "fmhaSm100fKernel_QkvE4m3OBfloat16H64PagedKvDenseP64Sm100",
        "attention",
        None,
    ),
    // MoE routing
    ("moe_fused_gate_kernel", "moe_routing", None),
    ("count_and_sort_expert_tokens_kernel", "moe_routing", None),
    (
        "moe_sum_reduce_warp_per_token_vec_kernel",
        "moe_routing",
        None,
    ),
    ("finalizeKernelVecLoad", "moe_routing", None),
    ("moe_align_block_size_kernel", "moe_routing", None),
    ("grouped_topk_kernel", "moe_routing", None),
    ("ck_tile::MoeSortingKernel", "moe_routing", None),
    // Quantisation
    ("cvt_fp16_to_fp4", "quant", None),
    ("per_token_group_quant_8bit_kernel", "quant", None),
    ("sgl_per_token_group_quant_8bit", "quant", None),
    ("dynamic_per_token_scaled_fp8_quant_kernel", "quant", None),
    // Elementwise
    ("silu_and_mul_kernel", "elementwise", None),
    // Memcpy by name
    ("Memcpy DtoD (Device -> Device)", "memcpy", None),
    ("Memcpy HtoD (Pinned -> Device)", "memcpy", None),
    ("Memset (Device)", "memcpy", None),
];

fn check_cases(taxonomy: &Taxonomy, cases: &[(&str, &str, Option<&str>)]) -> Vec<String> {
    let mut failures = Vec::new();
    for &(name, category, collective) in cases {
        let class = taxonomy.classify(name);
        let got_collective = class.collective.map(Collective::key);
        if class.category.key() != category || got_collective != collective {
            failures.push(format!(
                "{name}: expected {category}/{collective:?}, got {}/{got_collective:?} ({:?})",
                class.category, class.note
            ));
        }
    }
    failures
}

#[test]
fn builtin_table_parses() {
    // `from_toml_str` compiles every regex now, as for a user's file: the built-in table
    // compiles its regexes on first use (`RulePattern`), so this is where a bad one shows.
    let rules = Taxonomy::from_toml_str(BUILTIN_RULES, BUILTIN_ORIGIN).expect("built-in table");
    assert!(rules.len() > 50);
    assert!(rules
        .iter()
        .all(|r| (r.category == Category::Comm) == r.collective.is_some()));
    // A rule without a note is named after its file and position; the built-in ones all say
    // what the kernel is instead.
    assert!(
        rules.iter().all(|r| r
            .note
            .as_deref()
            .is_some_and(|n| !n.starts_with(BUILTIN_ORIGIN))),
        "every built-in rule says what it is"
    );
}

#[test]
fn real_kernel_names_classify_as_expected() {
    let taxonomy = Taxonomy::builtin();
    let mut failures = check_cases(&taxonomy, TRACE_CASES);
    failures.extend(check_cases(&taxonomy, REFERENCE_CASES));
    assert!(
        failures.is_empty(),
        "{} misclassified:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(TRACE_CASES.len() + REFERENCE_CASES.len() >= 100);
}

#[test]
fn every_category_is_covered_by_the_table_test() {
    for category in Category::ALL {
        let covered = TRACE_CASES
            .iter()
            .chain(REFERENCE_CASES)
            .any(|&(_, key, _)| key == category.key());
        assert!(covered, "no case for {category}");
    }
}

/// B200 kernel names the table leaves in `other` on purpose. Empty: every kernel of that trace
/// has a rule.
const B200_EXPECTED_OTHER: &[&str] = &[];

#[test]
fn b200_trace_kernels_are_classified() {
    let text = include_str!("testdata/b200_kernel_names.txt");
    let taxonomy = Taxonomy::builtin();
    let names: Vec<&str> = text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .collect();
    assert!(names.len() >= 25);
    let unclassified: Vec<&str> = names
        .iter()
        .copied()
        .filter(|n| taxonomy.classify(n).category == Category::Other)
        .filter(|n| !B200_EXPECTED_OTHER.contains(n))
        .collect();
    assert!(unclassified.is_empty(), "unclassified: {unclassified:#?}");
}

#[test]
fn memcpy_and_memset_activities_are_memcpy_whatever_the_name() {
    let taxonomy = Taxonomy::builtin();
    for kind in [GpuKind::Memcpy, GpuKind::Memset] {
        assert_eq!(
            taxonomy
                .classify_activity(kind, "fused_moe_kernel")
                .category,
            Category::Memcpy
        );
    }
    assert_eq!(
        taxonomy
            .classify_activity(GpuKind::Kernel, "fused_moe_kernel")
            .category,
        Category::MoeGemm
    );
}

#[test]
fn hta_mode_counts_only_nccl_named_kernels_as_comm() {
    let hta = Taxonomy::hta_compatible();
    let gather = hta.classify("ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)");
    assert_eq!(gather.category, Category::Comm);
    assert_eq!(gather.collective, Some(Collective::Allgather));
    let custom = [
        "aiter::cross_device_reduce_2stage",
        "flashinfer::allreduce_fusion_kernel_oneshot_lamport",
        "void (anonymous namespace)::multimem_all_reduce_kernel<c10::BFloat16, 16>(c10::BFloat16*)",
        "rcclGenericKernel",
    ];
    for name in custom {
        let class = hta.classify(name);
        assert!(
            class.category.is_compute(),
            "{name} is {:?} under HTA",
            class.category
        );
        assert_eq!(class.collective, None);
    }
    assert_eq!(
        hta.classify("hipGenericCollective").category,
        Category::Comm
    );
    assert_eq!(
        hta.classify("hipGenericCollective").collective,
        Some(Collective::Other)
    );
    assert_eq!(hta.classify("fused_moe_kernel").category, Category::MoeGemm);
    assert_eq!(
        hta.classify("Memcpy DtoD (Device -> Device)").category,
        Category::Memcpy
    );
}

#[test]
fn classify_names_classifies_the_given_ids_once() {
    let mut names = NameTable::default();
    let nccl = names.intern("ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)");
    let op = names.intern("aten::mm");
    let moe = names.intern("fused_moe_kernel");
    let classes = Taxonomy::builtin().classify_names(&names, [nccl, moe, moe, 999]);
    assert_eq!(classes.get(nccl).map(|c| c.category), Some(Category::Comm));
    assert_eq!(
        classes.get(moe).map(|c| c.category),
        Some(Category::MoeGemm)
    );
    assert!(classes.get(op).is_none());
    assert!(classes.get(999).is_none());
    assert_eq!(
        classes.class_of(GpuKind::Kernel, op).category,
        Category::Other
    );
    assert_eq!(
        classes.class_of(GpuKind::Memset, nccl).category,
        Category::Memcpy
    );
}

#[test]
fn labels_and_keys_are_stable() {
    assert_eq!(Category::ALL.first(), Some(&Category::Comm));
    assert_eq!(Category::ALL.last(), Some(&Category::Other));
    assert_eq!(Category::MoeGemm.label(), "MoE GEMM");
    assert_eq!(Category::DenseGemm.label(), "Dense GEMM");
    assert_eq!(Category::Comm.label(), "Communication");
    for category in Category::ALL {
        assert_eq!(Category::from_key(category.key()), Some(category));
        let json = serde_json::to_string(&category).expect("serialises");
        assert_eq!(json, format!("\"{}\"", category.key()));
    }
    for collective in Collective::ALL {
        assert_eq!(Collective::from_key(collective.key()), Some(collective));
        assert!(!collective.label().is_empty());
    }
}

#[test]
fn user_rule_overrides_builtin() {
    let rules = Taxonomy::from_toml_str(
        r#"
        [[rule]]
        contains = "cross_device_reduce"
        category = "comm"
        collective = "all_to_all"
        note = "site override"

        [[rule]]
        regex = ['^mystery_kernel_\d+$', '^other_mystery']
        category = "attention"
        "#,
        "user.toml",
    )
    .expect("valid rules");
    let taxonomy = Taxonomy::builtin().with_rules(rules);
    let class = taxonomy.classify("aiter::cross_device_reduce_2stage");
    assert_eq!(class.collective, Some(Collective::AllToAll));
    assert_eq!(class.note.as_deref(), Some("site override"));
    assert_eq!(
        taxonomy.classify("mystery_kernel_42").category,
        Category::Attention
    );
    assert_eq!(
        Taxonomy::builtin().classify("mystery_kernel_42").category,
        Category::Other
    );
    // Builtin rules still apply after the user ones.
    assert_eq!(
        taxonomy.classify("fused_moe_kernel").category,
        Category::MoeGemm
    );
}

#[test]
fn rules_file_is_read_and_prepended() {
    let mut file = tempfile::NamedTempFile::new().expect("temp file");
    writeln!(file, "[[rule]]\nprefix = \"nvjet\"\ncategory = \"other\"").expect("write");
    let taxonomy = Taxonomy::builtin()
        .with_rules_file(file.path())
        .expect("valid file");
    assert_eq!(
        taxonomy.classify("nvjet_tst_64x32_64x16_2x1_2cta").category,
        Category::Other
    );
}

fn file_error(text: &str) -> String {
    let mut file = tempfile::NamedTempFile::new().expect("temp file");
    file.write_all(text.as_bytes()).expect("write");
    let err = Taxonomy::builtin()
        .with_rules_file(file.path())
        .expect_err("bad rules file");
    let message = err.to_string();
    let path = file.path().display().to_string();
    assert!(
        message.contains(&path),
        "message does not name the file: {message}"
    );
    message
}

#[test]
fn bad_rules_files_give_errors_that_name_the_file_and_rule() {
    let ok = "[[rule]]\ncontains = \"a\"\ncategory = \"norm\"\n";
    let cases = [
        (
            format!("{ok}[[rule]]\ncontains = \"x\"\ncategory = \"gemm\"\n"),
            vec!["rule 2", "unknown category `gemm`"],
        ),
        (
            "[[rule]]\nregex = \"(unclosed\"\ncategory = \"norm\"\n".to_string(),
            vec!["rule 1", "bad regex `(unclosed`"],
        ),
        (
            "[[rule]]\ncategory = \"norm\"\n".to_string(),
            vec!["rule 1", "no matcher"],
        ),
        (
            "[[rule]]\ncontains = \"a\"\nprefix = \"b\"\ncategory = \"norm\"\n".to_string(),
            vec!["more than one matcher"],
        ),
        (
            format!("{ok}[[rule]]\ncontain = \"x\"\ncategory = \"norm\"\n"),
            vec!["rule 2", "unknown field `contain`"],
        ),
        (
            "[[rule]]\ncontains = \"\"\ncategory = \"norm\"\n".to_string(),
            vec!["empty pattern"],
        ),
        (
            "[[rule]]\ncontains = \"a\"\ncategory = \"norm\"\ncollective = \"allreduce\"\n"
                .to_string(),
            vec!["only for comm rules"],
        ),
        (
            "[[rule]]\ncontains = \"a\"\ncategory = \"comm\"\ncollective = \"gossip\"\n"
                .to_string(),
            vec!["unknown collective `gossip`"],
        ),
        (
            "[[rule]]\ncontains = 3\ncategory = \"norm\"\n".to_string(),
            vec!["`contains` must be a string or an array of strings, not integer"],
        ),
        (
            "[[rules]]\ncontains = \"a\"\ncategory = \"norm\"\n".to_string(),
            vec!["unknown top-level key `rules`"],
        ),
        ("rule = 1\n".to_string(), vec!["array of tables"]),
        ("[[rule]\n".to_string(), vec!["not valid TOML"]),
    ];
    for (text, expected) in cases {
        let message = file_error(&text);
        for part in expected {
            assert!(message.contains(part), "`{message}` lacks `{part}`");
        }
    }
}

#[test]
fn missing_rules_file_names_the_path() {
    let err = Taxonomy::builtin()
        .with_rules_file(Path::new("/nonexistent/tracegate-rules.toml"))
        .expect_err("missing file");
    assert!(err
        .to_string()
        .contains("/nonexistent/tracegate-rules.toml"));
}

/// Names no rule lists one by one: the structure of the name decides (namespace, exchange scope
/// and step, cast shape, grouped GEMM, communication family).
const STRUCTURE_CASES: &[(&str, &str, Option<&str>)] = &[
    // EP all-to-all in any namespace: DeepEP forks, UCCL-EP, MoRI, an internal build.
    ("void deep_ep::internode::dispatch<true, 8, 8, 4>(int4*, float*, int*)", "comm", Some("all_to_all")),
    ("void my_ep::internode::notify_dispatch<8>(int const*, int*, int)", "comm", Some("all_to_all")),
    ("void uccl::intranode::cached_notify_dispatch<8>(int*, int)", "comm", Some("all_to_all")),
    ("void fork_ep::internode_ll::combine<false, 7168>(void*, int*)", "comm", Some("all_to_all")),
    ("void ep_v2::low_latency::dispatch<7168, 8>(void*, int*)", "comm", Some("all_to_all")),
    ("void ep_v2::internode_ll::clean_low_latency_buffer<256>(int*, int)", "comm", Some("all_to_all")),
    ("void ep::intranode::combine<__nv_bfloat16, 8, 768>(__nv_bfloat16*, float*)", "comm", Some("all_to_all")),
    ("void mori::moe::EpDispatchIntraNodeKernel<__hip_bfloat16>(mori::moe::EpDispatchCombineArgs<__hip_bfloat16>)", "comm", Some("all_to_all")),
    ("void mori::moe::EpCombineInterNodeKernel<__hip_bfloat16>(mori::moe::EpDispatchCombineArgs<__hip_bfloat16>)", "comm", Some("all_to_all")),
    ("void pplx::(anonymous namespace)::dispatchKernel<32>(int*)", "comm", Some("all_to_all")),
    ("void tensorrt_llm::kernels::moe_comm::moeA2ADispatchKernel<8>(int*)", "comm", Some("all_to_all")),
    // Mangled: demangled first, then the same rule.
    ("_ZN7myep_v29internode15notify_dispatchILi8EEEvPKiPii", "comm", Some("all_to_all")),
    // "dispatch" alone (a CUDA dispatch helper) is no exchange.
    ("void (anonymous namespace)::groupnorm_kernel_dispatch_up<__hip_bfloat16, 1024u>(unsigned int)", "norm", None),
    // NCCL / RCCL / NVSHMEM / symmetric-memory families.
    ("ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)", "comm", Some("reduce_scatter")),
    ("ncclSymkDevKernel_AllGather_LL(ncclSymkDevWorkArgs4K)", "comm", Some("allgather")),
    ("void nvshmemi_barrier_all_on_stream_kernel()", "comm", Some("other")),
    ("void nvshmemx_alltoall_kernel<int>(int*)", "comm", Some("all_to_all")),
    ("void c10d::symmetric_memory::barrier_kernel(unsigned int**, unsigned long, unsigned long, unsigned long)", "comm", Some("other")),
    ("void c10d::symmetric_memory::put_signal_kernel(unsigned int**, unsigned long, unsigned long)", "comm", Some("other")),
    ("void c10d::nvshmem_extension::allToAllV(void*, void*, long*, long, long)", "comm", Some("all_to_all")),
    ("void c10d::nvshmem_extension::exchangeSplitAndOffset(long*, int, int)", "comm", Some("other")),
    ("void mscclpp::allreduce_LL8<__nv_bfloat16>(__nv_bfloat16*, int)", "comm", Some("allreduce")),
    ("void mscclpp::reduce_scatter_fork<__nv_bfloat16>(__nv_bfloat16*, int)", "comm", Some("reduce_scatter")),
    ("void mscclpp::proxy_flush_kernel(int)", "comm", Some("other")),
    // Casts to FP8/FP4 by shape.
    ("void deep_gemm::per_token_cast_to_fp8_kernel<128>(float*, __nv_fp8_e4m3*, int)", "quant", None),
    ("per_channel_cast_to_fp8", "quant", None),
    ("void fork::per_block_cast_kernel<__nv_bfloat16>(__nv_bfloat16*, int)", "quant", None),
    ("_scaled_cast_to_mxfp4_kernel", "quant", None),
    ("void my_lib::act_quant_kernel<128>(__nv_bfloat16 const*, __nv_fp8_e4m3*)", "quant", None),
    // Grouped GEMMs are expert GEMMs.
    ("void deep_gemm::sm90_fp8_gemm_1d2d_impl<(cute::UMMA::Major)0, 7168u, 2048u, 64u, 128u, 128u, 132u, 1u, 8u, 1u, 1u, true, (deep_gemm::GemmType)2, false, cutlass::bfloat16_t>(float*, int*, unsigned int)", "moe_gemm", None),
    ("void deep_gemm::sm90_fp8_gemm_1d2d_impl<(cute::UMMA::Major)0, 7168u, 2048u, 64u, 128u, 128u, 132u, 1u, 8u, 1u, 1u, true, (deep_gemm::GemmType)0, false, cutlass::bfloat16_t>(float*, int*, unsigned int)", "dense_gemm", None),
    ("void deep_gemm_v3::m_grouped_fp8_gemm_nt_masked_kernel<128>(float*)", "moe_gemm", None),
    ("void cutlass::Kernel<cutlass::gemm::kernel::GemmGrouped<cutlass::gemm::threadblock::MmaMultistage<int>>>(int)", "moe_gemm", None),
    ("_grouped_mm_kernel", "moe_gemm", None),
    // cuDNN fused attention (scaled_dot_product_attention on PyTorch 2.11, H200).
    ("cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x128x128_4x1x1_cga1x1x1_kernel0_0", "attention", None),
    ("cudnn_generated_fort_native_sdpa_sm80_flash_fprop_wmma_f16_knob_35_16x128x128_1x4x1_cga1x1x1_kernel0_0", "attention", None),
    // fbgemm embeddings move rows: data movement, not `other`.
    ("void fbgemm_gpu::permute_2D_lengths_kernel<int>(int, int, int const*, int const*, int*)", "elementwise", None),
];

#[test]
fn structure_decides_names_no_rule_lists() {
    let failures = check_cases(&Taxonomy::builtin(), STRUCTURE_CASES);
    assert!(
        failures.is_empty(),
        "{} misclassified:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn rules_match_the_demangled_name_and_the_raw_one() {
    // The raw mangled name holds `24add_rmsnorm_quant_kernel`; `rms_?norm` matches both forms,
    // and a user rule written against the demangled namespace matches too.
    let mangled = "_ZN9acme_fork9rmsn_kernILi8EEEvPfi";
    assert_eq!(
        Taxonomy::builtin().classify(mangled).category,
        Category::Other
    );
    let rules = Taxonomy::from_toml_str(
        "[[rule]]\ncontains = \"acme_fork::rmsn_kern<\"\ncategory = \"norm\"\n",
        "test",
    )
    .unwrap();
    let taxonomy = Taxonomy::builtin().with_rules(rules);
    assert_eq!(taxonomy.classify(mangled).category, Category::Norm);
    // A rule written against the raw name keeps working.
    let rules = Taxonomy::from_toml_str(
        "[[rule]]\nprefix = \"_ZN9acme_fork\"\ncategory = \"quant\"\n",
        "test",
    )
    .unwrap();
    let taxonomy = Taxonomy::builtin().with_rules(rules);
    assert_eq!(taxonomy.classify(mangled).category, Category::Quant);
}

#[test]
fn tables_show_demangled_names() {
    assert_eq!(
        short_name("_ZN5aiter24add_rmsnorm_quant_kernelIDF16bDF16bLi64ELi8ELb0ELb0ELb1ELi1EEEvPT0_PT_PfS4_S4_S4_diiiiiiib")
            .split('<')
            .next(),
        Some("aiter::add_rmsnorm_quant_kernel")
    );
    assert_eq!(
        short_name("_ZN5aiter36mla_a8w8_qh16_qseqlen1_gqaratio16_psE"),
        "aiter::mla_a8w8_qh16_qseqlen1_gqaratio16_ps"
    );
}

/// Every name the tests know, and variants of each: upper and lower case, a `void ` head, a
/// build suffix, a non-ASCII letter that `(?i)` folds (`ſ`, the Kelvin sign).
fn prefilter_corpus() -> Vec<String> {
    let b200 = include_str!("testdata/b200_kernel_names.txt");
    let mut names: Vec<String> = TRACE_CASES
        .iter()
        .chain(REFERENCE_CASES)
        .chain(STRUCTURE_CASES)
        .map(|&(n, _, _)| n.to_string())
        .chain(
            b200.lines()
                .filter(|l| !l.starts_with('#') && !l.is_empty())
                .map(str::to_string),
        )
        .chain(
            crate::synth::scenario_names()
                .iter()
                .flat_map(|s| crate::synth::scenario_kernel_names(s).unwrap_or_default()),
        )
        .collect();
    let variants: Vec<String> = names
        .iter()
        .flat_map(|n| {
            [
                n.to_uppercase(),
                n.to_lowercase(),
                format!("void {n}"),
                format!("{n}_u12345"),
                n.replacen('s', "\u{17F}", 1),
                n.replacen('k', "\u{212A}", 1),
            ]
        })
        .collect();
    names.extend(variants);
    names.extend(
        [
            "",
            "x",
            "_Z",
            "ncclKernel",
            "hipMemcpy",
            "void ",
            "\u{212A}ernel",
        ]
        .map(String::from),
    );
    names
}

#[test]
fn the_prefilter_leaves_every_class_as_trying_every_rule_gives() {
    let user = Taxonomy::from_toml_str(
        r#"
        [[rule]]
        regex = '(?i)my_?fancy_?reduce'
        category = "comm"
        collective = "allreduce"
        [[rule]]
        regex = '^\w+$'
        category = "other"
        "#,
        "test",
    )
    .unwrap();
    let tables = [
        Taxonomy::builtin(),
        Taxonomy::hta_compatible(),
        Taxonomy::builtin().with_rules(user.clone()),
        Taxonomy::hta_compatible().with_rules(user),
    ];
    let names = prefilter_corpus();
    assert!(names.len() > 1000, "{}", names.len());
    for taxonomy in &tables {
        for name in &names {
            assert_eq!(
                taxonomy.classify(name),
                taxonomy.classify_unfiltered(name),
                "{name}"
            );
        }
    }
}
