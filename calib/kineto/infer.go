package kineto

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/dcpsim/dcpsim/calib"
)

// Reasons a kernel is not fitted or priced (Kernel.Why).
const (
	whyShapeNotRecorded  = "shape not recorded (record_shapes=False, or no op with the product's Input Dims launched it)"
	whyAttnNotRecorded   = "shape not recorded (record_shapes=False, or no attention op with Input Dims launched it)"
	whyGrouped           = "grouped GEMM: per-group shapes not recorded; not fitted or priced"
	whyPrecisionUnknown  = "GEMM precision unknown (neither the kernel name nor the op's Input type says); not fitted or priced"
	whyNonCausal         = "non-causal attention: the cost model prices causal attention only; not fitted or priced"
	whyCausalUnknown     = "causal mask not recorded (no Concrete Inputs, no Is_causal in the kernel name); not fitted or priced"
	whyVarlen            = "varlen: sequence lengths not recorded; not fitted or priced"
	whyCommNotRecorded   = "collective parameters not recorded (PyTorch >= 2.3 records Collective name, In msg nelems, Group size)"
	whyMemNotRecorded    = "bytes not recorded (record_shapes=False, or no op with Input Dims launched it)"
	whyMemListInput      = "an input is a tensor list: bytes not recorded"
	whyMemNoTensorInputs = "no tensor inputs recorded: bytes unknown"
)

// gemmKind is how an op's inputs hold a product.
type gemmKind int

const (
	gemmMM      gemmKind = iota + 1 // [m,k], [k,n]
	gemmAddMM                       // bias, [m,k], [k,n]
	gemmBMM                         // [b,m,k], [b,k,n]
	gemmBAddBMM                     // self, [b,m,k], [b,k,n]
	gemmMatmul                      // [...,m,k], [k,n] or batched
	gemmLinear                      // [...,k], weight [n,k]
	gemmMV                          // [m,k], [k]
	gemmAddMV                       // self, [m,k], [k]
)

// gemmOps are the ops whose Input Dims give a GEMM's product.
var gemmOps = map[string]gemmKind{
	"aten::mm": gemmMM, "aten::_scaled_mm": gemmMM, "aten::addmm": gemmAddMM, "aten::_addmm_activation": gemmAddMM,
	"aten::bmm": gemmBMM, "aten::baddbmm": gemmBAddBMM, "aten::matmul": gemmMatmul, "aten::linear": gemmLinear,
	"aten::mv": gemmMV, "aten::addmv": gemmAddMV,
}

// attnLayout is how q, k and v hold their sizes.
type attnLayout int

const (
	layoutBHSD attnLayout = iota // [batch, heads, seq, head_dim] (torch SDPA)
	layoutBSHD                   // [batch, seq, heads, head_dim] (flash_attn, aten::_flash_attention_forward)
)

// attnOp says where an attention op records q, k, v and the mask.
type attnOp struct {
	backward bool
	layout   attnLayout
	q, k, v  int
	// causal is the Concrete Inputs index of is_causal/causal, maskType that
	// of custom_mask_type (0 none, 1 and 2 causal), cuSeq that of
	// cu_seqlens_q (a recorded tensor there means varlen); -1 when the op
	// has none.
	causal, maskType, cuSeq int
	varlen                  bool
}

// attnOps are the attention ops whose Input Dims give the shape
// (argument positions from the ops' schemas).
var attnOps = map[string]attnOp{
	"aten::scaled_dot_product_attention":                     {layout: layoutBHSD, q: 0, k: 1, v: 2, causal: 5, maskType: -1, cuSeq: -1},
	"aten::_scaled_dot_product_flash_attention":              {layout: layoutBHSD, q: 0, k: 1, v: 2, causal: 4, maskType: -1, cuSeq: -1},
	"aten::_scaled_dot_product_cudnn_attention":              {layout: layoutBHSD, q: 0, k: 1, v: 2, causal: 6, maskType: -1, cuSeq: -1},
	"aten::_scaled_dot_product_efficient_attention":          {layout: layoutBHSD, q: 0, k: 1, v: 2, causal: 6, maskType: -1, cuSeq: -1},
	"aten::_flash_attention_forward":                         {layout: layoutBSHD, q: 0, k: 1, v: 2, causal: 8, maskType: -1, cuSeq: 3},
	"aten::_efficient_attention_forward":                     {layout: layoutBSHD, q: 0, k: 1, v: 2, causal: -1, maskType: 9, cuSeq: 4},
	"flash_attn::_flash_attn_forward":                        {layout: layoutBSHD, q: 0, k: 1, v: 2, causal: 5, maskType: -1, cuSeq: -1},
	"flash_attn::_flash_attn_varlen_forward":                 {layout: layoutBSHD, q: 0, k: 1, v: 2, causal: -1, maskType: -1, cuSeq: -1, varlen: true},
	"FlashAttnFunc":                                          {layout: layoutBSHD, q: 0, k: 1, v: 2, causal: -1, maskType: -1, cuSeq: -1},
	"flash_attn_func":                                        {layout: layoutBSHD, q: 0, k: 1, v: 2, causal: -1, maskType: -1, cuSeq: -1},
	"FlashAttnVarlenFunc":                                    {layout: layoutBSHD, q: 0, k: 1, v: 2, causal: -1, maskType: -1, cuSeq: -1, varlen: true},
	"flash_attn_varlen_func":                                 {layout: layoutBSHD, q: 0, k: 1, v: 2, causal: -1, maskType: -1, cuSeq: -1, varlen: true},
	"aten::_scaled_dot_product_flash_attention_backward":     {backward: true, layout: layoutBHSD, q: 1, k: 2, v: 3, causal: 11, maskType: -1, cuSeq: -1},
	"aten::_scaled_dot_product_efficient_attention_backward": {backward: true, layout: layoutBHSD, q: 1, k: 2, v: 3, causal: 11, maskType: -1, cuSeq: -1},
	"aten::_scaled_dot_product_cudnn_attention_backward":     {backward: true, layout: layoutBHSD, q: 1, k: 2, v: 3, causal: 14, maskType: -1, cuSeq: -1},
	"aten::_flash_attention_backward":                        {backward: true, layout: layoutBSHD, q: 1, k: 2, v: 3, causal: 11, maskType: -1, cuSeq: 6},
	"aten::_efficient_attention_backward":                    {backward: true, layout: layoutBSHD, q: 1, k: 2, v: 3, causal: -1, maskType: 14, cuSeq: 6},
	"flash_attn::_flash_attn_backward":                       {backward: true, layout: layoutBSHD, q: 1, k: 2, v: 3, causal: 11, maskType: -1, cuSeq: -1},
	"flash_attn::_flash_attn_varlen_backward":                {backward: true, layout: layoutBSHD, q: 1, k: 2, v: 3, causal: -1, maskType: -1, cuSeq: -1, varlen: true},
}

// dtypeBytes are the element sizes of the dtypes ops (Input type) and
// collectives (dtype) record.
var dtypeBytes = map[string]int64{
	"c10::BFloat16": 2, "c10::Half": 2, "float": 4, "double": 8, "long": 8, "long int": 8, "int64_t": 8,
	"int": 4, "unsigned int": 4, "short": 2, "short int": 2, "signed char": 1, "unsigned char": 1, "bool": 1,
	"c10::Float8_e4m3fn": 1, "c10::Float8_e5m2": 1, "c10::Float8_e4m3fnuz": 1, "c10::Float8_e5m2fnuz": 1,
	"c10::Float8_e8m0fnu": 1, "c10::complex<float>": 8, "c10::complex<double>": 16, "c10::complex<c10::Half>": 4,
	"Float": 4, "BFloat16": 2, "Half": 2, "Double": 8, "Long": 8, "Int": 4, "Short": 2, "Byte": 1, "Char": 1,
	"Bool": 1, "Float8_e4m3fn": 1, "Float8_e5m2": 1,
}

// dtypePrecision maps a recorded Input type to a precision, "" if none.
func dtypePrecision(t string) string {
	switch t {
	case "c10::BFloat16", "BFloat16":
		return PrecisionBF16
	case "c10::Half", "Half":
		return PrecisionFP16
	case "float", "Float":
		return PrecisionFP32
	case "double", "Double":
		return PrecisionFP64
	}
	if strings.Contains(t, "Float8") {
		return PrecisionFP8
	}
	return ""
}

// precision combines what the kernel name says with the op's recorded
// Input type: the op's dtype when the name says nothing, or says 16 bits
// (cuDNN writes f16 for bf16 too) and the op recorded bf16 or fp16; else
// the name (a float op runs tf32 kernels when TF32 is allowed).
func precision(fromName, dtype string) string {
	op := dtypePrecision(dtype)
	half := func(p string) bool { return p == PrecisionBF16 || p == PrecisionFP16 }
	if op != "" && (fromName == "" || half(fromName) && half(op)) {
		return op
	}
	return fromName
}

// maxSize bounds any one size read from a trace.
const maxSize = 1 << 40

// infer classifies every kernel and infers its shape.
func (p *parser) infer() {
	p.names = map[string]nameInfo{}
	p.seqFwd = map[int64]int32{}
	for i := range p.ops {
		o := &p.ops[i]
		if spec, ok := attnOps[o.name]; ok && !spec.backward && o.seq >= 0 && o.info >= 0 {
			if _, dup := p.seqFwd[o.seq]; !dup {
				p.seqFwd[o.seq] = int32(i)
			}
		}
	}
	p.out = make([]Kernel, len(p.kernels))
	for i := range p.kernels {
		p.inferKernel(&p.kernels[i], &p.out[i])
	}
}

// finish sorts the kernels by start and fills the trace.
func (p *parser) finish() *Trace {
	idx := make([]int32, len(p.out)) // len <= MaxTraceKernels
	for i := range idx {
		idx[i] = int32(i)
	}
	slices.SortStableFunc(idx, func(a, b int32) int { return cmp.Compare(p.kernels[a].start, p.kernels[b].start) })
	// What the kernels were inferred from is not needed any more; the
	// kernels are put in order in place (out[i] = out[idx[i]], cycle by
	// cycle), so the trace holds one copy of them.
	p.kernels, p.ops, p.infos, p.runtimes, p.order, p.byExt = nil, nil, nil, nil, nil, nil
	out := p.out
	for i := range idx {
		if idx[i] == int32(i) {
			continue
		}
		tmp, j := out[i], int32(i)
		for {
			k := idx[j]
			idx[j] = j
			if k == int32(i) {
				out[j] = tmp
				break
			}
			out[j] = out[k]
			j = k
		}
	}
	p.t.Kernels, p.out = out, nil
	p.t.Steps = len(p.steps)
	if p.t.Steps == 0 {
		p.t.Steps = len(p.gpuSteps)
	}
	return p.t
}

// inferKernel fills out for k.
func (p *parser) inferKernel(k *rawKernel, out *Kernel) {
	*out = Kernel{Name: k.name, StartMicros: k.micros, Seconds: k.durMicros * 1e-6, Device: k.device, Stream: k.stream,
		Grid: k.grid, Block: k.block}
	if k.op >= 0 {
		out.Op = p.ops[k.op].name
	}
	if k.cat != ClassUnknown {
		out.Class = k.cat
		out.Shape.Bytes = k.bytes
		return
	}
	in, ok := p.names[k.name]
	if !ok {
		in = classifyName(k.name)
		p.names[k.name] = in
	}
	out.Class, out.Precision = in.class, in.precision
	switch in.class {
	case ClassCollective:
		p.inferComm(k, in, out)
	case ClassGEMM, ClassGEMMFP8, ClassGroupedGEMM:
		p.inferGEMM(k, out)
	case ClassAttentionFwd, ClassAttentionBwd:
		p.inferAttention(k, in, out)
	case ClassMemoryBound:
		p.inferMemory(k, out)
	}
}

// ancestors calls f on op and its ancestors, innermost first, until f
// returns false.
func (p *parser) ancestors(op int32, f func(c int32, o *cpuOp) bool) {
	for depth := 0; op >= 0 && depth < maxWalk; depth++ {
		if !f(op, &p.ops[op]) {
			return
		}
		op = p.ops[op].parent
	}
}

// inferGEMM reads a GEMM's product from the nearest GEMM op at or above the
// launching op.
func (p *parser) inferGEMM(k *rawKernel, out *Kernel) {
	var sh Shape
	var dtype, why string
	found := false
	why = whyShapeNotRecorded
	p.ancestors(k.op, func(c int32, o *cpuOp) bool {
		if _, ok := attnOps[o.name]; ok {
			return false // a GEMM inside attention is not the op's product
		}
		kind, ok := gemmOps[o.name]
		if !ok || o.info < 0 || p.infos[o.info].inputs == nil {
			return true
		}
		sh, dtype, why = gemmFromInputs(kind, p.infos[o.info].inputs)
		if why == "" {
			found = true
			out.ShapeOp = o.name
		} else {
			why = o.name + ": " + why
		}
		return false
	})
	out.Precision = precision(out.Precision, dtype)
	if out.Class == ClassGEMM && out.Precision == PrecisionFP8 {
		out.Class = ClassGEMMFP8
	}
	if found {
		out.Shape = sh
	}
	switch {
	case out.Class == ClassGroupedGEMM:
		out.Shape, out.ShapeOp = Shape{}, ""
		out.Why = whyGrouped
	case out.Class == ClassGEMMFP8:
		if !found {
			out.Why = why
		}
	case out.Precision == PrecisionFP32 || out.Precision == PrecisionTF32 || out.Precision == PrecisionFP64:
		out.Why = out.Precision + " GEMM: the cost model is BF16; not fitted or priced"
	case out.Precision == "":
		out.Why = whyPrecisionUnknown
	case !found:
		out.Why = why
	}
}

// gemmFromInputs reads the product of a GEMM op from its inputs; why is
// non-empty when they do not give one.
func gemmFromInputs(kind gemmKind, in []input) (Shape, string, string) {
	mat := func(i int) []int64 {
		if i < len(in) && in[i].tensor {
			return in[i].dims
		}
		return nil
	}
	off := 0
	switch kind {
	case gemmAddMM, gemmBAddBMM, gemmAddMV:
		off = 1
	}
	a, b := mat(off), mat(off+1)
	dtype := ""
	if off < len(in) {
		dtype = in[off].dtype
	}
	bad := func() (Shape, string, string) {
		return Shape{}, "", fmt.Sprintf("inputs %v and %v: not a product this reader derives", a, b)
	}
	var s Shape
	switch kind {
	case gemmMM, gemmAddMM:
		if len(a) != 2 || len(b) != 2 || a[1] != b[0] {
			return bad()
		}
		s = Shape{M: a[0], K: a[1], N: b[1]}
	case gemmBMM, gemmBAddBMM:
		if len(a) != 3 || len(b) != 3 || a[0] != b[0] || a[2] != b[1] {
			return bad()
		}
		s = Shape{Batch: a[0], M: a[1], K: a[2], N: b[2]}
	case gemmMV, gemmAddMV:
		if len(a) != 2 || len(b) != 1 || a[1] != b[0] {
			return bad()
		}
		s = Shape{M: a[0], K: a[1], N: 1}
	case gemmLinear, gemmMatmul:
		if len(a) < 1 {
			return bad()
		}
		switch {
		case kind == gemmLinear && len(b) == 2 && b[1] == a[len(a)-1]:
			s = Shape{K: b[1], N: b[0]}
		case kind == gemmMatmul && len(a) >= 2 && len(b) == 2 && b[0] == a[len(a)-1]:
			s = Shape{K: b[0], N: b[1]}
		case kind == gemmMatmul && len(a) == 3 && len(b) == 3 && a[0] == b[0] && a[2] == b[1]:
			s = Shape{Batch: a[0], M: a[1], K: a[2], N: b[2]}
		default:
			return bad()
		}
		if s.M == 0 {
			s.M = 1
			for _, d := range a[:len(a)-1] {
				if d < 1 || d > maxSize || s.M > maxSize/d {
					return bad()
				}
				s.M *= d
			}
		}
	}
	if s.Batch == 0 {
		s.Batch = 1
	}
	for _, v := range []int64{s.M, s.N, s.K, s.Batch} {
		if v < 1 || v > maxSize {
			return Shape{}, "", fmt.Sprintf("inputs %v and %v: an empty or oversized product", a, b)
		}
	}
	return s, dtype, ""
}

// inferAttention reads an attention kernel's shape from the nearest
// attention op of its direction at or above the launching op, else (a
// backward) from the forward op with the backward node's sequence number,
// else from a FlashAttention-2 kernel's grid (an upper bound, never fitted).
func (p *parser) inferAttention(k *rawKernel, in nameInfo, out *Kernel) {
	backward := out.Class == ClassAttentionBwd
	var sh Shape
	var dtype string
	why := whyAttnNotRecorded
	found := false
	read := func(o *cpuOp, spec attnOp) {
		sh, dtype, why = attnFromInputs(spec, &p.infos[o.info])
		found = why == ""
		if !found {
			why = o.name + ": " + why
		}
		out.ShapeOp = o.name
	}
	done := false
	p.ancestors(k.op, func(c int32, o *cpuOp) bool {
		if spec, ok := attnOps[o.name]; ok && spec.backward == backward && o.info >= 0 && p.infos[o.info].inputs != nil {
			read(o, spec)
			done = true
			return false
		}
		return true
	})
	if !done && backward {
		p.ancestors(k.op, func(c int32, o *cpuOp) bool {
			if o.seq < 0 || !strings.Contains(o.name, "Backward") {
				return true
			}
			if f, ok := p.seqFwd[o.seq]; ok {
				fo := &p.ops[f]
				read(fo, attnOps[fo.name])
				out.ShapeOp = fo.name + " (forward, by sequence number)"
				done = true
			}
			return false
		})
	}
	if !done && in.gridBlock > 0 && in.headDim > 0 && k.grid[0] > 0 && k.grid[1] > 0 && k.grid[2] > 0 {
		sh = Shape{Seq: int64(k.grid[0]) * in.gridBlock, SeqUpperBound: true, Batch: int64(k.grid[1]), Heads: int64(k.grid[2]),
			HeadDimQK: in.headDim, HeadDimV: in.headDim}
		why = fmt.Sprintf("shape from the kernel grid: seq <= %d (ceil(seq/%d) blocks only bound it); not fitted or priced",
			sh.Seq, in.gridBlock)
		found = true
	}
	if !found {
		out.Why = why
		out.ShapeOp = ""
		return
	}
	if sh.Causal == CausalUnknown {
		sh.Causal = in.causal
	}
	out.Shape = sh
	out.Precision = precision(out.Precision, dtype)
	switch {
	case sh.SeqUpperBound:
		out.Why = why
	case sh.Causal == NonCausal:
		out.Why = whyNonCausal
	case sh.Causal == CausalUnknown:
		out.Why = whyCausalUnknown
	case out.Precision == PrecisionFP8 || out.Precision == PrecisionFP32 || out.Precision == PrecisionFP64:
		out.Why = out.Precision + " attention: the profile's attention curves are BF16; not fitted or priced"
	}
}

// attnFromInputs reads q, k, v and the mask of an attention op.
func attnFromInputs(spec attnOp, info *opInfo) (Shape, string, string) {
	if spec.varlen {
		return Shape{}, "", whyVarlen
	}
	in := info.inputs
	t := func(i int) []int64 {
		if i >= 0 && i < len(in) && in[i].tensor {
			return in[i].dims
		}
		return nil
	}
	if cu := t(spec.cuSeq); len(cu) > 0 {
		return Shape{}, "", whyVarlen
	}
	q, kk, v := t(spec.q), t(spec.k), t(spec.v)
	if len(q) == 3 {
		return Shape{}, "", whyVarlen
	}
	if len(q) != 4 || len(kk) != 4 || len(v) != 4 {
		return Shape{}, "", fmt.Sprintf("q %v, k %v, v %v: not 4-d: shape not derived", q, kk, v)
	}
	for _, d := range [][]int64{q, kk, v} {
		for _, x := range d {
			if x < 1 || x > maxSize {
				return Shape{}, "", fmt.Sprintf("q %v, k %v, v %v: an empty or oversized size", q, kk, v)
			}
		}
	}
	var s Shape
	var seqK int64
	switch spec.layout {
	case layoutBHSD:
		s = Shape{Batch: q[0], Heads: q[1], Seq: q[2], HeadDimQK: q[3], KVHeads: kk[1], HeadDimV: v[3]}
		seqK = kk[2]
	default:
		s = Shape{Batch: q[0], Seq: q[1], Heads: q[2], HeadDimQK: q[3], KVHeads: kk[2], HeadDimV: v[3]}
		seqK = kk[1]
	}
	if seqK != s.Seq {
		return Shape{}, "", fmt.Sprintf("seq_q %d != seq_k %d (cross or cached attention): not fitted or priced", s.Seq, seqK)
	}
	c := info.concrete
	if spec.causal >= 0 && spec.causal < len(c) {
		switch strings.ToLower(c[spec.causal]) {
		case "true", "1":
			s.Causal = Causal
		case "false", "0":
			s.Causal = NonCausal
		}
	}
	if spec.maskType >= 0 && spec.maskType < len(c) {
		switch c[spec.maskType] {
		case "0":
			s.Causal = NonCausal
		case "1", "2":
			s.Causal = Causal
		}
	}
	dtype := ""
	if spec.q < len(in) {
		dtype = in[spec.q].dtype
	}
	return s, dtype, ""
}

// inferComm reads a collective's kind, bytes per rank and ranks from the
// kernel's own args (PyTorch >= 2.3) or the nearest op above it that
// recorded them (record_param_comms).
func (p *parser) inferComm(k *rawKernel, in nameInfo, out *Kernel) {
	ci := k.comm
	annotated := ""
	p.ancestors(k.op, func(c int32, o *cpuOp) bool {
		if ci == nil && o.info >= 0 && p.infos[o.info].comm != nil {
			ci = p.infos[o.info].comm
		}
		if rest, ok := strings.CutPrefix(o.name, "nccl:"); ok && annotated == "" {
			annotated = collectiveKind(rest)
		}
		return ci == nil
	})
	kind := ""
	if ci != nil {
		kind = collectiveKind(ci.name)
	}
	for _, alt := range []string{annotated, in.collective} {
		if kind == "" {
			kind = alt
		}
	}
	out.Shape.Collective = kind
	if ci == nil || ci.inNelems <= 0 || ci.inNelems > maxSize {
		out.Why = whyCommNotRecorded
		return
	}
	size, ok := dtypeBytes[ci.dtype]
	if !ok {
		out.Why = fmt.Sprintf("collective dtype %q unknown: bytes not derived", ci.dtype)
		return
	}
	out.Shape.Ranks = ci.groupSize
	out.Shape.Bytes = ci.inNelems * size
	if kind == calib.KindAllGather && ci.groupSize > 0 && ci.groupSize < 1<<20 {
		out.Shape.Bytes *= ci.groupSize
	}
}

// inferMemory reads a memory-bound kernel's bytes from the op that launched
// it, when that op launched it alone: the sum of its tensor inputs' bytes
// plus an output estimated as its largest input.
func (p *parser) inferMemory(k *rawKernel, out *Kernel) {
	if k.op < 0 {
		out.Why = whyMemNotRecorded
		return
	}
	o := &p.ops[k.op]
	if _, ok := gemmOps[o.name]; ok {
		out.Why = "launched by " + o.name + ": bytes not recorded"
		return
	}
	if _, ok := attnOps[o.name]; ok {
		out.Why = "launched by " + o.name + ": bytes not recorded"
		return
	}
	if o.kernels > 1 {
		out.Why = fmt.Sprintf("%s launched %d kernels: bytes not attributable to one", o.name, o.kernels)
		return
	}
	if o.info < 0 || p.infos[o.info].inputs == nil {
		out.Why = whyMemNotRecorded
		return
	}
	b, why := memoryBytes(p.infos[o.info].inputs)
	if why != "" {
		out.Why = why
		return
	}
	out.Shape.Bytes = b
	out.ShapeOp = o.name
}

// memoryBytes is Σ inputs' bytes + the largest input's (the output
// estimate); why is non-empty when the inputs do not give it.
func memoryBytes(in []input) (int64, string) {
	var sum, largest int64
	for i, x := range in {
		if x.list {
			return 0, whyMemListInput
		}
		if !x.tensor {
			continue
		}
		size, ok := dtypeBytes[x.dtype]
		if !ok {
			if len(x.dims) == 0 {
				continue // a scalar argument
			}
			return 0, fmt.Sprintf("input %d's dtype %q unknown: bytes not derived", i, x.dtype)
		}
		n := size
		for _, d := range x.dims {
			if d < 0 || d > maxSize || (d > 0 && n > maxSize/d) {
				return 0, fmt.Sprintf("input %d's dims %v: oversized", i, x.dims)
			}
			n *= d
		}
		sum += n
		largest = max(largest, n)
		if sum > maxSize {
			return 0, "inputs oversized"
		}
	}
	if sum == 0 {
		return 0, whyMemNoTensorInputs
	}
	return sum + largest, ""
}
