package keyheap

import (
	"container/heap"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// refHeap is the same indexed heap on container/heap: the reference the
// package's own sifting is checked against.
type refHeap struct {
	key   []int64
	items []int
	pos   []int
}

func (h *refHeap) Len() int { return len(h.items) }
func (h *refHeap) Less(i, j int) bool {
	a, b := h.items[i], h.items[j]
	return h.key[a] < h.key[b] || h.key[a] == h.key[b] && a < b
}
func (h *refHeap) Swap(i, j int) {
	h.items[i], h.items[j] = h.items[j], h.items[i]
	h.pos[h.items[i]], h.pos[h.items[j]] = i, j
}
func (h *refHeap) Push(x any) {
	h.pos[x.(int)] = len(h.items)
	h.items = append(h.items, x.(int))
}
func (h *refHeap) Pop() any {
	x := h.items[len(h.items)-1]
	h.items = h.items[:len(h.items)-1]
	h.pos[x] = -1
	return x
}

// check drives random adds, key changes, removals, takes and clears on a Heap
// and on refHeap (container/heap) with the same keys and checks that they
// agree after every operation: the same top, length and membership; the
// 4-ary layout is checked by valid, and every Take against the least
// (key, item) of a plain set. ops are the fuzzer's
// bytes (or random ones).
func check(t *testing.T, n int, full bool, ops []byte) {
	t.Helper()
	key := make([]int64, n)
	for i := range key {
		key[i] = int64(i*7919) % 5
	}
	var h *Heap[int64]
	ref := &refHeap{key: key, pos: make([]int, n)}
	in := make([]bool, n)
	for i := range ref.pos {
		ref.pos[i] = -1
	}
	if full {
		h = Full(key)
		for i := range n {
			ref.items = append(ref.items, i)
			ref.pos[i], in[i] = i, true
		}
		heap.Init(ref)
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
	for k := 0; k+1 < len(ops); k += 2 {
		i := int(ops[k+1]) % n
		switch op := ops[k] % 9; {
		case op < 2 && !in[i]:
			h.Add(i)
			heap.Push(ref, i)
			in[i] = true
		case op < 4 && in[i]:
			key[i] = int64(ops[k] / 9 % 6)
			h.Fix(i)
			heap.Fix(ref, ref.pos[i])
		case op == 4 && in[i]:
			h.Remove(i)
			heap.Remove(ref, ref.pos[i])
			in[i] = false
		case op < 8 && h.Len() > 0:
			want := least()
			if got := h.Take(); got != want {
				t.Fatalf("Take = %d (key %d), want %d (key %d)", got, key[got], want, key[want])
			}
			heap.Pop(ref)
			in[want] = false
		case op == 8 && int(ops[k+1]) < 8:
			h.Clear()
			for ref.Len() > 0 {
				heap.Pop(ref)
			}
			clear(in)
		}
		if h.Len() != ref.Len() || h.Len() > 0 && h.Top() != ref.items[0] {
			t.Fatalf("after op %d on %d: %d items (top %v), container/heap %d (top %v)", ops[k], i, h.Len(), h.heap, ref.Len(), ref.items)
		}
		for j := range n {
			if h.Contains(j) != in[j] {
				t.Fatalf("item %d: Contains %v, want %v", j, h.Contains(j), in[j])
			}
		}
		if err := h.valid(); err != "" {
			t.Fatalf("after op %d on %d: %s", ops[k], i, err)
		}
	}
}

// valid checks the 4-ary heap's invariants: each entry's key is its item's,
// each parent precedes its children and each item's position is where it
// sits.
func (h *Heap[K]) valid() string {
	for j, e := range h.heap {
		if e.key != h.key[e.item] {
			return fmt.Sprintf("entry %d: item %d keyed %v, its key is %v", j, e.item, e.key, h.key[e.item])
		}
		if int(h.pos[e.item]) != j {
			return fmt.Sprintf("entry %d: item %d's position is %d", j, e.item, h.pos[e.item])
		}
		if j > 0 && precedes(e, h.heap[(j-1)/arity]) {
			return fmt.Sprintf("entry %d precedes its parent: %v", j, h.heap)
		}
	}
	return ""
}

// TestAgainstContainerHeap runs check on random operation sequences.
func TestAgainstContainerHeap(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 400 {
		ops := make([]byte, 600)
		for i := range ops {
			ops[i] = byte(rng.UintN(256))
		}
		check(t, 1+rng.IntN(40), trial%2 == 0, ops)
	}
}

// FuzzAgainstContainerHeap: go test -fuzz FuzzAgainstContainerHeap ./sched/internal/keyheap/
func FuzzAgainstContainerHeap(f *testing.F) {
	f.Add(uint8(5), true, []byte{0, 1, 2, 3, 5, 1, 6, 0, 8, 0})
	f.Add(uint8(33), false, []byte{0, 1, 0, 2, 0, 3, 2, 1, 4, 2, 7, 0})
	f.Fuzz(func(t *testing.T, n uint8, full bool, ops []byte) {
		check(t, 1+int(n%64), full, ops)
	})
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

// TestSiblings: an item moves between two heaps sharing positions, each
// ordered by its own keys.
func TestSiblings(t *testing.T) {
	a := New([]int{3, 1, 2})
	b := a.Sibling([]int{1, 2, 3})
	for i := range 3 {
		a.Add(i)
	}
	if got := a.Take(); got != 1 {
		t.Fatalf("a.Take = %d, want 1", got)
	}
	if b.Contains(1) {
		t.Fatal("a took item 1, yet its family still holds it")
	}
	b.Add(1)
	b.Add(a.Take()) // 2
	if got := b.Top(); got != 1 {
		t.Fatalf("b.Top = %d, want 1 (key 2 before key 3)", got)
	}
	if a.Len() != 1 || b.Len() != 2 || a.Top() != 0 {
		t.Fatalf("a holds %d (top %d), b %d; want 1 (top 0) and 2", a.Len(), a.Top(), b.Len())
	}
	defer func() {
		if recover() == nil {
			t.Fatal("Sibling with a different item count did not panic")
		}
	}()
	a.Sibling([]int{1})
}

// fixWorkload is HyDra's placement loop at G = 4096: the top of 4096 items
// takes a load and sinks.
func fixWorkload(n int) ([]int64, []int64) {
	rng := rand.New(rand.NewPCG(3, 4))
	key := make([]int64, n)
	adds := make([]int64, 1<<16)
	for i := range adds {
		adds[i] = 1 + rng.Int64N(1<<20)
	}
	return key, adds
}

// BenchmarkFix compares the package's sifting with the same heap on
// container/heap (refHeap) on fixWorkload.
func BenchmarkFix(b *testing.B) {
	const n = 4096
	b.Run("keyheap", func(b *testing.B) {
		key, adds := fixWorkload(n)
		h := Full(key)
		k := 0
		for b.Loop() {
			top := h.Top()
			key[top] += adds[k&(len(adds)-1)]
			h.Fix(top)
			k++
		}
	})
	b.Run("container-heap", func(b *testing.B) {
		key, adds := fixWorkload(n)
		h := &refHeap{key: key, items: make([]int, n), pos: make([]int, n)}
		for i := range n {
			h.items[i], h.pos[i] = i, i
		}
		heap.Init(h)
		k := 0
		for b.Loop() {
			top := h.items[0]
			key[top] += adds[k&(len(adds)-1)]
			heap.Fix(h, 0)
			k++
		}
	})
}
