package pages

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/dcpsim/dcpsim/results"
)

// Timeline is one iteration's pipeline, drawn in the browser from its data:
// a track per (stage, rank), stage 0 on top, every op a bar (forward,
// backward, gradient sync, optimizer, planner stall), the exposed
// communication of an op over its last part, the idle gaps between ops as
// bubbles; zoom and hover.
type Timeline struct {
	// ID is the timeline's id in the page; Title its heading.
	ID, Title string
	// Trace is the file of the iteration's Perfetto trace ("": none).
	Trace string
	// Data is what the script draws.
	Data TimelineData
}

// TimelineData is a timeline as its script reads it (JSON).
type TimelineData struct {
	// EndNanos is the iteration's length.
	EndNanos int64 `json:"end"`
	// Tracks are the tracks' labels, top to bottom.
	Tracks []string `json:"tracks"`
	// Ops are the slices, by track and start: [track, kind, microbatch,
	// chunk, start ns, end ns, exposed comm ns], kind a results.SliceKind.
	Ops [][7]int64 `json:"ops"`
}

// NewTimeline converts one results.Timeline: tracks by stage, then by rank
// in tl.Ranks' order, labelled with the rank's role when known.
func NewTimeline(id, title, trace string, tl *results.Timeline) *Timeline {
	t := &Timeline{ID: id, Title: title, Trace: trace, Data: TimelineData{EndNanos: tl.IterationNanos}}
	track := map[[2]int]int{}
	for s := range tl.Stages {
		for _, r := range tl.Ranks {
			track[[2]int{s, r}] = len(t.Data.Tracks)
			label := fmt.Sprintf("stage %d · rank %d", s, r)
			if role := tl.RankRoles[r]; role != "" {
				label += " (" + role + ")"
			}
			t.Data.Tracks = append(t.Data.Tracks, label)
		}
	}
	for _, s := range tl.Slices {
		i, ok := track[[2]int{s.Stage, s.Rank}]
		if !ok {
			continue
		}
		t.Data.Ops = append(t.Data.Ops, [7]int64{int64(i), int64(s.Kind), int64(s.MB), int64(s.Chunk), s.StartNanos, s.EndNanos, s.ExposedCommNanos})
		t.Data.EndNanos = max(t.Data.EndNanos, s.EndNanos)
	}
	slices.SortStableFunc(t.Data.Ops, func(a, b [7]int64) int {
		for _, k := range []int{0, 4, 5, 1} {
			if c := cmp.Compare(a[k], b[k]); c != 0 {
				return c
			}
		}
		return 0
	})
	if t.Data.Ops == nil {
		t.Data.Ops = [][7]int64{}
	}
	return t
}

// Bars are the forward and backward ops the timeline draws: one per
// (microbatch, chunk, stage, rank) pass.
func (t *Timeline) Bars() int {
	n := 0
	for _, op := range t.Data.Ops {
		if k := results.SliceKind(op[1]); k == results.Forward || k == results.Backward {
			n++
		}
	}
	return n
}
