package keyheap

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestAgainstSort drives random adds, key changes, removals and takes and
// checks every Take against the least (key, item) of a plain set.
func TestAgainstSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 200 {
		n := 1 + rng.IntN(40)
		key := make([]int64, n)
		for i := range key {
			key[i] = rng.Int64N(10)
		}
		var h *Heap[int64]
		in := make([]bool, n)
		if trial%2 == 0 {
			h = Full(key)
			for i := range in {
				in[i] = true
			}
		} else {
			h = New(key)
		}
		least := func() int {
			best := -1
			for i, ok := range in {
				if ok && (best < 0 || key[i] < key[best]) {
					best = i
				}
			}
			return best
		}
		for range 300 {
			i := rng.IntN(n)
			switch op := rng.IntN(4); {
			case op == 0 && !in[i]:
				h.Add(i)
				in[i] = true
			case op == 1 && in[i]:
				key[i] = rng.Int64N(10)
				h.Fix(i)
			case op == 2 && in[i]:
				h.Remove(i)
				in[i] = false
			case op == 3 && h.Len() > 0:
				want := least()
				if got := h.Take(); got != want {
					t.Fatalf("trial %d: Take = %d (key %d), want %d (key %d)", trial, got, key[got], want, key[want])
				}
				in[want] = false
			}
			for j := range n {
				if h.Contains(j) != in[j] {
					t.Fatalf("trial %d: Contains(%d) = %v, want %v", trial, j, h.Contains(j), in[j])
				}
			}
			if want := countTrue(in); h.Len() != want {
				t.Fatalf("trial %d: Len = %d, want %d", trial, h.Len(), want)
			}
		}
	}
}

func countTrue(in []bool) int {
	n := 0
	for _, ok := range in {
		if ok {
			n++
		}
	}
	return n
}

// TestTiesGoToTheLowerItem pins the tie rule the planners rely on.
func TestTiesGoToTheLowerItem(t *testing.T) {
	key := []float64{1, 0, 0, 1}
	h := Full(key)
	var got []int
	for h.Len() > 0 {
		got = append(got, h.Take())
	}
	if want := []int{1, 2, 0, 3}; !slices.Equal(got, want) {
		t.Fatalf("order %v, want %v", got, want)
	}
}
