package kineto

import (
	"bytes"
	"io"
	"os"
	"strings"
	"testing"
	"unicode"
)

// FuzzRead: no input makes Read (or what follows a successful read:
// Measurements, Compare, WriteComparison, Check) panic, and no kept name or
// device name holds a control character. The seeds are the shipped trace,
// truncations of its JSON, small hand-made traces, the error table's inputs
// and the shapes issue 41 found (runs of whitespace, deep nesting, long and
// escaping names); the guard's and the keeping's bounds are lowered so that
// small inputs reach them. Run it with
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
		`{"traceEvents": [` + strings.Repeat(" ", 100) + kernelEvent[:len(kernelEvent)-2] + `}]}`,
		`{"traceEvents": ` + strings.Repeat("[", 20) + `]}`,
		`{"deviceProperties": {"a": [1, {"b": 2}]}, "traceEvents": [` + strings.Replace(kernelTrace("3")[17:], "ampere", strings.Repeat("x", 300), 1),
		`{"deviceProperties": [{"name": "\u001b[2J"}], "traceEvents": [{"ph": "X", "cat": "kernel", "name": "k\u009b", "ts": 1, "dur": 1}]}`,
	} {
		f.Add([]byte(s))
	}
	p := synthProfile(f)
	pred := NewComputePredictor(p)
	lower := func() func() {
		saved := []any{guardWhitespace, guardNesting, guardStringBytes, guardEventBytes, traceKeptLimit, traceNameLimit}
		guardWhitespace, guardNesting, guardStringBytes, guardEventBytes, traceKeptLimit, traceNameLimit = 64, 12, 256, 4096, 1<<16, 4096
		return func() {
			guardWhitespace, guardNesting, guardStringBytes = saved[0].(int), saved[1].(int), saved[2].(int64)
			guardEventBytes, traceKeptLimit, traceNameLimit = saved[3].(int64), saved[4].(int64), saved[5].(int)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		defer lower()()
		tr, err := Read(bytes.NewReader(data), "fuzz.json")
		if err != nil {
			if tr != nil {
				t.Fatal("a trace with an error")
			}
			return
		}
		for _, k := range tr.Kernels {
			if strings.ContainsFunc(k.Name+k.Op, unicode.IsControl) || len(k.Name) > MaxNameBytes+len("…") {
				t.Fatalf("kernel name %q (op %q) kept raw", k.Name, k.Op)
			}
		}
		for _, d := range tr.Devices {
			if strings.ContainsFunc(d.Name, unicode.IsControl) {
				t.Fatalf("device name %q kept raw", d.Name)
			}
		}
		tr.Measurements()
		c := Compare(tr, pred)
		if err := WriteComparison(io.Discard, c); err != nil {
			t.Fatal(err)
		}
		_ = tr.Check(p)
	})
}
