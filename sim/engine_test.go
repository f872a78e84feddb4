package sim

import "testing"

func TestEngineOrderAndTies(t *testing.T) {
	var e Engine
	e.At(30, 1, 0, 0)
	e.At(10, 2, 0, 0)
	e.At(30, 3, 0, 0) // same time as kind 1, scheduled later: delivered after it
	e.At(20, 4, 0, 0)
	e.At(10, 5, 0, 0)
	var kinds []uint16
	var times []Nanos
	for {
		ev, ok := e.Next()
		if !ok {
			break
		}
		if e.Now() != ev.At {
			t.Fatalf("Now %d after delivering an event at %d", e.Now(), ev.At)
		}
		kinds = append(kinds, ev.Kind)
		times = append(times, ev.At)
		if ev.Kind == 4 {
			e.After(0, 6, 0, 0) // at Now: delivered next, before the events at 30
			e.After(10, 7, 0, 0)
		}
	}
	wantKinds := []uint16{2, 5, 4, 6, 1, 3, 7}
	wantTimes := []Nanos{10, 10, 20, 20, 30, 30, 30}
	for i := range wantKinds {
		if i >= len(kinds) || kinds[i] != wantKinds[i] || times[i] != wantTimes[i] {
			t.Fatalf("delivered kinds %v at %v, want %v at %v", kinds, times, wantKinds, wantTimes)
		}
	}
	if e.Delivered() != 7 || e.Pending() != 0 {
		t.Errorf("Delivered %d Pending %d, want 7 and 0", e.Delivered(), e.Pending())
	}
}

func TestEngineRejectsThePast(t *testing.T) {
	var e Engine
	e.At(10, 0, 0, 0)
	e.Next()
	defer func() {
		if recover() == nil {
			t.Error("scheduling before Now did not panic")
		}
	}()
	e.At(9, 0, 0, 0)
}

func TestFromSeconds(t *testing.T) {
	for _, tc := range []struct {
		s    float64
		want Nanos
	}{{0, 0}, {1, 1e9}, {1.5e-9, 2}, {1.4e-9, 1}, {-2.5e-3, -2500000}, {123.456789012, 123456789012}} {
		if got := FromSeconds(tc.s); got != tc.want {
			t.Errorf("FromSeconds(%g) = %d, want %d", tc.s, got, tc.want)
		}
	}
	if got := Nanos(2500).Seconds(); got != 2.5e-6 {
		t.Errorf("Seconds = %g, want 2.5e-6", got)
	}
	defer func() {
		if recover() == nil {
			t.Error("FromSeconds(1e12) did not panic")
		}
	}()
	FromSeconds(1e12)
}
