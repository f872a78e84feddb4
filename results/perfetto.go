package results

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"slices"
)

// This file writes a Timeline as a trace in the Chrome trace event format
// ("JSON Object Format": {"traceEvents": [...], "displayTimeUnit": "ms",
// "otherData": {...}}), which ui.perfetto.dev and chrome://tracing open.
//
// Layout. Each pipeline stage is a process named "stage N" (pid N+1, process
// sort index N); each representative rank is a thread of every stage's process,
// named "rank R" (thread sort index: the rank's position in the ascending
// ranks). Thread ids are unique over the whole trace (tid = Stages + 1 +
// stage×len(Ranks) + position, never equal to a pid) because Perfetto keys
// threads and their thread_name metadata by tid alone: reusing the rank as the
// tid in every stage would merge or misname the tracks. pid and tid 0 are
// avoided (Perfetto treats 0 as the kernel's idle task); the process metadata
// events carry tid = pid, the process's (empty) main thread.
//
// Slices. Each Slice is a complete event (ph "X") with ts and dur in
// microseconds written with exactly three decimals, so nanoseconds survive
// exactly (no floating-point rounding: the decimal is formatted from the
// integer). Names are "F mb3 c0" and "B mb3 c0" for forward and backward ops
// and the kind's name ("planner", "grad-sync", "optimizer") otherwise; cat is
// the SliceKind string; args hold stage, rank and policy, plus mb, chunk and
// exposed_comm_us for forward and backward ops. A slice with ExposedCommNanos >
// 0 gets a child slice "exposed comm" (cat "exposed-comm") covering the last
// ExposedCommNanos of it, on the same track.
//
// Flows. Each Flow is a pair of flow events with the same id, name and cat
// ("p2p"; Perfetto matches v1 flow events by id, cat and name together): ids
// are 1, 2, ... in the order of the flows sorted by their fields. Perfetto
// binds a flow event to the topmost slice open on its track when it reads the
// event (slices are opened in (ts, longer dur first) order and closed only when
// a later slice starts at or after their end), while the Chrome viewer binds
// by time to a slice enclosing the event's ts; the placements below are
// enclosed by the intended op in both readings.
//   - The start event (ph "s") goes on (FromStage, Rank) at FromNanos − 1 ns,
//     clamped to the producing op's start. The producing op is the op of the
//     flow's direction (forward, or backward when Flow.Backward) and microbatch
//     whose end is FromNanos (the one of the flow's chunk if several). At
//     FromNanos itself the producer has ended (Perfetto treats slices as
//     [start, end) and would close it at that instant if another slice starts
//     there), so 1 ns earlier is the last instant strictly inside it; a
//     zero-length producer is bound at its start, where it is still the open
//     slice. The event binds to the innermost slice there: the producer, or its
//     "exposed comm" child when it has one (which lies inside the producer).
//   - The finish event (ph "f", "bp":"e", enclosing-slice binding) goes on
//     (ToStage, Rank) at the consuming op's start, not at ToNanos: the
//     consumer starts at or after ToNanos, later when the stage is still busy
//     with other ops, and at ToNanos the enclosing slice would then be some
//     other op (or none), while the default "next slice" binding would pick
//     whatever op starts next on the stage. The consuming op is the first op
//     of the flow's direction and microbatch on that track that starts at or
//     after ToNanos (preferring the flow's chunk). The arrival time is kept in
//     the flow events' args (arrive_us), with the send time (sent_us).
//
// Perfetto draws a flow's arrow from the end of the slice the start event is
// bound to to the start of the one the finish event is bound to, whatever the
// events' own timestamps. If a track held nested slices other than the
// "exposed comm" children (the simulator produces none), Perfetto could bind a
// start event to a nested slice that ended earlier but was never closed, since
// it closes slices only when the next one starts: the binding above is exact
// for tracks of disjoint ops.
//
// Order. Metadata events come first (by pid, tid, name), then every other
// event in the order Perfetto's importer processes them: by ts; at equal ts,
// complete events before flow events (longer first), flow starts before flow
// finishes; then by pid, tid and the event's encoded bytes. The output
// therefore depends only on the Timeline's content, not on the order of its
// Slices and Flows, and is byte-identical for equal Timelines.

// WriteTrace writes tl as a Chrome/Perfetto JSON trace (see the layout above)
// to w. It validates tl first and writes nothing when it is invalid: it returns
// an error naming the offending slice for a slice with EndNanos < StartNanos or
// StartNanos < 0, an unknown kind, ExposedCommNanos outside [0, duration], a
// stage outside [0, Stages) or a rank not in Ranks, and for two slices of one
// track that partially overlap (Perfetto needs the slices of a track to nest or
// be disjoint; zero-length slices never conflict). It also rejects a flow with
// an unknown stage or rank, ToNanos < FromNanos, or no producing or consuming
// op among the slices (Flows link drawn ops).
func WriteTrace(w io.Writer, tl *Timeline) error {
	if tl == nil {
		return fmt.Errorf("report: WriteTrace: nil timeline")
	}
	b, err := buildTrace(tl)
	if err != nil {
		return fmt.Errorf("report: WriteTrace: %w", err)
	}
	if err := b.write(w, tl); err != nil {
		return fmt.Errorf("report: WriteTrace: %w", err)
	}
	return nil
}

// traceEvent is one event of the trace, in the field order it is written.
type traceEvent struct {
	Name string         `json:"name"`
	Cat  string         `json:"cat,omitempty"`
	Ph   string         `json:"ph"`
	Ts   json.Number    `json:"ts,omitempty"`
	Dur  json.Number    `json:"dur,omitempty"`
	Pid  int            `json:"pid"`
	Tid  int            `json:"tid"`
	ID   uint64         `json:"id,omitempty"`
	Bp   string         `json:"bp,omitempty"`
	Args map[string]any `json:"args,omitempty"`
}

// traceOtherData is the trace's "otherData" object.
type traceOtherData struct {
	Policy              string  `json:"policy"`
	Iteration           int     `json:"iteration"`
	IterationSeconds    float64 `json:"iteration_seconds"`
	PlannerStallSeconds float64 `json:"planner_stall_seconds"`
	Stages              int     `json:"stages"`
	Ranks               []int   `json:"ranks"`
}

// Phase ranks of timed events at equal ts: complete events first, then flow
// starts, then flow finishes (as Perfetto's importer orders them).
const (
	tracePhaseSlice = iota
	tracePhaseFlowStart
	tracePhaseFlowEnd
)

// traceItem is an encoded timed event with its sort key.
type traceItem struct {
	ts, dur  int64
	phase    int
	pid, tid int
	line     []byte
}

// traceSpan is an interval on a track for the nesting check: a slice, or the
// "exposed comm" child of one.
type traceSpan struct {
	start, end int64
	slice      int // index in Timeline.Slices
	child      bool
}

// traceOpKey finds the forward or backward ops of one microbatch on a track.
type traceOpKey struct {
	stage, rank int
	kind        SliceKind
	mb          int
}

// traceBuild is a validated Timeline turned into encoded events.
type traceBuild struct {
	meta  [][]byte
	items []traceItem
}

// traceMicros formats non-negative nanoseconds as microseconds with exactly
// three decimals, from the integer (no rounding).
func traceMicros(ns int64) json.Number {
	return json.Number(fmt.Sprintf("%d.%03d", ns/1000, ns%1000))
}

// traceSliceName is the event name of a slice: "F mb3 c0", "B mb3 c0", or the
// kind's name.
func traceSliceName(s *Slice) string {
	switch s.Kind {
	case Forward:
		return fmt.Sprintf("F mb%d c%d", s.MB, s.Chunk)
	case Backward:
		return fmt.Sprintf("B mb%d c%d", s.MB, s.Chunk)
	}
	return s.Kind.String()
}

// traceDescribeSlice names slice i of tl for an error message.
func traceDescribeSlice(tl *Timeline, i int) string {
	s := &tl.Slices[i]
	return fmt.Sprintf("slice %d (%s on stage %d rank %d, [%d, %d) ns)",
		i, traceSliceName(s), s.Stage, s.Rank, s.StartNanos, s.EndNanos)
}

// traceDescribeSpan names a span for an error message.
func traceDescribeSpan(tl *Timeline, sp traceSpan) string {
	if sp.child {
		return fmt.Sprintf("the exposed comm [%d, %d) ns of %s", sp.start, sp.end, traceDescribeSlice(tl, sp.slice))
	}
	return traceDescribeSlice(tl, sp.slice)
}

// traceFlowName is the name shared by a flow's two events.
func traceFlowName(f *Flow) string {
	dir := "F"
	if f.Backward {
		dir = "B"
	}
	return fmt.Sprintf("p2p %s mb%d c%d", dir, f.MB, f.Chunk)
}

// traceDescribeFlow names a flow for an error message.
func traceDescribeFlow(f *Flow) string {
	return fmt.Sprintf("flow %s (rank %d, stage %d at %d ns -> stage %d at %d ns)",
		traceFlowName(f), f.Rank, f.FromStage, f.FromNanos, f.ToStage, f.ToNanos)
}

// buildTrace validates tl and turns it into encoded events, in the steps of
// the layout described above; each step returns the first problem it finds,
// so a Timeline with several problems is reported by the earliest step.
func buildTrace(tl *Timeline) (*traceBuild, error) {
	l, err := newTraceLayout(tl)
	if err != nil {
		return nil, err
	}
	if err := l.checkSlices(); err != nil {
		return nil, err
	}
	b := &traceBuild{}
	if err := b.addMetadata(l); err != nil {
		return nil, err
	}
	ops, err := b.addSlices(l)
	if err != nil {
		return nil, err
	}
	if err := b.addFlows(l, ops); err != nil {
		return nil, err
	}
	b.sortItems()
	return b, nil
}

// traceLayout is where a Timeline's tracks go in the trace: its ranks in
// ascending order and each one's position, from which the pids, tids and
// track indices follow.
type traceLayout struct {
	tl      *Timeline
	ranks   []int
	rankPos map[int]int
}

// newTraceLayout checks that tl has stages and distinct ranks and lays out its
// tracks.
func newTraceLayout(tl *Timeline) (*traceLayout, error) {
	if tl.Stages < 1 {
		return nil, fmt.Errorf("timeline has %d stages, want at least 1", tl.Stages)
	}
	if len(tl.Ranks) == 0 {
		return nil, fmt.Errorf("timeline has no ranks")
	}
	ranks := slices.Clone(tl.Ranks)
	slices.Sort(ranks)
	rankPos := make(map[int]int, len(ranks))
	for i, r := range ranks {
		if _, dup := rankPos[r]; dup {
			return nil, fmt.Errorf("rank %d is listed twice in Ranks", r)
		}
		rankPos[r] = i
	}
	return &traceLayout{tl: tl, ranks: ranks, rankPos: rankPos}, nil
}

// pid is the process of a stage.
func (l *traceLayout) pid(stage int) int { return stage + 1 }

// tid is the thread of (stage, rank), unique over the trace.
func (l *traceLayout) tid(stage, rank int) int {
	return l.tl.Stages + 1 + l.track(stage, rank)
}

// track is the index of (stage, rank) among all tracks.
func (l *traceLayout) track(stage, rank int) int { return stage*len(l.ranks) + l.rankPos[rank] }

// hasRank reports whether rank is one of the timeline's.
func (l *traceLayout) hasRank(rank int) bool {
	_, ok := l.rankPos[rank]
	return ok
}

// checkSlices validates each slice on its own, then the nesting of the slices
// (and their exposed-comm children) of every track.
func (l *traceLayout) checkSlices() error {
	tl := l.tl
	spans := make([][]traceSpan, tl.Stages*len(l.ranks))
	for i := range tl.Slices {
		s := &tl.Slices[i]
		switch {
		case s.Kind < Forward || s.Kind > PlannerStall:
			return fmt.Errorf("%s: unknown kind %d", traceDescribeSlice(tl, i), int(s.Kind))
		case s.EndNanos < s.StartNanos:
			return fmt.Errorf("%s: ends before it starts", traceDescribeSlice(tl, i))
		case s.StartNanos < 0:
			return fmt.Errorf("%s: starts before 0", traceDescribeSlice(tl, i))
		case s.Stage < 0 || s.Stage >= tl.Stages:
			return fmt.Errorf("%s: stage outside [0, %d)", traceDescribeSlice(tl, i), tl.Stages)
		case s.ExposedCommNanos < 0 || s.ExposedCommNanos > s.EndNanos-s.StartNanos:
			return fmt.Errorf("%s: exposed comm %d ns outside [0, duration]", traceDescribeSlice(tl, i), s.ExposedCommNanos)
		}
		if !l.hasRank(s.Rank) {
			return fmt.Errorf("%s: rank not in Ranks %v", traceDescribeSlice(tl, i), l.ranks)
		}
		t := l.track(s.Stage, s.Rank)
		spans[t] = append(spans[t], traceSpan{start: s.StartNanos, end: s.EndNanos, slice: i})
		if s.ExposedCommNanos > 0 {
			spans[t] = append(spans[t], traceSpan{start: s.EndNanos - s.ExposedCommNanos, end: s.EndNanos, slice: i, child: true})
		}
	}
	for _, ts := range spans {
		if err := traceCheckNesting(tl, ts); err != nil {
			return err
		}
	}
	return nil
}

// encode is ev as one line of JSON.
func (b *traceBuild) encode(ev traceEvent) ([]byte, error) {
	line, err := json.Marshal(ev)
	if err != nil {
		return nil, fmt.Errorf("encoding %s: %w", ev.Name, err)
	}
	return line, nil
}

// addMeta appends metadata events.
func (b *traceBuild) addMeta(evs ...traceEvent) error {
	for _, ev := range evs {
		line, err := b.encode(ev)
		if err != nil {
			return err
		}
		b.meta = append(b.meta, line)
	}
	return nil
}

// addTimed appends a timed event with its sort key (ts, dur, phase).
func (b *traceBuild) addTimed(ev traceEvent, ts, dur int64, phase int) error {
	line, err := b.encode(ev)
	if err != nil {
		return err
	}
	b.items = append(b.items, traceItem{ts: ts, dur: dur, phase: phase, pid: ev.Pid, tid: ev.Tid, line: line})
	return nil
}

// addMetadata names and orders the processes (stages) and threads (ranks), in
// pid, tid order.
func (b *traceBuild) addMetadata(l *traceLayout) error {
	for st := range l.tl.Stages {
		pid := l.pid(st)
		if err := b.addMeta(
			traceEvent{Name: "process_name", Ph: "M", Pid: pid, Tid: pid, Args: map[string]any{"name": fmt.Sprintf("stage %d", st)}},
			traceEvent{Name: "process_sort_index", Ph: "M", Pid: pid, Tid: pid, Args: map[string]any{"sort_index": st}},
		); err != nil {
			return err
		}
		for ri, r := range l.ranks {
			tid := l.tid(st, r)
			if err := b.addMeta(
				traceEvent{Name: "thread_name", Ph: "M", Pid: pid, Tid: tid, Args: map[string]any{"name": fmt.Sprintf("rank %d", r)}},
				traceEvent{Name: "thread_sort_index", Ph: "M", Pid: pid, Tid: tid, Args: map[string]any{"sort_index": ri}},
			); err != nil {
				return err
			}
		}
	}
	return nil
}

// traceOps are the forward or backward ops of each (track, kind, microbatch),
// as slice indices in start order.
type traceOps map[traceOpKey][]int

// addSlices adds each slice as a complete event, and its exposed-comm child
// when it has one, and returns the forward and backward ops indexed for the
// flows.
func (b *traceBuild) addSlices(l *traceLayout) (traceOps, error) {
	tl := l.tl
	ops := make(traceOps)
	for i := range tl.Slices {
		s := &tl.Slices[i]
		pid, tid := l.pid(s.Stage), l.tid(s.Stage, s.Rank)
		args := map[string]any{"stage": s.Stage, "rank": s.Rank, "policy": tl.Policy}
		childArgs := map[string]any{"stage": s.Stage, "rank": s.Rank, "policy": tl.Policy}
		if s.Kind == Forward || s.Kind == Backward {
			args["mb"], args["chunk"] = s.MB, s.Chunk
			args["exposed_comm_us"] = traceMicros(s.ExposedCommNanos)
			childArgs["mb"], childArgs["chunk"] = s.MB, s.Chunk
			k := traceOpKey{s.Stage, s.Rank, s.Kind, s.MB}
			ops[k] = append(ops[k], i)
		} else if s.ExposedCommNanos > 0 {
			args["exposed_comm_us"] = traceMicros(s.ExposedCommNanos)
		}
		dur := s.EndNanos - s.StartNanos
		ev := traceEvent{Name: traceSliceName(s), Cat: s.Kind.String(), Ph: "X",
			Ts: traceMicros(s.StartNanos), Dur: traceMicros(dur), Pid: pid, Tid: tid, Args: args}
		if err := b.addTimed(ev, s.StartNanos, dur, tracePhaseSlice); err != nil {
			return nil, err
		}
		if s.ExposedCommNanos > 0 {
			start := s.EndNanos - s.ExposedCommNanos
			ev := traceEvent{Name: "exposed comm", Cat: "exposed-comm", Ph: "X",
				Ts: traceMicros(start), Dur: traceMicros(s.ExposedCommNanos), Pid: pid, Tid: tid, Args: childArgs}
			if err := b.addTimed(ev, start, s.ExposedCommNanos, tracePhaseSlice); err != nil {
				return nil, err
			}
		}
	}
	// Each list of ops in start order (ties by end, chunk, index) so the choice
	// of producer and consumer does not depend on the order of Slices.
	for _, list := range ops {
		slices.SortFunc(list, func(a, b int) int {
			sa, sb := &tl.Slices[a], &tl.Slices[b]
			return cmp.Or(cmp.Compare(sa.StartNanos, sb.StartNanos), cmp.Compare(sa.EndNanos, sb.EndNanos),
				cmp.Compare(sa.Chunk, sb.Chunk), cmp.Compare(sa.ExposedCommNanos, sb.ExposedCommNanos), cmp.Compare(a, b))
		})
	}
	return ops, nil
}

// addFlows adds each flow as a start and a finish event bound to its
// producing and consuming ops, with ids in the order of the flows sorted by
// their fields (so the ids do not depend on input order).
func (b *traceBuild) addFlows(l *traceLayout, ops traceOps) error {
	flows := slices.Clone(l.tl.Flows)
	slices.SortFunc(flows, func(a, b Flow) int {
		return cmp.Or(cmp.Compare(a.Rank, b.Rank), traceCompareBool(a.Backward, b.Backward),
			cmp.Compare(a.MB, b.MB), cmp.Compare(a.Chunk, b.Chunk),
			cmp.Compare(a.FromStage, b.FromStage), cmp.Compare(a.ToStage, b.ToStage),
			cmp.Compare(a.FromNanos, b.FromNanos), cmp.Compare(a.ToNanos, b.ToNanos))
	})
	for fi := range flows {
		if err := b.addFlow(l, ops, &flows[fi], uint64(fi+1)); err != nil {
			return err
		}
	}
	return nil
}

// addFlow validates flow f, finds its producing and consuming ops and adds
// its two events with the given id.
func (b *traceBuild) addFlow(l *traceLayout, ops traceOps, f *Flow, id uint64) error {
	tl := l.tl
	if !l.hasRank(f.Rank) {
		return fmt.Errorf("%s: rank not in Ranks %v", traceDescribeFlow(f), l.ranks)
	}
	if f.FromStage < 0 || f.FromStage >= tl.Stages || f.ToStage < 0 || f.ToStage >= tl.Stages {
		return fmt.Errorf("%s: stage outside [0, %d)", traceDescribeFlow(f), tl.Stages)
	}
	if f.FromNanos < 0 || f.ToNanos < f.FromNanos {
		return fmt.Errorf("%s: arrives before it is sent (or is sent before 0)", traceDescribeFlow(f))
	}
	kind := Forward
	if f.Backward {
		kind = Backward
	}
	prod := traceChooseOp(tl, ops[traceOpKey{f.FromStage, f.Rank, kind, f.MB}], f.Chunk,
		func(s *Slice) bool { return s.EndNanos == f.FromNanos })
	if prod < 0 {
		return fmt.Errorf("%s: no %s op of mb %d ends at %d ns on stage %d rank %d",
			traceDescribeFlow(f), kind, f.MB, f.FromNanos, f.FromStage, f.Rank)
	}
	cons := traceChooseOp(tl, ops[traceOpKey{f.ToStage, f.Rank, kind, f.MB}], f.Chunk,
		func(s *Slice) bool { return s.StartNanos >= f.ToNanos })
	if cons < 0 {
		return fmt.Errorf("%s: no %s op of mb %d starts at or after %d ns on stage %d rank %d",
			traceDescribeFlow(f), kind, f.MB, f.ToNanos, f.ToStage, f.Rank)
	}
	p, c := &tl.Slices[prod], &tl.Slices[cons]
	sTs := max(p.StartNanos, f.FromNanos-1)
	fTs := c.StartNanos
	args := map[string]any{"mb": f.MB, "chunk": f.Chunk, "from_stage": f.FromStage, "to_stage": f.ToStage,
		"sent_us": traceMicros(f.FromNanos), "arrive_us": traceMicros(f.ToNanos)}
	name := traceFlowName(f)
	start := traceEvent{Name: name, Cat: "p2p", Ph: "s", Ts: traceMicros(sTs),
		Pid: l.pid(f.FromStage), Tid: l.tid(f.FromStage, f.Rank), ID: id, Args: args}
	finish := traceEvent{Name: name, Cat: "p2p", Ph: "f", Ts: traceMicros(fTs),
		Pid: l.pid(f.ToStage), Tid: l.tid(f.ToStage, f.Rank), ID: id, Bp: "e", Args: args}
	if err := b.addTimed(start, sTs, 0, tracePhaseFlowStart); err != nil {
		return err
	}
	return b.addTimed(finish, fTs, 0, tracePhaseFlowEnd)
}

// sortItems puts the timed events in the order Perfetto's importer processes
// them (see Order above).
func (b *traceBuild) sortItems() {
	slices.SortFunc(b.items, func(x, y traceItem) int {
		return cmp.Or(cmp.Compare(x.ts, y.ts), cmp.Compare(x.phase, y.phase), cmp.Compare(y.dur, x.dur),
			cmp.Compare(x.pid, y.pid), cmp.Compare(x.tid, y.tid), bytes.Compare(x.line, y.line))
	})
}

// traceCompareBool orders false before true.
func traceCompareBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case !a:
		return -1
	}
	return 1
}

// traceChooseOp returns the first op of list (in start order) that satisfies ok,
// preferring one of the given chunk, or -1.
func traceChooseOp(tl *Timeline, list []int, chunk int, ok func(*Slice) bool) int {
	first := -1
	for _, i := range list {
		s := &tl.Slices[i]
		if !ok(s) {
			continue
		}
		if s.Chunk == chunk {
			return i
		}
		if first < 0 {
			first = i
		}
	}
	return first
}

// traceCheckNesting reports two spans of one track that partially overlap:
// with spans [start, end) in (start, longer first) order, a span must end by
// the end of the innermost still-open span that encloses its start.
func traceCheckNesting(tl *Timeline, spans []traceSpan) error {
	slices.SortFunc(spans, func(a, b traceSpan) int {
		return cmp.Or(cmp.Compare(a.start, b.start), cmp.Compare(b.end, a.end),
			cmp.Compare(a.slice, b.slice), traceCompareBool(a.child, b.child))
	})
	var open []traceSpan
	for _, sp := range spans {
		for len(open) > 0 && open[len(open)-1].end <= sp.start {
			open = open[:len(open)-1]
		}
		if len(open) > 0 {
			if top := open[len(open)-1]; sp.end > top.end {
				return fmt.Errorf("%s partially overlaps %s: slices on one track must nest or be disjoint",
					traceDescribeSpan(tl, sp), traceDescribeSpan(tl, top))
			}
		}
		open = append(open, sp)
	}
	return nil
}

// write writes the encoded trace.
func (b *traceBuild) write(w io.Writer, tl *Timeline) error {
	ranks := slices.Clone(tl.Ranks)
	slices.Sort(ranks)
	other, err := json.Marshal(traceOtherData{
		Policy:              tl.Policy,
		Iteration:           tl.Iteration,
		IterationSeconds:    float64(tl.IterationNanos) / 1e9,
		PlannerStallSeconds: float64(tl.PlannerStallNanos) / 1e9,
		Stages:              tl.Stages,
		Ranks:               ranks,
	})
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(w)
	bw.WriteString("{\"traceEvents\":[")
	sep := "\n"
	for _, line := range b.meta {
		bw.WriteString(sep)
		bw.Write(line)
		sep = ",\n"
	}
	for _, it := range b.items {
		bw.WriteString(sep)
		bw.Write(it.line)
		sep = ",\n"
	}
	bw.WriteString("\n],\n\"displayTimeUnit\":\"ms\",\n\"otherData\":")
	bw.Write(other)
	bw.WriteString("}\n")
	return bw.Flush()
}
