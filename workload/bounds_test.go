package workload

import (
	"io"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// repeatReader yields count copies of line.
type repeatReader struct {
	line  []byte
	count int
	off   int
}

func (r *repeatReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) && r.count > 0 {
		c := copy(p[n:], r.line[r.off:])
		n += c
		if r.off += c; r.off == len(r.line) {
			r.off, r.count = 0, r.count-1
		}
	}
	if n == 0 {
		return 0, io.EOF
	}
	return n, nil
}

// TestLengthFileBounds (issue 24 item 6): a length file with more than
// MaxLengthFileLines lines or MaxLengthFileBytes bytes is refused while it is
// read, naming the file and the bound, in every format; one at the line
// bound is read. (Before, every length was kept: 300M lines ran out of
// memory.)
func TestLengthFileBounds(t *testing.T) {
	if testing.Short() {
		t.Skip("reads 1 GiB")
	}
	lines := func(line string, n int) io.Reader { return &repeatReader{line: []byte(line), count: n} }
	// The bounds themselves, on plain text; the formats at lowered bounds.
	_, err := ReadLengths(lines("1\n", MaxLengthFileLines+1), "f")
	if err == nil || err.Error() != "f:8388609: more than 8388608 lines: too large (the limit of a length file, MaxLengthFileLines)" {
		t.Errorf("one line too many: %v", err)
	}
	got, err := ReadLengths(lines("7\n", MaxLengthFileLines), "f")
	if err != nil || len(got) != MaxLengthFileLines || got[len(got)-1] != 7 {
		t.Errorf("at the line bound: %d lengths, %v", len(got), err)
	}
	// 1 GiB of long comment lines: under the line bound, past the byte bound.
	comment := "#" + strings.Repeat(" ", 8190) + "\n"
	_, err = ReadLengths(lines(comment, MaxLengthFileBytes/len(comment)+1), "f")
	if err == nil || err.Error() != "f: more than 1073741824 bytes: too large (the limit of a length file, MaxLengthFileBytes)" {
		t.Errorf("past the byte bound: %v", err)
	}
	defer func(l int, b int64) { lineLimit, byteLimit = l, b }(lineLimit, byteLimit)
	lineLimit, byteLimit = 1000, 1<<20
	read := map[string]func(io.Reader) ([]int, error){
		"text": func(r io.Reader) ([]int, error) { return ReadLengths(r, "f") },
		"csv": func(r io.Reader) ([]int, error) {
			return ReadLengths(io.MultiReader(strings.NewReader("length\n"), r), "f")
		},
		"jsonl": func(r io.Reader) ([]int, error) { return ReadJSONL(r, "f", "n") },
	}
	row := map[string]string{"text": "1\n", "csv": "1\n", "jsonl": "{\"n\":1}\n"}
	for format, f := range read {
		if _, err := f(lines(row[format], 1001)); err == nil || !strings.Contains(err.Error(), "f:1001: more than 1000 lines: too large") {
			t.Errorf("%s, one line too many: %v", format, err)
		}
		if got, err := f(lines(row[format], 999)); err != nil || len(got) != 999 {
			t.Errorf("%s, at the line bound: %d lengths, %v", format, len(got), err)
		}
		if _, err := f(lines(strings.Repeat(" ", 4095)+"\n", 300)); err == nil || !strings.Contains(err.Error(), "f: more than 1048576 bytes: too large") {
			t.Errorf("%s, past the byte bound: %v", format, err)
		}
	}
}

// TestJSONLDuplicateKey (issue 24 item 21): a record giving a key twice is
// refused, as --batches lines are (json.Unmarshal took the last value).
func TestJSONLDuplicateKey(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"n": 5, "n": 7}`, `f:1: key "n" given twice`},
		{`{"n": 1}` + "\n" + `{"n": 5, "a": {"n": 1}, "a": 2}`, `f:2: key "a" given twice`},
		{`{"n": 5, "\u006e": 7}`, `f:1: key "n" given twice`}, // the same key, escaped
	} {
		_, err := ReadJSONL(strings.NewReader(tc.in), "f", "n")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.in, err, tc.want)
		}
	}
	// Nested objects may repeat keys of the record; distinct keys pass.
	got, err := ReadJSONL(strings.NewReader(`{"n": 5, "meta": {"n": 1, "x": {"n": 2}}, "N": 3}`), "f", "n")
	if err != nil || len(got) != 1 || got[0] != 5 {
		t.Errorf("nested: %v, %v", got, err)
	}
}

// TestAccumulatorMatchesSummarize (issue 24 item 8): the streamed summary of
// lengths added batch by batch is Summarize's of the pooled lengths, bit for
// bit, short lengths (counted densely) and long ones (in a map) alike.
func TestAccumulatorMatchesSummarize(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 20 {
		var pooled []int
		var acc Accumulator
		for range 1 + rng.IntN(6) {
			batch := make([]int, rng.IntN(3000))
			for i := range batch {
				switch rng.IntN(3) {
				case 0:
					batch[i] = 1 + rng.IntN(100)
				case 1:
					batch[i] = 1 + rng.IntN(200000)
				default:
					batch[i] = 1 + rng.IntN(MaxSequenceTokens)
				}
			}
			acc.Add(batch)
			pooled = append(pooled, batch...)
		}
		if got, want := acc.Summary(DefaultThresholds()), Summarize(pooled, DefaultThresholds()); !reflect.DeepEqual(got, want) {
			t.Errorf("trial %d:\ngot  %+v\nwant %+v", trial, got, want)
		}
		sorted := acc.Lengths()
		if len(sorted) != len(pooled) || acc.Len() != len(pooled) {
			t.Errorf("trial %d: Lengths %d, Len %d, want %d", trial, len(sorted), acc.Len(), len(pooled))
		}
	}
	var empty Accumulator
	if got, want := empty.Summary(DefaultThresholds()), Summarize(nil, DefaultThresholds()); !reflect.DeepEqual(got, want) {
		t.Errorf("empty: %+v, want %+v", got, want)
	}
}

// TestEachBatch: EachBatch hands over Batch(0..n-1) in order, and
// Batch.Stats (now without Summarize's sort) agrees with Summarize.
func TestEachBatch(t *testing.T) {
	d, err := Preset("long-256k")
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewSampler(d, BatchSpec{TargetTokens: 1 << 22, ContextTokens: 1 << 18, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	k := 0
	s.EachBatch(11, func(b Batch) {
		want := s.Batch(k)
		if b.Iteration != k || !reflect.DeepEqual(b, want) {
			t.Errorf("batch %d: iteration %d, %d lengths; want %d lengths", k, b.Iteration, len(b.Lengths), len(want.Lengths))
		}
		sum := Summarize(b.Lengths, nil)
		st := b.Stats()
		if st.Sequences != sum.Sequences || st.Tokens != sum.Tokens || st.SumSquares != sum.SumSquares || st.MaxTokens != sum.MaxTokens ||
			st.AttentionWeightedMeanTokens != sum.SumSquares/float64(sum.Tokens) {
			t.Errorf("batch %d: Stats %+v, Summarize %+v", k, st, sum)
		}
		k++
	})
	if k != 11 {
		t.Errorf("%d batches, want 11", k)
	}
}
