package kineto

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/dcpsim/dcpsim/calib"
)

// nameInfo is what a kernel's name says beyond its class.
type nameInfo struct {
	class     Class
	precision string
	// collective is a collective kind from an NCCL kernel name ("" unknown).
	collective string
	// FlashAttention-2: the traits' head dim and block sizes, and the
	// Is_causal template argument; fa2Grid tells whether the grid is
	// (ceil(s/block), batch, heads) with block = blockM (forward) or blockN
	// (backward, sequence-k parallel).
	headDim, blockM, blockN int64
	causal                  Causality
	gridBlock               int64
}

var (
	reNCCL = regexp.MustCompile(`^(?:void\s+)?nccl(?:Dev)?Kernel_([A-Za-z0-9]+)`)
	reEP   = regexp.MustCompile(`deep_ep::(?:intranode|internode_ll|internode)::\w*(?:dispatch|combine)|` +
		`(?i:(?:^|[^a-z0-9_])(?:[a-z0-9]+_)*(?:moe|ep)(?:_[a-z0-9]+)*::(?:[a-z0-9_]+::)*[a-z0-9_]*(?:dispatch|combine))`)

	reAttnAux = regexp.MustCompile(`flash_bwd_dot_do_o_kernel|flash_bwd_convert_dq_kernel|flash_bwd_convert_dkv_kernel|` +
		`flash_bwd_clear_dkvaccum_kernel|flash_fwd_splitkv_combine_kernel|FlashAttnBwdPreprocess|FlashAttnBwdPostprocess|` +
		`flash_bwd_preprocess|flash_bwd_postprocess|clear_dQaccum|FlashAttnFwdCombine`)
	reFA2Fwd  = regexp.MustCompile(`\bflash_fwd_(?:splitkv_)?kernel<`)
	reFA2Bwd  = regexp.MustCompile(`\bflash_bwd_dq_dk_dv_loop_(?:seqk_parallel_|seqq_parallel_)?kernel<`)
	reAttnFwd = regexp.MustCompile(`flash::FlashAttnFwdSm\d+<|(?i:sdpa\w*fprop)|fmha_cutlassF|\battention_kernel_batched_impl<|fmha_\w*fwd`)
	reAttnBwd = regexp.MustCompile(`flash::FlashAttnBwdSm\d+<|(?i:sdpa\w*bprop)|fmha_cutlassB|\battention_kernel_backward_batched_impl<|fmha_\w*bwd`)
	reTraits  = regexp.MustCompile(`Flash_(?:fwd|bwd)_kernel_traits<(?:\(int\))?(\d+), (?:\(int\))?(\d+), (?:\(int\))?(\d+)`)

	reConv    = regexp.MustCompile(`(?i)implicit_?gemm|fprop|dgrad|wgrad|conv(?:olution|[123]d|_|$|[^a-z])|winograd|fft|scudnn`)
	reGEMM    = regexp.MustCompile(`(?i)gemm|gemv|nvjet_|triton_tem_\w*mm`)
	reFBGEMM  = regexp.MustCompile(`(?i)fbgemm`)
	reGrouped = regexp.MustCompile(`(?i)grouped_?gemm|gemm_?grouped|m_grouped|grouped_mm|mgrouped`)
	reNvjet   = regexp.MustCompile(`nvjet_(?:sm\d+_)?([a-z]+)_`)
	reFP8     = regexp.MustCompile(`(?i)e4m3|e5m2|fp8|f8f6f4|deep_gemm::`)
	reBF16    = regexp.MustCompile(`(?i)bf16|bfloat16`)
	reFP16    = regexp.MustCompile(`(?i)fp16|f16f16|half_t|__half|h\d{3,5}gemm|hgemm|_f16(?:_|$|[^a-z0-9])`)
	reTF32    = regexp.MustCompile(`(?i)tf32|s1688gemm|s884gemm`)
	reFP32    = regexp.MustCompile(`(?i)sgemm|gcgemm|cgemm|f32f32_f32f32|xmma_gemm_f32`)
	reFP64    = regexp.MustCompile(`(?i)dgemm|zgemm`)

	reMemory = regexp.MustCompile(`(?i)elementwise_kernel|reduce_kernel|CatArrayBatchedCopy|index_elementwise|indexSelect|` +
		`indexFunc|index_put|scatter_gather|softmax|cross_entropy|nll_loss|layer_?norm|rms_?norm|GammaBeta|RowwiseMoments|` +
		`batch_norm|cudnn::bn_|embedding|dropout|multi_tensor_apply|fused_adam|cuApplyRMSNorm|cuApplyLayerNorm|` +
		`cuComputeGradInput|cuComputePartGradGammaBeta|cuComputeGradGammaBeta|splitKreduce_kernel|epilogue::impl::globalKernel|` +
		`triton_(?:poi|red|per)_`)
	reTE = regexp.MustCompile(`transformer_engine::\S*(?i:norm|cast|transpose|dbias|gated|act|gelu|swiglu|quantize|amax|scale|permute|softmax|elementwise|multi_tensor)`)

	reBool = regexp.MustCompile(`^(?:true|false|\(bool\)[01]|[01])$`)
)

// classifyName classifies a kernel by its name alone.
func classifyName(name string) nameInfo {
	var in nameInfo
	switch {
	case reNCCL.MatchString(name):
		in.class = ClassCollective
		in.collective = ncclKind(reNCCL.FindStringSubmatch(name)[1])
		return in
	case reEP.MatchString(name):
		in.class = ClassEPDispatch
		return in
	case reAttnAux.MatchString(name):
		in.class = ClassAttentionAux
		return in
	case reFA2Fwd.MatchString(name):
		in.class = ClassAttentionFwd
		in.fa2(name, "flash_fwd_")
		return in
	case reFA2Bwd.MatchString(name):
		in.class = ClassAttentionBwd
		in.fa2(name, "flash_bwd_dq_dk_dv_loop_")
		return in
	case reAttnFwd.MatchString(name):
		in.class = ClassAttentionFwd
		in.precision = namePrecision(name)
		return in
	case reAttnBwd.MatchString(name):
		in.class = ClassAttentionBwd
		in.precision = namePrecision(name)
		return in
	}
	// fbgemm_gpu's embedding, permute and bucketize kernels are not GEMMs.
	if g := reFBGEMM.ReplaceAllString(name, ""); reGEMM.MatchString(g) && !reConv.MatchString(g) {
		in.precision = namePrecision(name)
		switch {
		case reGrouped.MatchString(name):
			in.class = ClassGroupedGEMM
		case in.precision == PrecisionFP8:
			in.class = ClassGEMMFP8
		default:
			in.class = ClassGEMM
		}
		return in
	}
	if reMemory.MatchString(name) || reTE.MatchString(name) {
		in.class = ClassMemoryBound
		return in
	}
	return in
}

// namePrecision is the data type a GEMM or attention kernel name states, ""
// when it says none.
func namePrecision(name string) string {
	if m := reNvjet.FindStringSubmatch(name); m != nil {
		switch t := m[1]; {
		case strings.ContainsAny(t, "qo"):
			return PrecisionFP8
		case t[0] == 'h':
			return PrecisionFP16
		case t[0] == 't':
			return PrecisionBF16
		case t[0] == 'd':
			return PrecisionFP64
		case strings.Trim(t, "s") == "":
			return PrecisionFP32
		}
		return ""
	}
	switch {
	case reFP8.MatchString(name):
		return PrecisionFP8
	case reBF16.MatchString(name):
		return PrecisionBF16
	case reFP16.MatchString(name):
		return PrecisionFP16
	case reTF32.MatchString(name):
		return PrecisionTF32
	case reFP64.MatchString(name):
		return PrecisionFP64
	case reFP32.MatchString(name):
		return PrecisionFP32
	}
	return ""
}

// fa2 reads a FlashAttention-2 kernel's traits (head dim, kBlockM, kBlockN),
// its precision and its Is_causal template argument (the second bool after
// the traits, in every FlashAttention-2 release's forward and backward
// kernels). prefix starts the kernel's own name.
func (in *nameInfo) fa2(name, prefix string) {
	in.precision = namePrecision(name)
	if m := reTraits.FindStringSubmatch(name); m != nil {
		in.headDim, _ = strconv.ParseInt(m[1], 10, 64)
		in.blockM, _ = strconv.ParseInt(m[2], 10, 64)
		in.blockN, _ = strconv.ParseInt(m[3], 10, 64)
		switch {
		case strings.Contains(name, "flash_fwd_kernel<"):
			in.gridBlock = in.blockM
		case strings.Contains(name, "seqk_parallel_kernel<"):
			in.gridBlock = in.blockN
		}
	}
	i := strings.Index(name, prefix)
	if i < 0 {
		return
	}
	j := strings.IndexByte(name[i:], '<')
	if j < 0 {
		return
	}
	args := templateArgs(name[i+j:])
	at := 2 // <Kernel_traits, Is_dropout, Is_causal, ...>
	if strings.HasPrefix(name[i:], "flash_fwd_splitkv_kernel<") {
		at = 1 // <Kernel_traits, Is_causal, ...>: no dropout
	}
	if len(args) > at && reBool.MatchString(args[at]) {
		if v := args[at]; v == "true" || v == "(bool)1" || v == "1" {
			in.causal = Causal
		} else {
			in.causal = NonCausal
		}
	}
}

// templateArgs splits the template argument list that s starts with ('<')
// into its top-level arguments, trimmed; nil if the list is not closed.
func templateArgs(s string) []string {
	if s == "" || s[0] != '<' {
		return nil
	}
	var args []string
	depth, start := 0, 1
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '<', '(', '[':
			depth++
		case '>', ')', ']':
			depth--
			if depth == 0 {
				return append(args, strings.TrimSpace(s[start:i]))
			}
		case ',':
			if depth == 1 {
				args = append(args, strings.TrimSpace(s[start:i]))
				start = i + 1
			}
		}
	}
	return nil
}

// ncclKind maps an NCCL kernel's function (AllReduce, ReduceScatter, ...) to
// a collective kind; "" for one it cannot name (Generic).
func ncclKind(fn string) string {
	switch strings.ToLower(fn) {
	case "allreduce":
		return calib.KindAllReduce
	case "allgather":
		return calib.KindAllGather
	case "reducescatter":
		return calib.KindReduceScatter
	case "sendrecv", "send", "recv":
		return calib.KindSendRecv
	case "alltoall":
		return calib.KindAllToAll
	case "broadcast":
		return "broadcast"
	case "reduce":
		return "reduce"
	}
	return ""
}

// collectiveKind maps a recorded "Collective name" (allreduce,
// _allgather_base, reduce_scatter_tensor_coalesced, all_to_all, send, ...)
// to a collective kind; "" when it names none (barrier, wait, ...).
func collectiveKind(name string) string {
	n := strings.ReplaceAll(strings.ToLower(name), "_", "")
	switch {
	case strings.Contains(n, "allreduce"):
		return calib.KindAllReduce
	case strings.Contains(n, "allgather"):
		return calib.KindAllGather
	case strings.Contains(n, "reducescatter"):
		return calib.KindReduceScatter
	case strings.Contains(n, "alltoall"):
		return calib.KindAllToAll
	case strings.Contains(n, "send") || strings.Contains(n, "recv"):
		return calib.KindSendRecv
	case strings.Contains(n, "broadcast"):
		return "broadcast"
	case n == "reduce":
		return "reduce"
	}
	return ""
}
