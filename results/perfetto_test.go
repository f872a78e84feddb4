package results

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// traceTestTimeline is 2 stages × ranks {3, 7}: a planner stall, two
// microbatches forward and backward (rank 7 shifted 10 ns later in the
// backward half), p2p flows both ways (the flow of F mb1 waits at stage 1 while
// it runs B mb0), exposed comm on two backward ops, grad-sync and optimizer.
func traceTestTimeline() *Timeline {
	tl := &Timeline{Policy: "hydra", Iteration: 4, IterationNanos: 1050, PlannerStallNanos: 100, Stages: 2, Ranks: []int{3, 7}}
	op := func(stage, rank int, kind SliceKind, mb int, start, end, exposed int64) {
		chunk := 0
		if kind != Forward && kind != Backward {
			mb, chunk = -1, -1
		}
		tl.Slices = append(tl.Slices, Slice{Stage: stage, Rank: rank, Kind: kind, MB: mb, Chunk: chunk,
			StartNanos: start, EndNanos: end, ExposedCommNanos: exposed})
	}
	flow := func(rank, from, to, mb int, bwd bool, fromNs, toNs int64) {
		tl.Flows = append(tl.Flows, Flow{Rank: rank, FromStage: from, ToStage: to, MB: mb, Backward: bwd, FromNanos: fromNs, ToNanos: toNs})
	}
	for _, r := range []int{3, 7} {
		o := int64(0)
		if r == 7 {
			o = 10
		}
		for st := range 2 {
			op(st, r, PlannerStall, 0, 0, 100, 0)
			op(st, r, Optimizer, 0, 1000, 1050, 0)
		}
		op(0, r, Forward, 0, 100, 200, 0)
		op(0, r, Forward, 1, 200, 300, 0)
		op(0, r, Backward, 0, 500+o, 700+o, 50)
		op(0, r, Backward, 1, 700+o, 900+o, 0)
		op(0, r, GradSync, 0, 900+o, 1000, 0)
		op(1, r, Forward, 0, 210, 310, 0)
		op(1, r, Backward, 0, 310, 490+o, 30)
		op(1, r, Forward, 1, 490+o, 590+o, 0)
		op(1, r, Backward, 1, 590+o, 690+o, 0)
		op(1, r, GradSync, 0, 700+o, 1000, 0)
		flow(r, 0, 1, 0, false, 200, 205)
		flow(r, 0, 1, 1, false, 300, 305)
		flow(r, 1, 0, 0, true, 490+o, 495+o)
		flow(r, 1, 0, 1, true, 690+o, 695+o)
	}
	return tl
}

// traceFile is a parsed trace.
type traceFile struct {
	TraceEvents     []traceTestEvent `json:"traceEvents"`
	DisplayTimeUnit string           `json:"displayTimeUnit"`
	OtherData       map[string]any   `json:"otherData"`
}

// traceTestEvent is a parsed event; ts and dur stay decimal text.
type traceTestEvent struct {
	Name string         `json:"name"`
	Cat  string         `json:"cat"`
	Ph   string         `json:"ph"`
	Ts   *json.Number   `json:"ts"`
	Dur  *json.Number   `json:"dur"`
	Pid  int            `json:"pid"`
	Tid  int            `json:"tid"`
	ID   *uint64        `json:"id"`
	Bp   string         `json:"bp"`
	Args map[string]any `json:"args"`
}

// traceTrackKey is a track: (pid, tid).
type traceTrackKey struct{ pid, tid int }

func traceWrite(t *testing.T, tl *Timeline) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := WriteTrace(&buf, tl); err != nil {
		t.Fatalf("WriteTrace: %v", err)
	}
	return buf.Bytes()
}

func traceParse(t *testing.T, data []byte) traceFile {
	t.Helper()
	var f traceFile
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		t.Fatalf("trace does not parse: %v\n%s", err, data)
	}
	return f
}

// traceNanos reads a microsecond value written with exactly three decimals
// back as integer nanoseconds.
func traceNanos(t *testing.T, n *json.Number) int64 {
	t.Helper()
	if n == nil {
		t.Fatal("missing ts or dur")
	}
	whole, frac, ok := strings.Cut(n.String(), ".")
	if !ok || len(frac) != 3 {
		t.Fatalf("%q does not have three decimals", n.String())
	}
	w, err1 := strconv.ParseInt(whole, 10, 64)
	f, err2 := strconv.ParseInt(frac, 10, 64)
	if err1 != nil || err2 != nil || w < 0 {
		t.Fatalf("bad microseconds %q", n.String())
	}
	return w*1000 + f
}

// traceNames maps pids to process names and tracks to thread names.
func traceNames(t *testing.T, f traceFile) (map[int]string, map[traceTrackKey]string) {
	t.Helper()
	procs, threads := map[int]string{}, map[traceTrackKey]string{}
	for _, e := range f.TraceEvents {
		if e.Ph != "M" {
			continue
		}
		switch e.Name {
		case "process_name":
			procs[e.Pid] = e.Args["name"].(string)
		case "thread_name":
			threads[traceTrackKey{e.Pid, e.Tid}] = e.Args["name"].(string)
		}
	}
	return procs, threads
}

// traceX is a complete event as an interval, with its index in traceEvents.
type traceX struct {
	idx        int
	start, end int64
}

// traceCheckTrackNesting fails unless the X events of each track nest or are
// disjoint ([start, end) intervals; zero-length ones never conflict).
func traceCheckTrackNesting(t *testing.T, f traceFile) map[traceTrackKey][]traceX {
	t.Helper()
	tracks := map[traceTrackKey][]traceX{}
	for i, e := range f.TraceEvents {
		if e.Ph != "X" {
			continue
		}
		s := traceNanos(t, e.Ts)
		tracks[traceTrackKey{e.Pid, e.Tid}] = append(tracks[traceTrackKey{e.Pid, e.Tid}], traceX{i, s, s + traceNanos(t, e.Dur)})
	}
	for k, xs := range tracks {
		for i, a := range xs {
			for _, b := range xs[i+1:] {
				nested := (a.start <= b.start && b.end <= a.end) || (b.start <= a.start && a.end <= b.end)
				disjoint := a.end <= b.start || b.end <= a.start
				if !nested && !disjoint {
					t.Errorf("track %v: %s [%d, %d) and %s [%d, %d) partially overlap", k,
						f.TraceEvents[a.idx].Name, a.start, a.end, f.TraceEvents[b.idx].Name, b.start, b.end)
				}
			}
		}
	}
	return tracks
}

// traceBinding is where Perfetto's JSON importer binds the flow events: it
// sorts events by ts (complete events first, longer first; then the rest in
// file order), opens each complete event on its track's stack after popping
// the slices that ended before it starts (or at its start, unless both are
// instants), and binds a flow start, or a finish with "bp":"e", to the top of
// the track's stack. It returns, per flow id, the indices of the X events the
// start and finish are bound to (-1: none), and each X event's parent.
func traceBinding(t *testing.T, f traceFile) (out, in map[uint64]int, parent map[int]int) {
	t.Helper()
	type item struct {
		idx     int
		ts, key int64
	}
	var items []item
	for i, e := range f.TraceEvents {
		if e.Ph == "M" {
			continue
		}
		key := int64(1 << 62)
		if e.Ph == "X" {
			key -= traceNanos(t, e.Dur)
		}
		items = append(items, item{i, traceNanos(t, e.Ts), key})
	}
	slices.SortStableFunc(items, func(a, b item) int {
		if a.ts != b.ts {
			return int(a.ts - b.ts)
		}
		return int(a.key - b.key)
	})
	type open struct {
		idx        int
		start, dur int64
	}
	stacks := map[traceTrackKey][]open{}
	out, in, parent = map[uint64]int{}, map[uint64]int{}, map[int]int{}
	top := func(k traceTrackKey) int {
		if st := stacks[k]; len(st) > 0 {
			return st[len(st)-1].idx
		}
		return -1
	}
	for _, it := range items {
		e := f.TraceEvents[it.idx]
		k := traceTrackKey{e.Pid, e.Tid}
		switch e.Ph {
		case "X":
			dur := traceNanos(t, e.Dur)
			st := stacks[k]
			for len(st) > 0 {
				o := st[len(st)-1]
				end := o.start + o.dur
				if end < it.ts || (end == it.ts && !(o.dur == 0 && dur == 0)) {
					st = st[:len(st)-1]
					continue
				}
				break
			}
			parent[it.idx] = -1
			if len(st) > 0 {
				parent[it.idx] = st[len(st)-1].idx
			}
			stacks[k] = append(st, open{it.idx, it.ts, dur})
		case "s":
			out[*e.ID] = top(k)
		case "f":
			if e.Bp == "e" {
				in[*e.ID] = top(k)
			}
		}
	}
	return out, in, parent
}

func TestWriteTraceLayout(t *testing.T) {
	tl := traceTestTimeline()
	f := traceParse(t, traceWrite(t, tl))

	if f.DisplayTimeUnit != "ms" {
		t.Errorf("displayTimeUnit %q, want ms", f.DisplayTimeUnit)
	}
	for key, want := range map[string]string{"policy": "hydra", "iteration": "4", "iteration_seconds": "0.00000105", "planner_stall_seconds": "0.0000001"} {
		got, ok := f.OtherData[key]
		if !ok {
			t.Errorf("otherData lacks %s", key)
			continue
		}
		if fmt.Sprint(got) != want {
			if g, err := strconv.ParseFloat(fmt.Sprint(got), 64); err != nil || g != mustFloat(want) {
				t.Errorf("otherData.%s = %v, want %s", key, got, want)
			}
		}
	}

	// Metadata: one process per stage, one thread per rank in each, sort
	// indices, and thread ids unique over the trace.
	procs, threads := traceNames(t, f)
	if want := map[int]string{1: "stage 0", 2: "stage 1"}; fmt.Sprint(procs) != fmt.Sprint(want) {
		t.Errorf("process names %v, want %v", procs, want)
	}
	perProc := map[int][]string{}
	tidOwner := map[int]int{}
	for k, name := range threads {
		perProc[k.pid] = append(perProc[k.pid], name)
		if p, dup := tidOwner[k.tid]; dup {
			t.Errorf("tid %d used by pids %d and %d", k.tid, p, k.pid)
		}
		tidOwner[k.tid] = k.pid
		if _, isPid := procs[k.tid]; isPid {
			t.Errorf("thread %s has tid %d, which is a pid", name, k.tid)
		}
	}
	for pid := range procs {
		slices.Sort(perProc[pid])
		if got := strings.Join(perProc[pid], ","); got != "rank 3,rank 7" {
			t.Errorf("pid %d threads %q, want rank 3,rank 7", pid, got)
		}
	}
	sortIdx := map[string]int{}
	for _, e := range f.TraceEvents {
		if e.Ph == "M" && strings.HasSuffix(e.Name, "_sort_index") {
			n, _ := e.Args["sort_index"].(json.Number).Int64()
			if e.Name == "process_sort_index" {
				sortIdx[procs[e.Pid]] = int(n)
			} else {
				sortIdx[procs[e.Pid]+"/"+threads[traceTrackKey{e.Pid, e.Tid}]] = int(n)
			}
		}
	}
	if want := map[string]int{"stage 0": 0, "stage 1": 1, "stage 0/rank 3": 0, "stage 0/rank 7": 1, "stage 1/rank 3": 0, "stage 1/rank 7": 1}; fmt.Sprint(sortIdx) != fmt.Sprint(want) {
		t.Errorf("sort indices %v, want %v", sortIdx, want)
	}

	// Slices: every input slice as an X event with its name, cat, times and
	// args on the right track, plus an exposed-comm child at the end of each op
	// with exposed comm; all nest per track.
	tracks := traceCheckTrackNesting(t, f)
	type got struct {
		stage, rank string
		name, cat   string
		start, end  int64
	}
	var xs []got
	for _, e := range f.TraceEvents {
		if e.Ph != "X" {
			continue
		}
		s := traceNanos(t, e.Ts)
		xs = append(xs, got{procs[e.Pid], threads[traceTrackKey{e.Pid, e.Tid}], e.Name, e.Cat, s, s + traceNanos(t, e.Dur)})
		if e.Args["policy"] != "hydra" {
			t.Errorf("%s: args.policy %v, want hydra", e.Name, e.Args["policy"])
		}
		if e.Cat == "forward" || e.Cat == "backward" {
			for _, a := range []string{"mb", "chunk", "exposed_comm_us"} {
				if _, ok := e.Args[a]; !ok {
					t.Errorf("%s: args lack %s", e.Name, a)
				}
			}
		}
	}
	var want []got
	for _, s := range tl.Slices {
		want = append(want, got{fmt.Sprintf("stage %d", s.Stage), fmt.Sprintf("rank %d", s.Rank), traceSliceName(&s), s.Kind.String(), s.StartNanos, s.EndNanos})
		if s.ExposedCommNanos > 0 {
			want = append(want, got{fmt.Sprintf("stage %d", s.Stage), fmt.Sprintf("rank %d", s.Rank), "exposed comm", "exposed-comm", s.EndNanos - s.ExposedCommNanos, s.EndNanos})
		}
	}
	key := func(g got) string { return fmt.Sprint(g) }
	slices.SortFunc(xs, func(a, b got) int { return strings.Compare(key(a), key(b)) })
	slices.SortFunc(want, func(a, b got) int { return strings.Compare(key(a), key(b)) })
	if !slices.Equal(xs, want) {
		t.Errorf("X events\n%v\nwant\n%v", xs, want)
	}
	if len(tracks) != 4 {
		t.Errorf("%d tracks hold slices, want 4", len(tracks))
	}
	for _, e := range f.TraceEvents {
		if e.Ph == "X" && e.Name == "B mb0 c0" && procs[e.Pid] == "stage 0" && threads[traceTrackKey{e.Pid, e.Tid}] == "rank 3" {
			if v := e.Args["exposed_comm_us"].(json.Number).String(); v != "0.050" {
				t.Errorf("B mb0 c0 exposed_comm_us %s, want 0.050", v)
			}
		}
	}
}

func mustFloat(s string) float64 {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		panic(err)
	}
	return v
}

func TestWriteTraceFlows(t *testing.T) {
	tl := traceTestTimeline()
	f := traceParse(t, traceWrite(t, tl))
	procs, threads := traceNames(t, f)
	where := func(e traceTestEvent) string {
		return procs[e.Pid] + "/" + threads[traceTrackKey{e.Pid, e.Tid}]
	}

	// Pairs: each id has one start and one finish ("bp":"e") with the same
	// name and cat.
	type pair struct{ s, f *traceTestEvent }
	pairs := map[uint64]*pair{}
	for i := range f.TraceEvents {
		e := &f.TraceEvents[i]
		if e.Ph != "s" && e.Ph != "f" {
			continue
		}
		if e.ID == nil {
			t.Fatalf("flow event %s without id", e.Name)
		}
		p := pairs[*e.ID]
		if p == nil {
			p = &pair{}
			pairs[*e.ID] = p
		}
		if e.Ph == "s" {
			if p.s != nil {
				t.Errorf("id %d: two flow starts", *e.ID)
			}
			p.s = e
		} else {
			if p.f != nil {
				t.Errorf("id %d: two flow finishes", *e.ID)
			}
			if e.Bp != "e" {
				t.Errorf("id %d: finish bp %q, want e", *e.ID, e.Bp)
			}
			p.f = e
		}
	}
	if len(pairs) != len(tl.Flows) {
		t.Fatalf("%d flow ids, want %d", len(pairs), len(tl.Flows))
	}

	// Each flow event lies inside (or at the start of) a slice of its track,
	// and Perfetto binds the start to the producing op (or its exposed-comm
	// child) and the finish to the consuming op.
	tracks := traceCheckTrackNesting(t, f)
	out, in, parent := traceBinding(t, f)
	type bound struct{ flow, from, to string }
	var got []bound
	for id, p := range pairs {
		if p.s == nil || p.f == nil {
			t.Errorf("id %d: start %v finish %v, want both", id, p.s != nil, p.f != nil)
			continue
		}
		if p.s.Name != p.f.Name || p.s.Cat != p.f.Cat || p.s.Cat == "" {
			t.Errorf("id %d: start %s/%s, finish %s/%s: want equal name and cat", id, p.s.Name, p.s.Cat, p.f.Name, p.f.Cat)
		}
		for _, e := range []*traceTestEvent{p.s, p.f} {
			ts := traceNanos(t, e.Ts)
			inside := false
			for _, x := range tracks[traceTrackKey{e.Pid, e.Tid}] {
				if x.start <= ts && (ts < x.end || ts == x.start) {
					inside = true
				}
			}
			if !inside {
				t.Errorf("id %d: %s event at %d ns on %s lies in no slice", id, e.Ph, ts, where(*e))
			}
		}
		op := func(x int) string {
			if x < 0 {
				return "none"
			}
			e := f.TraceEvents[x]
			if e.Name == "exposed comm" && parent[x] >= 0 {
				e = f.TraceEvents[parent[x]]
			}
			return where(e) + " " + e.Name
		}
		got = append(got, bound{p.s.Name + " " + threads[traceTrackKey{p.s.Pid, p.s.Tid}], op(out[id]), op(in[id])})
	}
	var want []bound
	for _, r := range []string{"rank 3", "rank 7"} {
		want = append(want,
			bound{"p2p F mb0 c0 " + r, "stage 0/" + r + " F mb0 c0", "stage 1/" + r + " F mb0 c0"},
			bound{"p2p F mb1 c0 " + r, "stage 0/" + r + " F mb1 c0", "stage 1/" + r + " F mb1 c0"},
			bound{"p2p B mb0 c0 " + r, "stage 1/" + r + " B mb0 c0", "stage 0/" + r + " B mb0 c0"},
			bound{"p2p B mb1 c0 " + r, "stage 1/" + r + " B mb1 c0", "stage 0/" + r + " B mb1 c0"},
		)
	}
	cmpBound := func(a, b bound) int { return strings.Compare(fmt.Sprint(a), fmt.Sprint(b)) }
	slices.SortFunc(got, cmpBound)
	slices.SortFunc(want, cmpBound)
	if !slices.Equal(got, want) {
		t.Errorf("flow bindings\n%v\nwant\n%v", got, want)
	}

	// Placement: the start 1 ns before the producer's end, the finish at the
	// consumer's start (F mb1 arrives at stage 1 at 305 ns but runs at 490).
	for _, p := range pairs {
		if p.s.Name == "p2p F mb1 c0" && threads[traceTrackKey{p.s.Pid, p.s.Tid}] == "rank 3" {
			if s, fin := p.s.Ts.String(), p.f.Ts.String(); s != "0.299" || fin != "0.490" {
				t.Errorf("F mb1 flow at %s -> %s us, want 0.299 -> 0.490", s, fin)
			}
			if a := p.f.Args["arrive_us"]; fmt.Sprint(a) != "0.305" {
				t.Errorf("F mb1 flow arrive_us %v, want 0.305", a)
			}
		}
	}
}

func TestWriteTraceZeroLengthAndPrecision(t *testing.T) {
	tl := &Timeline{Policy: "p", Stages: 2, Ranks: []int{0}, IterationNanos: 123456789012,
		Slices: []Slice{
			{Stage: 0, Rank: 0, Kind: Forward, MB: 0, Chunk: 0, StartNanos: 123456789, EndNanos: 123456789},
			{Stage: 1, Rank: 0, Kind: Forward, MB: 0, Chunk: 0, StartNanos: 123456790, EndNanos: 123456999, ExposedCommNanos: 209},
			{Stage: 1, Rank: 0, Kind: Optimizer, MB: -1, Chunk: -1, StartNanos: 123456999, EndNanos: 123456999},
		},
		Flows: []Flow{{Rank: 0, FromStage: 0, ToStage: 1, FromNanos: 123456789, ToNanos: 123456790}},
	}
	f := traceParse(t, traceWrite(t, tl))
	traceCheckTrackNesting(t, f)
	var xs []string
	for _, e := range f.TraceEvents {
		switch e.Ph {
		case "X":
			xs = append(xs, e.Name+" "+e.Ts.String()+" "+e.Dur.String())
		case "s", "f":
			xs = append(xs, e.Ph+" "+e.Ts.String())
		}
	}
	want := []string{"F mb0 c0 123456.789 0.000", "s 123456.789", "F mb0 c0 123456.790 0.209", "exposed comm 123456.790 0.209", "f 123456.790", "optimizer 123456.999 0.000"}
	if !slices.Equal(xs, want) {
		t.Errorf("events %q, want %q", xs, want)
	}
	out, in, parent := traceBinding(t, f)
	if len(out) != 1 || out[1] < 0 || f.TraceEvents[out[1]].Dur.String() != "0.000" {
		t.Errorf("flow start bound to %v, want the zero-length producer", out)
	}
	if x := in[1]; x < 0 || (f.TraceEvents[x].Name != "F mb0 c0" && f.TraceEvents[parent[x]].Name != "F mb0 c0") {
		t.Errorf("flow finish bound to event %d, want the consumer F mb0 c0", x)
	}
}

func TestWriteTraceDeterministic(t *testing.T) {
	// Two zero-length slices at one instant of one track tie on every sort key
	// but their content.
	withTies := func() *Timeline {
		tl := traceTestTimeline()
		for _, k := range []SliceKind{Optimizer, GradSync} {
			tl.Slices = append(tl.Slices, Slice{Stage: 1, Rank: 3, Kind: k, MB: -1, Chunk: -1, StartNanos: 1050, EndNanos: 1050})
		}
		return tl
	}
	tl := withTies()
	a, b := traceWrite(t, tl), traceWrite(t, tl)
	if !bytes.Equal(a, b) {
		t.Fatal("two writes of one timeline differ")
	}
	// The order of Slices and Flows does not matter either.
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20 {
		sh := withTies()
		rng.Shuffle(len(sh.Slices), func(i, j int) { sh.Slices[i], sh.Slices[j] = sh.Slices[j], sh.Slices[i] })
		rng.Shuffle(len(sh.Flows), func(i, j int) { sh.Flows[i], sh.Flows[j] = sh.Flows[j], sh.Flows[i] })
		if c := traceWrite(t, sh); !bytes.Equal(a, c) {
			t.Fatalf("shuffled slices and flows change the trace:\n%s\nvs\n%s", a, c)
		}
	}
}

func TestWriteTraceInvalid(t *testing.T) {
	base := traceTestTimeline
	addSlice := func(s Slice) func(*Timeline) { return func(tl *Timeline) { tl.Slices = append(tl.Slices, s) } }
	for _, c := range []struct {
		name   string
		mutate func(*Timeline)
		want   []string // substrings of the error
	}{
		{"end before start", addSlice(Slice{Stage: 0, Rank: 3, Kind: Optimizer, MB: -1, Chunk: -1, StartNanos: 1060, EndNanos: 1055}),
			[]string{"slice 28 (optimizer on stage 0 rank 3, [1060, 1055) ns)", "ends before it starts"}},
		{"negative start", addSlice(Slice{Stage: 0, Rank: 3, Kind: Optimizer, StartNanos: -5, EndNanos: 0}),
			[]string{"slice 28 (optimizer", "starts before 0"}},
		{"stage too large", addSlice(Slice{Stage: 2, Rank: 3, Kind: Forward, MB: 9, StartNanos: 2000, EndNanos: 2100}),
			[]string{"slice 28 (F mb9 c0 on stage 2 rank 3", "stage outside [0, 2)"}},
		{"negative stage", addSlice(Slice{Stage: -1, Rank: 3, Kind: Forward, MB: 9, StartNanos: 2000, EndNanos: 2100}),
			[]string{"F mb9 c0 on stage -1 rank 3", "stage outside"}},
		{"rank not drawn", addSlice(Slice{Stage: 0, Rank: 5, Kind: Backward, MB: 9, StartNanos: 2000, EndNanos: 2100}),
			[]string{"B mb9 c0 on stage 0 rank 5", "rank not in Ranks"}},
		{"partial overlap", addSlice(Slice{Stage: 1, Rank: 7, Kind: Forward, MB: 9, StartNanos: 250, EndNanos: 350}),
			[]string{"F mb9 c0 on stage 1 rank 7, [250, 350)", "F mb0 c0 on stage 1 rank 7, [210, 310)", "partially overlaps"}},
		{"overlap with exposed comm", addSlice(Slice{Stage: 0, Rank: 3, Kind: GradSync, StartNanos: 690, EndNanos: 720}),
			[]string{"grad-sync on stage 0 rank 3, [690, 720)", "exposed comm [650, 700) ns of slice", "B mb0 c0 on stage 0 rank 3", "partially overlaps"}},
		{"exposed comm too long", func(tl *Timeline) { tl.Slices[0].ExposedCommNanos = 101 },
			[]string{"slice 0 (planner on stage 0 rank 3, [0, 100) ns)", "exposed comm 101 ns"}},
		{"unknown kind", func(tl *Timeline) { tl.Slices[1].Kind = 42 }, []string{"slice 1", "unknown kind 42"}},
		{"no stages", func(tl *Timeline) { tl.Stages = 0 }, []string{"0 stages"}},
		{"no ranks", func(tl *Timeline) { tl.Ranks = nil }, []string{"no ranks"}},
		{"duplicate rank", func(tl *Timeline) { tl.Ranks = []int{3, 7, 3} }, []string{"rank 3 is listed twice"}},
		{"flow rank", func(tl *Timeline) { tl.Flows[0].Rank = 4 }, []string{"flow p2p F mb0 c0 (rank 4", "rank not in Ranks"}},
		{"flow stage", func(tl *Timeline) { tl.Flows[0].ToStage = 2 }, []string{"flow p2p F mb0 c0", "stage outside"}},
		{"flow backwards in time", func(tl *Timeline) { tl.Flows[0].ToNanos = 100 }, []string{"flow p2p F mb0 c0", "arrives before"}},
		{"flow without producer", func(tl *Timeline) { tl.Flows[0].FromNanos = 199 }, []string{"flow p2p F mb0 c0", "no forward op of mb 0 ends at 199 ns on stage 0 rank 3"}},
		{"flow without consumer", func(tl *Timeline) { tl.Flows[2].ToNanos = 900 }, []string{"flow p2p B mb0 c0", "no backward op of mb 0 starts at or after 900 ns on stage 0"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			tl := base()
			c.mutate(tl)
			var buf bytes.Buffer
			err := WriteTrace(&buf, tl)
			if err == nil {
				t.Fatal("WriteTrace succeeded, want an error")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			if buf.Len() != 0 {
				t.Errorf("wrote %d bytes for an invalid timeline, want none", buf.Len())
			}
		})
	}
	if err := WriteTrace(&bytes.Buffer{}, nil); err == nil {
		t.Error("WriteTrace(nil) succeeded, want an error")
	}
}
