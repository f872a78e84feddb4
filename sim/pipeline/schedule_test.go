package pipeline

import (
	"strings"
	"testing"
)

func opsString(ops []Op) string {
	var b strings.Builder
	for i, op := range ops {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(op.String())
	}
	return b.String()
}

// TestWorkedExample is research/baselines.md §2.2's p=2, v=2, m=4 (N=2).
func TestWorkedExample(t *testing.T) {
	s, err := New(2, 2, 4, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"F0c0 F1c0 F0c1 F1c1 F2c0 B0c1 F3c0 B1c1 F2c1 B0c0 F3c1 B1c0 B2c1 B3c1 B2c0 B3c0",
		"F0c0 F1c0 F0c1 B0c1 F1c1 B1c1 F2c0 B0c0 F3c0 B1c0 F2c1 B2c1 F3c1 B3c1 B2c0 B3c0",
	}
	for r, w := range want {
		if got := opsString(s.Ops(r)); got != w {
			t.Errorf("stage %d:\n got %s\nwant %s", r, got, w)
		}
	}
	if w0, w1 := Warmup(2, 2, 4, 0, 0), Warmup(2, 2, 4, 0, 1); w0 != 4 || w1 != 2 {
		t.Errorf("warm-up %d, %d; want 4, 2", w0, w1)
	}
}

func TestNonInterleaved(t *testing.T) {
	// Classic 1F1B (v = 1): p−r−1 warm-up forwards, then F/B pairs, then drain.
	s, err := New(3, 1, 4, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"F0c0 F1c0 F2c0 B0c0 F3c0 B1c0 B2c0 B3c0",
		"F0c0 F1c0 B0c0 F2c0 B1c0 F3c0 B2c0 B3c0",
		"F0c0 B0c0 F1c0 B1c0 F2c0 B2c0 F3c0 B3c0",
	}
	for r, w := range want {
		if got := opsString(s.Ops(r)); got != w {
			t.Errorf("stage %d:\n got %s\nwant %s", r, got, w)
		}
	}
	// m < p: every stage is warm-up bound, min(p−r−1, m).
	s, err = New(4, 1, 2, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := opsString(s.Ops(0)), "F0c0 F1c0 B0c0 B1c0"; got != want {
		t.Errorf("p=4 m=2 stage 0: got %s, want %s", got, want)
	}
}

func TestGroupTable(t *testing.T) {
	// N = 3 > p = 2, m = 5: groups {0,1,2}, {3,4}; 5 mod 3 = 2 ≥ p is legal.
	// Stage 1 warm-up is (v−1)·N = 3 forwards, read straight off the table.
	s, err := New(2, 2, 5, 3)
	if err != nil {
		t.Fatal(err)
	}
	want := "F0c0 F1c0 F2c0 F0c1 B0c1 F1c1 B1c1 F2c1 B2c1 F3c0 B0c0 F4c0 B1c0 F3c1 B2c0 F4c1 B3c1 B4c1 B3c0 B4c0"
	if got := opsString(s.Ops(1)); got != want {
		t.Errorf("stage 1:\n got %s\nwant %s", got, want)
	}
}

func TestRejectsIllegal(t *testing.T) {
	for _, tc := range []struct {
		p, v, m, n int
		rule       string
	}{
		{0, 1, 4, 0, "p ≥ 1"},
		{2, 0, 4, 0, "v ≥ 1"},
		{2, 2, 0, 0, "m ≥ 1"},
		{4, 2, 2, 0, "p ≤ N ≤ m"},           // m < N = p
		{4, 2, 8, 2, "p ≤ N ≤ m"},           // N < p
		{4, 2, 8, 9, "p ≤ N ≤ m"},           // N > m
		{4, 2, 6, 0, "m mod N = 0 or ≥ p"},  // 6 mod 4 = 2 < 4
		{4, 2, 13, 5, "m mod N = 0 or ≥ p"}, // 13 mod 5 = 3 < 4
	} {
		_, err := New(tc.p, tc.v, tc.m, tc.n)
		if err == nil || !strings.Contains(err.Error(), tc.rule) {
			t.Errorf("New(%d, %d, %d, %d) = %v, want an error naming %q", tc.p, tc.v, tc.m, tc.n, err, tc.rule)
		}
	}
	for _, ok := range [][4]int{{4, 2, 14, 5}, {4, 2, 4, 0}, {4, 1, 3, 0}, {4, 1, 7, 0}, {1, 3, 1, 0}} {
		if _, err := New(ok[0], ok[1], ok[2], ok[3]); err != nil {
			t.Errorf("New%v: %v, want legal", ok, err)
		}
	}
}

// TestDepInvertsNext checks that every op but F(mb,0,0) has one dependency,
// that next is its inverse, and that every stage runs each of its 2·v·m ops once.
func TestDepInvertsNext(t *testing.T) {
	for _, c := range [][4]int{{2, 2, 4, 0}, {4, 3, 9, 5}, {3, 1, 5, 0}, {1, 2, 3, 0}} {
		s, err := New(c[0], c[1], c[2], c[3])
		if err != nil {
			t.Fatal(err)
		}
		for r := range s.Stages() {
			seen := map[Op]bool{}
			for _, op := range s.Ops(r) {
				if seen[op] {
					t.Fatalf("%v stage %d: %v twice", c, r, op)
				}
				seen[op] = true
				from, dep, ok := s.Dep(r, op)
				if !ok {
					if op.Backward || op.Chunk != 0 || r != 0 {
						t.Errorf("%v: %v on stage %d has no dependency", c, op, r)
					}
					continue
				}
				if to, succ, ok := s.next(from, dep); !ok || to != r || succ != op {
					t.Errorf("%v: next(Dep(%d, %v)) = %d, %v, %v", c, r, op, to, succ, ok)
				}
			}
			if len(seen) != 2*s.Chunks()*s.Microbatches() {
				t.Errorf("%v stage %d: %d distinct ops, want %d", c, r, len(seen), 2*s.Chunks()*s.Microbatches())
			}
		}
	}
}
