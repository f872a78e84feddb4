package sched

import "testing"

// TestLegalMicrobatchCount: the least count >= m that CheckMicrobatchCount
// accepts, brute force over small pp, N, m.
func TestLegalMicrobatchCount(t *testing.T) {
	for p := 1; p <= 9; p++ {
		for n := 1; n <= 20; n++ {
			for m := 1; m <= 60; m++ {
				want := -1
				for c := m; c <= m+2*n+p; c++ {
					if CheckMicrobatchCount(p, 2, c, n) == nil {
						want = c
						break
					}
				}
				got, ok := LegalMicrobatchCount(m, p, n)
				if ok != (want >= 0) || ok && got != want {
					t.Fatalf("p=%d N=%d m=%d: got %d (ok %v), want %d", p, n, m, got, ok, want)
				}
			}
		}
	}
}

func TestCheckMicrobatchCount(t *testing.T) {
	for _, c := range []struct {
		pp, vpp, m, n int
		ok            bool
	}{
		{4, 1, 1, 0, true}, {4, 1, 3, 0, true}, // 1F1B: any count
		{4, 2, 4, 0, true}, {4, 2, 8, 0, true}, {4, 2, 3, 0, false}, // N = pp = 4 > m = 3
		{4, 2, 9, 0, false}, {4, 2, 10, 6, true}, // 9 mod 4 = 1 < 4; 10 mod 6 = 4 >= 4
		{4, 2, 8, 3, false}, // N < pp
		{0, 1, 1, 0, false}, {1, 0, 1, 0, false}, {1, 1, 0, 0, false},
	} {
		if err := CheckMicrobatchCount(c.pp, c.vpp, c.m, c.n); (err == nil) != c.ok {
			t.Errorf("CheckMicrobatchCount(pp %d, vpp %d, m %d, N %d) = %v; want ok %v", c.pp, c.vpp, c.m, c.n, err, c.ok)
		}
	}
}
