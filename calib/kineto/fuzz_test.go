package kineto

import (
	"bytes"
	"io"
	"os"
	"testing"
)

// FuzzRead: no input makes Read (or what follows a successful read:
// Measurements, Compare, WriteComparison, Check) panic. The seeds are the
// shipped trace, truncations of its JSON, small hand-made traces and the
// error table's inputs. Run it with
//
//	go test ./calib/kineto/ -run '^$' -fuzz FuzzRead -fuzztime 30s -fuzzminimizetime 5s
//
// (the default minimisation of an input the size of the shipped trace takes
// minutes).
func FuzzRead(f *testing.F) {
	if data, err := os.ReadFile(synthFile); err == nil {
		f.Add(data)
		f.Add(data[:len(data)/3])
	}
	gen := synthTrace(f)
	for _, n := range []int{1 << 10, 5 << 10, 20 << 10, 64 << 10} {
		f.Add(gen.JSON[:min(n, len(gen.JSON))])
	}
	for _, s := range []string{
		kernelTrace("12.5"), kernelTrace("-1"), kernelTrace(`"NaN"`), `{"traceEvents": []}`, `[]`, `{}`, `{"traceEvents": [1, "x", null, {"args": 5}]}`,
		`{"deviceProperties": 7, "distributedInfo": [], "traceEvents": [{"ph": "X", "cat": "kernel", "name": "flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64", "ts": 1, "dur": 1, "args": {"grid": [1e30, -1, "a"]}}]}`,
	} {
		f.Add([]byte(s))
	}
	p := synthProfile(f)
	pred := NewComputePredictor(p)
	f.Fuzz(func(t *testing.T, data []byte) {
		tr, err := Read(bytes.NewReader(data), "fuzz.json")
		if err != nil {
			if tr != nil {
				t.Fatal("a trace with an error")
			}
			return
		}
		tr.Measurements()
		c := Compare(tr, pred)
		if err := WriteComparison(io.Discard, c); err != nil {
			t.Fatal(err)
		}
		_ = tr.Check(p)
	})
}
