package hydra

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/dcpsim/dcpsim/sched/internal/keyheap"
)

// TestWinnerTreeAgainstKeyheap drives random adds, key increases and
// decreases, removals and clears on a winnerTree and on a keyheap.Heap over
// the same items (the multiples of 2^shift) and keys, and checks after every
// operation that they agree on the length and the top: the tree must make
// every choice the heap made, ties (many: keys are drawn from a few values)
// to the lower item included.
func TestWinnerTreeAgainstKeyheap(t *testing.T) {
	for _, tc := range []struct{ ranks, shift int }{{1, 0}, {2, 0}, {8, 0}, {64, 0}, {64, 2}, {4096, 1}, {16, 4}} {
		rng := rand.New(rand.NewPCG(uint64(tc.ranks), uint64(tc.shift)))
		leaves := tc.ranks >> tc.shift
		key := make([]int64, tc.ranks)
		tree := newWinnerTree(key, uint(tc.shift), leaves)
		ref := keyheap.New(key)
		var in []int // items in both, unordered
		for op := range 20000 {
			item := rng.IntN(leaves) << tc.shift
			if op%1000 == 0 {
				// A run of adds before any query, as when an MB opens its
				// groups: the tree settles them at once.
				for range rng.IntN(leaves + 1) {
					if item := rng.IntN(leaves) << tc.shift; !ref.Contains(item) {
						key[item] = rng.Int64N(4)
						tree.Add(item)
						ref.Add(item)
						in = append(in, item)
					}
				}
			}
			switch r := rng.IntN(10); {
			case r < 4 && !ref.Contains(item):
				key[item] = rng.Int64N(4) * int64(1+rng.IntN(2))
				tree.Add(item)
				ref.Add(item)
				in = append(in, item)
			case r < 7 && ref.Len() > 0:
				// The packer's move: the top takes load (or, here, sheds it).
				top := ref.Top()
				key[top] += rng.Int64N(3) - 1
				key[top] = max(key[top], 0)
				tree.Fix(top)
				ref.Fix(top)
			case r < 9 && len(in) > 0:
				k := rng.IntN(len(in))
				item = in[k]
				in[k] = in[len(in)-1]
				in = in[:len(in)-1]
				tree.Remove(item)
				ref.Remove(item)
			case r == 9 && rng.IntN(50) == 0:
				tree.Clear()
				ref.Clear()
				in = in[:0]
			}
			if tree.Len() != ref.Len() {
				t.Fatalf("ranks %d shift %d op %d: Len %d, keyheap %d", tc.ranks, tc.shift, op, tree.Len(), ref.Len())
			}
			if ref.Len() > 0 && tree.Top() != ref.Top() {
				t.Fatalf("ranks %d shift %d op %d: Top %d (key %d), keyheap %d (key %d)",
					tc.ranks, tc.shift, op, tree.Top(), key[tree.Top()], ref.Top(), key[ref.Top()])
			}
		}
	}
}

// TestWinnerTreeRejectsNegativeKeys: a negative key would read as absent or
// wrap, so Add refuses it.
func TestWinnerTreeRejectsNegativeKeys(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("Add of key -1 did not panic")
		}
	}()
	key := []int64{0, -1}
	tree := newWinnerTree(key, 0, 2)
	tree.Add(1)
}

// BenchmarkQueueFix is the packer's placement pattern on one size class of
// 3,200 open groups among 4,096 first ranks: the top takes a sequence (its key
// grows) and is fixed, once per op, on the winner tree and on keyheap.
func BenchmarkQueueFix(b *testing.B) {
	const ranks, groups = 4096, 3200
	setup := func() []int64 {
		key := make([]int64, ranks)
		for i := range key {
			key[i] = int64(i*7919) % 1000
		}
		return key
	}
	b.Run("winnerTree", func(b *testing.B) {
		key := setup()
		q := newWinnerTree(key, 0, ranks)
		for i := range groups {
			q.Add(i)
		}
		for i := 0; b.Loop(); i++ {
			top := q.Top()
			key[top] += int64(100 + i%64)
			q.Fix(top)
		}
	})
	b.Run("keyheap", func(b *testing.B) {
		key := setup()
		q := keyheap.New(key)
		for i := range groups {
			q.Add(i)
		}
		for i := 0; b.Loop(); i++ {
			top := q.Top()
			key[top] += int64(100 + i%64)
			q.Fix(top)
		}
	})
}

// TestSortLongestFirstAgainstSort checks the radix sort against slices.Sort of
// the same items on lengths of several spreads (one pass, two, three; digits
// of varying width; a single length; none).
func TestSortLongestFirstAgainstSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	for _, maxLen := range []int{1, 2, 3, 100, 2048, 4097, 1 << 18, 1 << 22, MaxSequenceTokens} {
		for _, n := range []int{0, 1, 2, 1000} {
			lengths := make([]int, n)
			for i := range lengths {
				lengths[i] = 1 + rng.IntN(maxLen)
				if maxLen > 4 && i%3 == 0 {
					lengths[i] &^= 0xff // low bits shared: a skipped low digit
				}
				lengths[i] = max(lengths[i], 1)
			}
			want := make([]uint64, n)
			for id, s := range lengths {
				want[id] = uint64(MaxSequenceTokens-s)<<32 | uint64(id)
			}
			slices.Sort(want)
			if got := sortLongestFirst(lengths); !slices.Equal(got, want) {
				t.Fatalf("max %d, n %d: sortLongestFirst differs from slices.Sort", maxLen, n)
			}
		}
	}
}
