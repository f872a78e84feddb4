package scenarios

import "testing"

// BenchmarkParse parses and validates the largest embedded scenario (the
// weak-scaling sweep, 8 points).
func BenchmarkParse(b *testing.B) {
	src, err := PresetSource("weak-scaling")
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := Parse(src, "weak-scaling.toml"); err != nil {
			b.Fatal(err)
		}
	}
}
