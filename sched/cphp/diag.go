package cphp

import (
	"fmt"
	"strconv"

	"github.com/dcpsim/dcpsim/sched"
)

// Factorization is the part of a CP × HP plan's diagnostics that usp and
// hexiseq share: the factorization chosen and the planning model's time.
// Embedded in a policy's Diagnostics, its fields keep their JSON names.
type Factorization struct {
	// Degree is P, Ulysses u, Ring r = P/u, DP the replicas G/P.
	Degree  int `json:"degree"`
	Ulysses int `json:"ulysses"`
	Ring    int `json:"ring"`
	DP      int `json:"dp"`
	// ModelledSeconds is the planning model's iteration time of the packing.
	ModelledSeconds float64 `json:"modelled_seconds"`
	// Tried counts the factorizations packed.
	Tried int `json:"tried"`
}

// Factorization returns the choice's diagnostics on a pool of poolRanks.
func (c *Choice) Factorization(poolRanks int) Factorization {
	return Factorization{Degree: c.P, Ulysses: c.U, Ring: c.P / c.U, DP: poolRanks / c.P,
		ModelledSeconds: c.Packing.Seconds, Tried: c.Tried}
}

// ChosenOption reports the chosen P and u for the options "degree" and
// "ulysses" (sched.OptionChooser).
func (f *Factorization) ChosenOption(key string) (float64, bool) {
	switch key {
	case "degree":
		return float64(f.Degree), true
	case "ulysses":
		return float64(f.Ulysses), true
	}
	return 0, false
}

// Summary lists the factorization.
func (f *Factorization) Summary() []sched.KV {
	return []sched.KV{
		{Name: "P = u × r", Value: fmt.Sprintf("%d = %d × %d", f.Degree, f.Ulysses, f.Ring)},
		{Name: "DP replicas", Value: strconv.Itoa(f.DP)},
		{Name: "modelled iteration (s)", Value: strconv.FormatFloat(f.ModelledSeconds, 'g', 4, 64)},
		{Name: "factorizations tried", Value: strconv.Itoa(f.Tried)},
	}
}

// CheckForced checks the options that force a factorization: degree P and
// Ulysses size u, each 0 (chosen per batch) or in range.
func CheckForced(degree, ulysses int) error {
	if degree != 0 && (degree < 1 || degree > sched.MaxPoolRanks) {
		return fmt.Errorf("degree = %d: must be 0 (chosen) or in [1, %d]", degree, sched.MaxPoolRanks)
	}
	if ulysses != 0 && (!sched.IsPow2(ulysses) || ulysses > sched.MaxPoolRanks) {
		return fmt.Errorf("ulysses = %d: must be 0 (chosen) or a power of two in [1, %d]", ulysses, sched.MaxPoolRanks)
	}
	return nil
}
