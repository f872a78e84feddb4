package calib

// GEMMEffectiveSize is the size x at which a GEMM of m×k by k×n (m rows, n
// output features, contraction k) takes its efficiency from the GEMM curve:
// the harmonic mean 3/(1/m + 1/n + 1/k). It equals N for a square N×N×N
// product, so curves fitted to square-matmul data carry over, and it is
// symmetric in m, n and k, so the backward's data- and weight-gradient GEMMs
// (shapes m×n·n×k and k×m·m×n, permutations of the forward's) run at the
// forward's efficiency.
//
// With η(x) = Max·x/(x + Half) the time it implies is an additive roofline,
//
//	2·m·n·k / (peak·η(x)) = 2·m·n·k/(peak·Max) + (2/3)·Half·(m·n + n·k + k·m)/(peak·Max),
//
// compute at the asymptotic rate plus a term proportional to the elements of
// the two operands and the result (the traffic a tile must load and store), so
// a GEMM with few rows or a thin n or k (a fine-grained expert, a low-rank
// projection) runs below a square one of the same FLOPs. TestGEMMShapeModel
// checks it against XLA's published shape sweep of 125 H100 GEMMs
// (testdata/h100_gemm_shapes.csv holds the 64 fitted): with the H100 curve and
// the per-kernel launch time it predicts their times within 9.1% on average,
// against 11.8% for the rows-only size m of the model before it and 10.3% for
// the geometric mean; min(m, n, k) does as well (9.0%) but is not smooth and
// has no roofline reading. It returns 0 if any size is not positive.
func GEMMEffectiveSize(m, n, k float64) float64 {
	if !(m > 0 && n > 0 && k > 0) {
		return 0
	}
	return 3 / (1/m + 1/n + 1/k)
}
