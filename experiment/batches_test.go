package experiment

import (
	"bytes"
	"encoding/json"
	"github.com/dcpsim/dcpsim/badinput"
	"io"
	"math"
	"strings"
	"testing"

	"math/bits"

	"github.com/dcpsim/dcpsim/sched"
	"github.com/dcpsim/dcpsim/sched/hydra"
	"github.com/dcpsim/dcpsim/sim/step"
)

// isInputErr reports whether err blames the input (the CLI's exit 2).
func isInputErr(err error) bool {
	return badinput.Is(err)
}

// TestBatchLineStrict: hostile or malformed --batches lines are refused as
// bad input naming the line, the key and the allowed range, before anything
// big is allocated (vpp 10^9 was a 23 GB out-of-memory; trailing garbage, a
// second object and duplicate keys were silently accepted; negative pp became
// 1; a length near MaxInt64 printed "holds at most -2").
func TestBatchLineStrict(t *testing.T) {
	p, _ := hydra.New(hydra.DefaultOptions())
	const ok = `"ranks":2,"budget_tokens":2000,"lengths":[2000,1000]`
	for _, c := range []struct{ line, want string }{
		{`{"ranks":2,"budget_tokens":2000,"lengths":[2000,1000],"vpp":1000000000,"pp":2}`, "b.jsonl:1: invalid scheduling input: sched: vpp = 1000000000: must be in [1, 128]"},
		{`{` + ok + `,"pp":1000000000}`, "sched: pp = 1000000000: must be in [1, 1024]"},
		{`{` + ok + `,"pp":-2}`, "b.jsonl:1: pp = -2: must be in [1, 1024] (0 or absent: 1)"},
		{`{` + ok + `,"vpp":-1}`, "vpp = -1: must be in [1, 128] (0 or absent: 1)"},
		{`{` + ok + `} x`, "not a batch object: after the object: invalid character 'x'"},
		{`{` + ok + `}{"ranks":4}`, `not a batch object: after the object: unexpected "{" (one object per line)`},
		{`{` + ok + `,"lengths":[1]}`, `not a batch object: key "lengths" given twice`},
		{`{` + ok + `,"Ranks":3}`, `not a batch object: unknown key "Ranks"; allowed: ranks, budget_tokens, lengths,`},
		{`{` + ok, "not a batch object: the line ends inside the object"},
		{`[1, 2]`, `not a batch object: want a JSON object {...}, got "["`},
		{`{"ranks":2,"budget_tokens":2000,"lengths":[2000,1000.5]}`, "lengths: element 1: 1000.5 is not an integer"},
		{`{"ranks":2,"budget_tokens":2000,"lengths":[2000,"1000"]}`, `lengths: element 1: want an integer, got "\"1000\"]"`},
		{`{"ranks":2,"budget_tokens":2000,"lengths":[99999999999999999999]}`, "lengths: element 0: 99999999999999999999 does not fit an integer"},
		{`{"ranks":2,"budget_tokens":2000,"lengths":[9223372036854775806]}`, "sched: sequence 0 has 9223372036854775806 tokens: must be in [1, 33554432]"},
		{`{"ranks":4,"budget_tokens":4611686018427387904,"lengths":[9223372036854775806]}`, "sched: budget_tokens = 4611686018427387904: must be in [1, 16777216]"},
	} {
		for _, run := range []func(io.Reader, io.Writer) error{
			func(r io.Reader, w io.Writer) error { return PlanBatches(r, "b.jsonl", w, p, -1) },
			func(r io.Reader, w io.Writer) error { return RunBatches(r, "b.jsonl", w, p) },
		} {
			var out bytes.Buffer
			err := run(strings.NewReader(c.line+"\n"), &out)
			if !isInputErr(err) || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "b.jsonl:1: ") {
				t.Errorf("%.80s: %.300v, want bad input b.jsonl:1 with %q", c.line, err, c.want)
			}
			if strings.Contains(fmtErr(err), "at most -") {
				t.Errorf("%.80s: negative limit in %v", c.line, err)
			}
			if out.Len() != 0 {
				t.Errorf("%.80s: output %q", c.line, out.String())
			}
		}
	}
	if !raceEnabled {
		line := `{"ranks":2,"budget_tokens":2000,"lengths":[1` + strings.Repeat(",1", sched.MaxBatchSequences) + `]}`
		err := PlanBatches(strings.NewReader(line), "b.jsonl", io.Discard, p, -1)
		if !badinput.Is(err) || !strings.Contains(fmtErr(err), "b.jsonl:1: not a batch object: lengths: more than 10000000 sequences (the limit of one batch)") {
			t.Errorf("10^7+1 lengths: %v", err)
		}
	}
	// A NaN or infinite override ratio is refused, not taken as "no override".
	for _, r := range []float64{math.NaN(), math.Inf(1)} {
		if err := PlanBatches(strings.NewReader(`{`+ok+`}`), "b", io.Discard, p, r); !badinput.Is(err) {
			t.Errorf("ratio %v: %v", r, err)
		}
	}
	// pp and vpp 0 mean the default 1, like leaving them out.
	var a, b bytes.Buffer
	if err := RunBatches(strings.NewReader(`{`+ok+`}`), "b", &a, p); err != nil {
		t.Fatal(err)
	}
	if err := RunBatches(strings.NewReader(`{`+ok+`,"pp":0,"vpp":0}`), "b", &b, p); err != nil || a.String() != b.String() {
		t.Errorf("pp = vpp = 0: %v %q, want %q", err, b.String(), a.String())
	}
}

func fmtErr(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// TestBatchLineTooLong: a line past the bound is refused with its line number
// as soon as it passes it, without reading (or decoding) the rest; a line at
// the bound is read.
func TestBatchLineTooLong(t *testing.T) {
	echo := func(line []byte) (any, error) { return json.RawMessage(line), nil }
	line := `{"ranks":1}` // 11 bytes, 12 with its '\n'
	var out bytes.Buffer
	if err := eachBatchLine(strings.NewReader(line+"\n"+line), "b.jsonl", &out, 12, echo); err != nil || out.String() != line+"\n"+line+"\n" {
		t.Errorf("lines at the bound: %v %q", err, out.String())
	}
	err := eachBatchLine(strings.NewReader(line+"\n"+line+" \n"), "b.jsonl", &out, 12, echo)
	if !badinput.Is(err) || err.Error() != "b.jsonl:2: line too long: more than 12 bytes (the limit of one --batches line)" {
		t.Errorf("13-byte line: %v", err)
	}

	// A 1 GB line of valid JSON used to be decoded whole (20.8 GB peak).
	if raceEnabled {
		return
	}
	r := &endless{head: []byte(`{"ranks":1,"budget_tokens":1,"lengths":[1`), rep: []byte(",1")}
	err = RunBatches(r, "big.jsonl", io.Discard, nil)
	if !badinput.Is(err) || !strings.Contains(err.Error(), "big.jsonl:1: line too long: more than 134217728 bytes") {
		t.Errorf("endless line: %v", err)
	}
	if r.read > MaxBatchLineBytes+2<<20 {
		t.Errorf("read %d bytes of an endless line, limit %d", r.read, MaxBatchLineBytes)
	}
}

// endless reads head, then rep forever.
type endless struct {
	head, rep []byte
	read      int
}

func (e *endless) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		src := e.rep
		if e.read < len(e.head) {
			src = e.head[e.read:]
		} else {
			src = src[(e.read-len(e.head))%len(src):]
		}
		k := copy(p[n:], src)
		n += k
		e.read += k
	}
	return n, nil
}

// TestBlankLines: blank and white-space-only lines are skipped and produce no
// output (one output line per batch line), and line numbers in errors count
// them.
func TestBlankLines(t *testing.T) {
	p, _ := hydra.New(hydra.DefaultOptions())
	line := `{"ranks": 2, "budget_tokens": 2000, "lengths": [2000, 1000, 1000]}`
	in := "\n \t\n" + line + "\r\n\r\n" + line + "\n\n"
	for name, run := range map[string]func(io.Reader, io.Writer) error{
		"plan": func(r io.Reader, w io.Writer) error { return PlanBatches(r, "b.jsonl", w, p, -1) },
		"run":  func(r io.Reader, w io.Writer) error { return RunBatches(r, "b.jsonl", w, p) },
	} {
		var out bytes.Buffer
		if err := run(strings.NewReader(in), &out); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
		if len(got) != 2 || got[0] != got[1] || !json.Valid([]byte(got[0])) {
			t.Errorf("%s: output %q, want two equal JSON lines", name, out.String())
		}
		err := run(strings.NewReader(in+"  \n{}\n"), io.Discard)
		if !isInputErr(err) || !strings.HasPrefix(err.Error(), "b.jsonl:8: ") {
			t.Errorf("%s: bad line 8 after blanks: %v", name, err)
		}
		if err := run(strings.NewReader("\n \n"), &out); err != nil {
			t.Errorf("%s: only blank lines: %v", name, err)
		}
	}
	if err := PlanBatches(strings.NewReader(line), "b", io.Discard, p, -1); err != nil {
		t.Errorf("a last line without '\\n': %v", err)
	}
}

// FuzzBatchLine: the strict decoder never panics; a line it refuses is bad
// input; a line it accepts has Inputs inside every sched limit (so no policy
// or engine allocation past them) and is a JSON object encoding/json decodes
// to the same values.
func FuzzBatchLine(f *testing.F) {
	for _, s := range []string{
		`{"ranks": 2, "budget_tokens": 2000, "lengths": [2000, 1000, 1000]}`,
		`{"ranks": 4, "budget_tokens": 2000, "lengths": [2000, 1000, 1000, 1000], "pp": 2, "ep": 2}`,
		`{"ranks":2,"budget_tokens":2000,"lengths":[2000,1000],"vpp":1000000000,"pp":2}`,
		`{"ranks":2,"budget_tokens":2000,"lengths":[1],"pp":-1,"vpp":0,"overhead_ratio":1e9,"context_tokens":5}`,
		`{"ranks":2,"budget_tokens":2000,"lengths":[1]} {"ranks":1}`,
		`{"ranks":2,"ranks":2,"budget_tokens":2000,"lengths":[1]}`,
		`{"ranks":8,"budget_tokens":4,"lengths":[1,2,3],"microbatches":[[[0]]],"cpython_seconds":0.1,"microbatch_count":1}`,
		`{"ranks":2,"budget_tokens":2000,"lengths":[9223372036854775807, -0, 1e3, 0.5]}`,
		`{"ranks":1,"budget_tokens":1,"lengths":null,"overhead_ratio":null}`,
		`[]`, `{}`, `null`, `{"lengths":[`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		b, in, err := decodeBatchLine(line)
		if err != nil {
			if !isInputErr(err) {
				t.Fatalf("%q: error %v is not bad input", line, err)
			}
			return
		}
		if err := in.Check(b.Lengths); err != nil {
			t.Fatalf("%q: accepted, but Check: %v", line, err)
		}
		switch {
		case in.PoolRanks < 1 || in.PoolRanks > sched.MaxPoolRanks, in.BudgetTokens < 1 || in.BudgetTokens > sched.MaxBudgetTokens,
			in.PP < 1 || in.PP > sched.MaxPP, in.VPP < 1 || in.VPP > sched.MaxVPP, in.EP < 0 || in.EP > in.PoolRanks,
			in.ContextTokens < 0 || in.ContextTokens > sched.MaxSequenceTokens, len(b.Lengths) < 1 || len(b.Lengths) > sched.MaxBatchSequences,
			!(in.OverheadRatio >= 0):
			t.Fatalf("%q: accepted with inputs %+v, %d lengths", line, in, len(b.Lengths))
		}
		for i, s := range b.Lengths {
			if s < 1 || s > sched.MaxSequenceTokens {
				t.Fatalf("%q: accepted length %d = %d", line, i, s)
			}
		}
		var std BatchLine
		if err := json.Unmarshal(line, &std); err != nil {
			t.Fatalf("%q: accepted, but encoding/json: %v", line, err)
		}
		if std.Ranks != b.Ranks || std.BudgetTokens != b.BudgetTokens || std.PP != b.PP || std.VPP != b.VPP || std.EP != b.EP ||
			std.ContextTokens != b.ContextTokens || len(std.Lengths) != len(b.Lengths) {
			t.Fatalf("%q: decoded %+v, encoding/json %+v", line, b, std)
		}
		for i := range b.Lengths {
			if std.Lengths[i] != b.Lengths[i] {
				t.Fatalf("%q: length %d: %d, encoding/json %d", line, i, b.Lengths[i], std.Lengths[i])
			}
		}
		var keys map[string]json.RawMessage
		if err := json.Unmarshal(line, &keys); err != nil {
			t.Fatalf("%q: accepted, not an object: %v", line, err)
		}
	})
}

// TestPlanLineSize: a plan whose microbatches field would list more than
// MaxPlanLineEntries entries is refused naming the numbers, before it is
// built (10^5 sequences on 2^20 ranks took 6 GB and wrote an 800 MB line).
func TestPlanLineSize(t *testing.T) {
	p, _ := hydra.New(hydra.DefaultOptions())
	line := `{"ranks":1048576,"budget_tokens":1,"lengths":[1048576` + strings.Repeat(",1048576", 16) + `]}`
	var out bytes.Buffer
	err := PlanBatches(strings.NewReader(line), "b.jsonl", &out, p, -1)
	// HyDra promises WithinBudget: ⌈S1/(G·B)⌉ = 17 MBs are known before planning (issue 24 item 11).
	if !badinput.Is(err) || !strings.Contains(fmtErr(err), "b.jsonl:1: the plan's microbatches field would hold at least 17·1048576 = 17825792 per-rank lists") {
		t.Errorf("17 MBs × 2^20 ranks: %v", err)
	}
	if out.Len() != 0 {
		t.Errorf("output %d bytes", out.Len())
	}
}

// TestPlanNeedsRefusedBeforePlanning (issue 24 item 11): a line of 10^7
// one-token lengths on 1,024 ranks is refused from HyDra's lower bounds
// before its plan is built (which took 1.5 GB and 11 s for plan, 3.1 GB and
// 16 s for run, before the checks after it refused it).
func TestPlanNeedsRefusedBeforePlanning(t *testing.T) {
	p, _ := hydra.New(hydra.DefaultOptions())
	line := []byte(`{"ranks": 1024, "budget_tokens": 4096, "lengths": [1` + strings.Repeat(",1", 10_000_000-1) + `]}`)
	for _, forRun := range []bool{false, true} {
		_, _, plan, err := planBatchLine(p, line, -1, forRun)
		want := "MaxPlanLineEntries); refused before planning"
		if forRun {
			want = "(step.MaxOps); refused before planning"
		}
		if plan != nil || !badinput.Is(err) || !strings.Contains(fmtErr(err), want) {
			t.Errorf("forRun %v: %v", forRun, err)
		}
	}
}

// TestPlanNeedsAreLowerBounds: the bounds checkPlanNeeds uses never exceed
// what HyDra's plans (any cap) and the layouts of them hold, so it refuses
// nothing the checks after planning would pass.
func TestPlanNeedsAreLowerBounds(t *testing.T) {
	rng := uint64(7)
	next := func(n int) int { rng = rng*6364136223846793005 + 1442695040888963407; return int(rng>>33) % n }
	checked, tight := 0, 0
	defer func() {
		if checked < 60 || tight == 0 {
			t.Errorf("%d plans checked, %d with a bound reached (want >= 60, >= 1)", checked, tight)
		}
	}()
	for trial := range 80 {
		g := []int{4, 8, 16, 48, 64}[trial%5]
		b := []int{512, 4096, 8192}[trial%3]
		lengths := make([]int, 1+next(300))
		for i := range lengths {
			lengths[i] = 1 + next(b*g/max(1, next(8)+1))
		}
		in := sched.Inputs{PoolRanks: g, BudgetTokens: b, PP: 1 + trial%3, VPP: 1, EP: []int{1, 2, 4}[trial%3], OverheadRatio: DefaultOverheadRatio}
		if in.Check(lengths) != nil {
			continue
		}
		for _, capOpt := range []int{0, -1} {
			opts := hydra.DefaultOptions()
			sums := hydra.BatchSums(lengths)
			if capOpt < 0 { // force the largest legal cap
				opts.Cap = 1 << (bits.Len(uint(g)) - 1)
				if opts.Cap < hydra.MemoryCap(sums.MaxTokens, b) {
					continue
				}
			}
			p, _ := hydra.New(opts)
			plan, err := p.Plan(lengths, in)
			if err != nil {
				continue
			}
			mbs, domains := planNeeds(p, lengths, in)
			l, err := step.NewLayout(plan, in.EPSize())
			if err != nil {
				t.Fatal(err)
			}
			checked++
			if int64(len(plan.Microbatches)) == mbs || int64(len(l.Domains)) == domains {
				tight++
			}
			if int64(len(plan.Microbatches)) < mbs || int64(len(l.Domains)) < domains {
				t.Errorf("trial %d cap %d: plan has %d MBs and %d domains, bounds say >= %d and >= %d", trial, opts.Cap, len(plan.Microbatches), len(l.Domains), mbs, domains)
			}
		}
	}
}

// TestBatchesByteOrderMark (issue 24 item 20): a UTF-8 BOM before the first
// --batches line is accepted, as length files accept one.
func TestBatchesByteOrderMark(t *testing.T) {
	p, _ := hydra.New(hydra.DefaultOptions())
	line := `{"ranks": 2, "budget_tokens": 2000, "lengths": [2000, 1000]}` + "\n"
	var with, without bytes.Buffer
	if err := PlanBatches(strings.NewReader("\xEF\xBB\xBF"+line), "b", &with, p, -1); err != nil {
		t.Fatal(err)
	}
	if err := PlanBatches(strings.NewReader(line), "b", &without, p, -1); err != nil {
		t.Fatal(err)
	}
	if with.String() != without.String() {
		t.Errorf("with a BOM:\n%s\nwithout:\n%s", with.String(), without.String())
	}
}
