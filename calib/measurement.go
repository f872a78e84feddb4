package calib

// Measurement is one timed operation, a row of a measurements CSV:
//
//	operation,shape,seconds,repeats
//	gemm,k=4096;m=4096;n=14336,0.00123,20
//	attention_fwd,head_dim=128;heads=32;seq=8192,0.0041,10
//
// Operation names what was timed ("gemm", "attention_fwd", "attention_bwd",
// "all_to_all_intra", "send_recv_intra", ...); Shape is a list of key=value
// integers separated by ';' (the keys each operation takes, and how its FLOPs or
// bytes follow from them, are in the package documentation, "Measurements");
// Seconds is the median over Repeats timed runs.
type Measurement struct {
	// Operation names the timed operation.
	Operation string
	// Shape holds the operation's sizes by name.
	Shape map[string]int64
	// Seconds is the median measured time of one operation.
	Seconds float64
	// Repeats is how many timed runs the median is over.
	Repeats int
}
