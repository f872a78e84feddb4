package calib

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Operation names of measurement rows, and the profile curve each one calibrates.
// The FLOPs or bus bytes of a row follow from its operation and shape as described
// in the package documentation ("Measurements").
const (
	// OpGEMM is one BF16 matrix product; it calibrates Profile.GEMM.
	OpGEMM = "gemm"
	// OpGEMMFP8 is one FP8 (E4M3) matrix product with a BF16 output; it
	// calibrates Profile.GEMMFP8 against PeakFP8FLOPs.
	OpGEMMFP8 = "gemm_fp8"
	// OpAttentionFwd is one attention forward pass; it calibrates Profile.AttentionFwd.
	OpAttentionFwd = "attention_fwd"
	// OpAttentionBwd is one attention backward pass; it calibrates Profile.AttentionBwd.
	OpAttentionBwd = "attention_bwd"
)

// Collective kinds: an operation is a kind plus "_intra" (ranks of one NVLink
// node; calibrates Profile.CollectiveIntra against NVLinkBytesPerSecond) or
// "_inter" (ranks across nodes, against NICBytesPerSecond: send_recv_inter
// calibrates Profile.SendRecvInter, all_to_all_inter Profile.AllToAllInter, the
// ring collectives Profile.CollectiveInter), e.g. "all_to_all_intra".
const (
	// KindAllToAll is an all-to-all of "bytes" bytes per rank.
	KindAllToAll = "all_to_all"
	// KindSendRecv is one ring step: every rank sends "bytes" bytes to its successor.
	KindSendRecv = "send_recv"
	// KindAllReduce is an all-reduce of a "bytes"-byte buffer.
	KindAllReduce = "all_reduce"
	// KindAllGather is an all-gather whose output buffer has "bytes" bytes.
	KindAllGather = "all_gather"
	// KindReduceScatter is a reduce-scatter whose input buffer has "bytes" bytes.
	KindReduceScatter = "reduce_scatter"
)

// Curve keys: the TOML keys of the profile's curves, as FitReport.Curve names them.
const (
	// CurveGEMM is Profile.GEMM.
	CurveGEMM = "gemm"
	// CurveGEMMFP8 is Profile.GEMMFP8 (optional).
	CurveGEMMFP8 = "gemm_fp8"
	// CurveAttentionFwd is Profile.AttentionFwd.
	CurveAttentionFwd = "attention_fwd"
	// CurveAttentionBwd is Profile.AttentionBwd.
	CurveAttentionBwd = "attention_bwd"
	// CurveAttentionFwdD256 is Profile.AttentionFwdD256.
	CurveAttentionFwdD256 = "attention_fwd_d256"
	// CurveAttentionBwdD256 is Profile.AttentionBwdD256.
	CurveAttentionBwdD256 = "attention_bwd_d256"
	// CurveAttentionFwdD192 is Profile.AttentionFwdD192 (optional).
	CurveAttentionFwdD192 = "attention_fwd_d192"
	// CurveAttentionBwdD192 is Profile.AttentionBwdD192 (optional).
	CurveAttentionBwdD192 = "attention_bwd_d192"
	// CurveCollectiveIntra is Profile.CollectiveIntra.
	CurveCollectiveIntra = "collective_intra"
	// CurveCollectiveInter is Profile.CollectiveInter.
	CurveCollectiveInter = "collective_inter"
	// CurveSendRecvInter is Profile.SendRecvInter.
	CurveSendRecvInter = "send_recv_inter"
	// CurveAllToAllInter is Profile.AllToAllInter.
	CurveAllToAllInter = "all_to_all_inter"
)

// curveKeys lists the curve keys in profile order.
var curveKeys = []string{CurveGEMM, CurveGEMMFP8, CurveAttentionFwd, CurveAttentionBwd, CurveAttentionFwdD256, CurveAttentionBwdD256,
	CurveAttentionFwdD192, CurveAttentionBwdD192,
	CurveCollectiveIntra, CurveCollectiveInter, CurveSendRecvInter, CurveAllToAllInter}

var collectiveKinds = []string{KindAllToAll, KindSendRecv, KindAllReduce, KindAllGather, KindReduceScatter}

// OperationNames returns every operation a measurements file may name, sorted.
func OperationNames() []string {
	names := []string{OpGEMM, OpGEMMFP8, OpAttentionFwd, OpAttentionBwd}
	for _, k := range collectiveKinds {
		names = append(names, k+"_intra", k+"_inter")
	}
	slices.Sort(names)
	return names
}

// point is one measurement reduced to what a curve fit needs: the curve it
// belongs to, its size x (tokens or bytes), its seconds, and its work (FLOPs or
// bus bytes) at 100% efficiency of the profile's peak or link bandwidth.
type point struct {
	curve   string
	size    float64
	seconds float64
	work    float64
}

// shapeReader reads the integer sizes of a shape, keeping the first error.
type shapeReader struct {
	shape map[string]int64
	err   error
}

// get returns shape[key] as a float, def when the key is absent and def >= 0; an
// absent key without a default, or a value below 1, records an error.
func (r *shapeReader) get(key string, def int64) float64 {
	v, ok := r.shape[key]
	switch {
	case !ok && def < 0:
		r.fail(fmt.Errorf("shape needs %q", key))
		return 0
	case !ok:
		return float64(def)
	case v < 1:
		r.fail(fmt.Errorf("shape %s = %d: must be >= 1", key, v))
		return 0
	}
	return float64(v)
}

func (r *shapeReader) fail(err error) {
	if r.err == nil {
		r.err = err
	}
}

// allow records an error for a key the operation does not know, so that a typo is
// not silently replaced by a default.
func (r *shapeReader) allow(allowed ...string) {
	for _, k := range slices.Sorted(maps.Keys(r.shape)) {
		if !slices.Contains(allowed, k) {
			slices.Sort(allowed)
			r.fail(fmt.Errorf("shape key %q unknown for this operation (known: %s)", k, strings.Join(allowed, ", ")))
			return
		}
	}
}

// AttentionCurves returns the forward and backward curves a measurement at
// head dim dqk calibrates: d_qk up to 128 the head-dim-128 curves (a model
// below 128 reads them), 192 the optional d192 ones, 256 the d256 ones. Other
// head dims are an error: no curve is read at exactly that d_qk, and a point
// between knots would be fitted as if it were at one.
func AttentionCurves(dqk float64) (fwd, bwd string, err error) {
	switch {
	case dqk <= 128:
		return CurveAttentionFwd, CurveAttentionBwd, nil
	case dqk == 192:
		return CurveAttentionFwdD192, CurveAttentionBwdD192, nil
	case dqk == 256:
		return CurveAttentionFwdD256, CurveAttentionBwdD256, nil
	}
	return CurveAttentionFwd, CurveAttentionBwd, fmt.Errorf("head dim (qk) %g: the attention curves are at d_qk <= 128, 192 and 256; a measurement at %g calibrates none of them", dqk, dqk)
}

// toPoint converts a measurement to a fit point, with the work its operation and
// shape imply (package documentation, "Measurements").
func toPoint(m Measurement) (point, error) {
	r := &shapeReader{shape: m.Shape}
	p := point{seconds: m.Seconds}
	switch op := m.Operation; op {
	case OpGEMM, OpGEMMFP8:
		r.allow("m", "n", "k", "batch")
		mm, n, k, b := r.get("m", -1), r.get("n", -1), r.get("k", -1), r.get("batch", 1)
		p.curve, p.work = CurveGEMM, 2*b*mm*n*k
		if op == OpGEMMFP8 {
			p.curve = CurveGEMMFP8
		}
		if r.err == nil {
			p.size = GEMMEffectiveSize(mm, n, k)
		}
	case OpAttentionFwd, OpAttentionBwd:
		r.allow("batch", "seq", "heads", "kv_heads", "head_dim", "head_dim_qk", "head_dim_v", "causal")
		b, s, h := r.get("batch", 1), r.get("seq", -1), r.get("heads", -1)
		_, hasD := m.Shape["head_dim"]
		_, hasQK := m.Shape["head_dim_qk"]
		_, hasV := m.Shape["head_dim_v"]
		var dqk, dv float64
		if hasD {
			if hasQK || hasV {
				r.fail(fmt.Errorf("shape has head_dim and head_dim_qk/head_dim_v: give one or the other"))
			}
			dqk = r.get("head_dim", -1)
			dv = dqk
		} else {
			dqk, dv = r.get("head_dim_qk", -1), r.get("head_dim_v", -1)
		}
		causal, ok := m.Shape["causal"]
		if !ok {
			causal = 1
		}
		if causal != 0 && causal != 1 {
			r.fail(fmt.Errorf("shape causal = %d: must be 0 or 1", causal))
		}
		fwd, bwd, err := AttentionCurves(dqk)
		if err != nil && r.err == nil {
			r.fail(err)
		}
		p.curve, p.size = fwd, s
		p.work = AttentionFwdFLOPs(b, s, h, dqk, dv, causal == 1)
		if op == OpAttentionBwd && r.err == nil {
			p.curve = bwd
			p.work *= (3*dqk + 2*dv) / (dqk + dv)
		}
	default:
		kind, inter, ok := splitCollective(op)
		if !ok {
			return point{}, fmt.Errorf("unknown operation %q (known: %s)", op, strings.Join(OperationNames(), ", "))
		}
		p.curve = CurveCollectiveIntra
		g := 0.0
		if inter {
			switch kind {
			case KindSendRecv:
				p.curve = CurveSendRecvInter
			case KindAllToAll:
				p.curve = CurveAllToAllInter
			default:
				p.curve = CurveCollectiveInter
			}
			r.allow("bytes", "ranks", "gpus_per_node")
			g = r.get("gpus_per_node", -1)
		} else {
			r.allow("bytes", "ranks")
		}
		p.size = r.get("bytes", -1)
		n := r.get("ranks", -1)
		if r.err == nil {
			var err error
			p.work, err = BusBytes(kind, inter, p.size, n, g)
			r.fail(err)
		}
	}
	if r.err != nil {
		return point{}, fmt.Errorf("%s: %w", m.Operation, r.err)
	}
	return p, nil
}

// splitCollective splits "all_to_all_inter" into ("all_to_all", true).
func splitCollective(op string) (kind string, inter, ok bool) {
	if kind, ok = strings.CutSuffix(op, "_intra"); !ok {
		kind, ok = strings.CutSuffix(op, "_inter")
		inter = true
	}
	return kind, inter, ok && slices.Contains(collectiveKinds, kind)
}

// AttentionFwdFLOPs is the forward FLOPs of an attention call on batch sequences
// of seq tokens with heads query heads: 2·batch·heads·seq²·(d_qk + d_v), halved
// when causal. With causal = true it equals job.Model.AttentionFwdFLOPs summed
// over the batch, and FlashAttention's benchmark convention 4·batch·seq²·heads·d/2
// when d_qk = d_v = d. The backward pass is (3·d_qk + 2·d_v)/(d_qk + d_v) times
// this (job.Model.AttentionBwdFactor; FlashAttention's 2.5).
func AttentionFwdFLOPs(batch, seq, heads, headDimQK, headDimV float64, causal bool) float64 {
	f := 2 * batch * heads * seq * seq * (headDimQK + headDimV)
	if causal {
		f /= 2
	}
	return f
}

// BusBytes is the bytes one rank moves over its bottleneck link in a collective
// of the given kind with bytes bytes per rank among ranks ranks: over NVLink when
// inter is false, over its one NIC when inter is true (gpusPerNode GPUs per node,
// ranks/gpusPerNode nodes, NCCL's ring over all the ranks, its channels leaving
// each node through the node's gpusPerNode NICs). Dividing by the measured
// seconds gives the achieved bus bandwidth, and by the profile's link bandwidth the
// efficiency η:
//
//	kind            intra (n ranks)   inter (k = n/g nodes, one NIC per GPU)
//	all_reduce      2(n−1)/n·S        2(n−1)/n·S/g   (the ring's bytes, 1/g of them on each NIC)
//	all_gather      (n−1)/n·S         (n−1)/n·S/g
//	reduce_scatter  (n−1)/n·S         (n−1)/n·S/g
//	all_to_all      (n−1)/n·S         (n−g)/n·S      (the off-node share, one NIC; costmodel §5.4)
//	send_recv       S                 S
//
// The intra factors are nccl-tests' busbw factors [R28]; the inter ones are the
// same over g NICs (so a ring across nodes at g NICs' rate shows g·B_nic of
// busbw, as nccl-tests measures it) and costmodel §5.4 for the all-to-all. It returns an error for an unknown kind, fewer than 2 ranks,
// or (inter) ranks not a multiple of gpusPerNode or fewer than 2 nodes.
func BusBytes(kind string, inter bool, bytes, ranks, gpusPerNode float64) (float64, error) {
	n := ranks
	if n < 2 {
		return 0, fmt.Errorf("ranks = %v: a collective needs at least 2", n)
	}
	if !inter {
		switch kind {
		case KindAllReduce:
			return 2 * (n - 1) / n * bytes, nil
		case KindAllGather, KindReduceScatter, KindAllToAll:
			return (n - 1) / n * bytes, nil
		case KindSendRecv:
			return bytes, nil
		}
		return 0, fmt.Errorf("unknown collective %q (known: %s)", kind, strings.Join(collectiveKinds, ", "))
	}
	g := gpusPerNode
	if g < 1 || int64(n)%int64(g) != 0 || n/g < 2 {
		return 0, fmt.Errorf("ranks = %v, gpus_per_node = %v: an inter-node collective needs ranks a multiple of gpus_per_node over at least 2 nodes", n, g)
	}
	switch kind {
	case KindAllReduce:
		return 2 * (n - 1) / n * bytes / g, nil
	case KindAllGather, KindReduceScatter:
		return (n - 1) / n * bytes / g, nil
	case KindAllToAll:
		return (n - g) / n * bytes, nil
	case KindSendRecv:
		return bytes, nil
	}
	return 0, fmt.Errorf("unknown collective %q (known: %s)", kind, strings.Join(collectiveKinds, ", "))
}
