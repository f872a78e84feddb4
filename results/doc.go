// Package results is the schema of what dcpsim's runs produce and the
// readers and writers of its files: a run's summary.json (Summary,
// PolicySummary), iterations.csv (IterationRow) and timings.json, a sweep's
// points and timings, a search's candidates (SearchRow), a comparison of two
// results folders (Comparison), a validation's rows (ValidationResult), the
// CSV form of any of them (WriteCSV, with JSON's names) and the Perfetto
// trace of an iteration (WriteTrace). experiment fills these types, report
// draws them; neither owns them. Reading a results file is bounded and
// strict (ReadSummary).
package results
