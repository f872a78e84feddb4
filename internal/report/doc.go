// Package report turns results into things people read: tables, JSON, figures,
// Perfetto traces and the reproduction report (REPORT.md).
// It lives at the edge of dcpsim: it writes files (atomically, through
// internal/safeio) and it is the only package that imports gonum/plot.
package report
