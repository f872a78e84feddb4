// Package job describes what is being trained and on what: model architectures
// (with exact published presets and the derived quantities the cost model and the
// schedulers need) and the cluster and parallel layout (GPU kind and count, tp, pp,
// vpp, ep, the per-rank token budget and the hybrid data-parallel pool they imply).
//
// The package is a leaf: it imports only the standard library, does no I/O and
// keeps no state, so every other package can depend on it.
package job
