package calibrate_test

import (
	"fmt"

	"github.com/dcpsim/dcpsim/calib"
	"github.com/dcpsim/dcpsim/calibrate"
)

// The price the simulator puts on one BF16 GEMM and one memory-bound kernel
// of an H100, to set beside a kernel's own timing.
func ExamplePriceGEMM() {
	h100, err := calib.LookupProfile("H100-SXM")
	if err != nil {
		panic(err)
	}
	g, err := calibrate.PriceGEMM(h100, 8192, 8192, 8192, false)
	if err != nil {
		panic(err)
	}
	mem := calibrate.PriceMemoryBound(h100, 1e9)
	fmt.Printf("GEMM 8192³: %.3f ms, %.0f TFLOP/s, %s-bound\n", g.Seconds*1e3, g.TFLOPs, g.Bound)
	fmt.Printf("1 GB through HBM: %.3f ms\n", mem.Seconds*1e3)
	// Output:
	// GEMM 8192³: 2.096 ms, 525 TFLOP/s, compute-bound
	// 1 GB through HBM: 0.333 ms
}
