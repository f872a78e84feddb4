//go:build cuda && cgo

package cuda

import (
	"slices"
	"testing"
)

// TestShimSymbols compares the compiled C table (read through cgo) with
// Symbols(): what the shim dlsyms is what the package documents.
func TestShimSymbols(t *testing.T) {
	got, want := shimSymbols(), Symbols()
	if !slices.Equal(got, want) {
		t.Fatalf("compiled shim table:\n%v\nSymbols():\n%v", got, want)
	}
}
