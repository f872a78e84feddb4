// Package arch holds no code: its test enforces dcpsim's package layering
// (docs/architecture.md): the deterministic core does no I/O, reads no clock and
// uses no global randomness, and packages import only downward.
package arch
