// Package calibrate is calibration's flow, from measurements to a profile:
// fit a measurements file, an nccl-tests output or a PyTorch profiler trace
// onto a base profile (calib's fits, printing what was fitted and what was
// refused), compare what the cost model predicts with what was measured, run
// a measurement sweep on a hardware backend (hwbackend), price single
// operators for a person to set beside their own kernel timings, and write
// the profile. It is the library behind dcpsim calibrate and dcpsim costs
// attention/gemm/memory-bound, at the edge: it reads and writes files; the
// fits and the pricing it calls are pure (calib, costmodel/compute,
// sim/network). Errors about an input are marked bad input (badinput).
package calibrate
