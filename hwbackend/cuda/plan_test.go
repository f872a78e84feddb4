package cuda

import (
	"strings"
	"testing"

	"github.com/dcpsim/dcpsim/hwbackend"
)

func TestPlanAttention(t *testing.T) {
	ok := hwbackend.AttentionShape{Batch: 2, SeqTokens: 130, Heads: 8, KVHeads: 2, HeadDimQK: 192, HeadDimV: 128}
	p, err := planAttention(ok)
	if err != nil {
		t.Fatal(err)
	}
	if p.blocks != 3 || p.dims != (headDims{192, 128}) {
		t.Errorf("plan %+v: blocks %d dims %v", ok, p.blocks, p.dims)
	}
	if got, want := p.qElems(), int64(2*130*8*192); got != want {
		t.Errorf("qElems = %d, want %d", got, want)
	}
	if got, want := p.vElems(), int64(2*130*2*128); got != want {
		t.Errorf("vElems = %d, want %d", got, want)
	}
	if got, want := p.kElems(), int64(2*130*2*192); got != want {
		t.Errorf("kElems = %d, want %d", got, want)
	}
	if got, want := p.oElems(), int64(2*130*8*128); got != want {
		t.Errorf("oElems = %d, want %d", got, want)
	}
	for _, tc := range []struct {
		s    hwbackend.AttentionShape
		want string
	}{
		{hwbackend.AttentionShape{Batch: 1, SeqTokens: 64, Heads: 6, KVHeads: 4, HeadDimQK: 128, HeadDimV: 128}, "multiple"},
		{hwbackend.AttentionShape{Batch: 1, SeqTokens: 64, Heads: 4, KVHeads: 4, HeadDimQK: 96, HeadDimV: 96}, "not compiled"},
		{hwbackend.AttentionShape{Batch: 0, SeqTokens: 64, Heads: 4, KVHeads: 4, HeadDimQK: 64, HeadDimV: 64}, "positive"},
		{hwbackend.AttentionShape{Batch: 1, SeqTokens: 64, Heads: 70000, KVHeads: 1, HeadDimQK: 64, HeadDimV: 64}, "grid"},
	} {
		if _, err := planAttention(tc.s); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("planAttention(%+v) = %v, want an error about %q", tc.s, err, tc.want)
		}
	}
}

func TestNewTiming(t *testing.T) {
	for _, tc := range []struct {
		in   []float64
		want float64
	}{
		{[]float64{3, 1, 2}, 2},
		{[]float64{4, 1, 3, 2}, 2.5},
		{[]float64{7}, 7},
		{nil, 0},
	} {
		got := newTiming(tc.in, 2)
		if got.Seconds != tc.want || got.Repeats != len(tc.in) || got.Warmups != 2 {
			t.Errorf("newTiming(%v) = %+v, want median %v", tc.in, got, tc.want)
		}
	}
	in := []float64{3, 1, 2}
	newTiming(in, 0)
	if in[0] != 3 {
		t.Error("newTiming reordered its argument")
	}
}

func TestChecks(t *testing.T) {
	if checkRuns(0, 1) != nil || checkRuns(-1, 1) == nil || checkRuns(1, 0) == nil {
		t.Error("checkRuns")
	}
	if checkGEMM(hwbackend.GEMMShape{M: 1, N: 2, K: 3}) != nil || checkGEMM(hwbackend.GEMMShape{M: 0, N: 2, K: 3}) == nil {
		t.Error("checkGEMM")
	}
	if g := elemGrid(1); g != 1 {
		t.Errorf("elemGrid(1) = %d", g)
	}
	if g := elemGrid(1 << 40); g != 1<<16 {
		t.Errorf("elemGrid(2^40) = %d", g)
	}
}

func TestVersionStrings(t *testing.T) {
	for got, want := range map[string]string{
		ncclVersionString(22805):    "2.28.5",
		ncclVersionString(2804):     "2.8.4",
		cudaVersionString(12040):    "12.4",
		cudaVersionString(13000):    "13.0",
		cublasVersionString(120405): "12.4.5",
	} {
		if got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	}
}
