package scenarios

import (
	"embed"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"

	"github.com/dcpsim/dcpsim/internal/safeio"
)

//go:embed *.toml
var presetFS embed.FS

// DefaultPreset is the scenario `dcpsim` runs when none is named: the paper's
// 512-GPU H20 testbed at 256K context (hydra-paper.txt §6.1-6.2).
const DefaultPreset = "testbed-256k"

// PresetNames lists the embedded scenarios, sorted.
func PresetNames() []string {
	entries, err := fs.Glob(presetFS, "*.toml")
	if err != nil {
		panic("scenarios: " + err.Error()) // the pattern is constant
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, strings.TrimSuffix(e, ".toml"))
	}
	sort.Strings(names)
	return names
}

// PresetSource returns the TOML text of an embedded scenario.
func PresetSource(name string) ([]byte, error) {
	data, err := presetFS.ReadFile(name + ".toml")
	if err != nil {
		return nil, &Error{File: name, Problems: []Problem{{Message: fmt.Sprintf(
			"no embedded scenario %q; known: %s", name, strings.Join(PresetNames(), ", "))}}}
	}
	return data, nil
}

// Preset parses an embedded scenario by name.
func Preset(name string) (*Scenario, error) {
	data, err := PresetSource(name)
	if err != nil {
		return nil, err
	}
	return Parse(data, path.Join("scenarios", name+".toml"))
}

// Load reads and parses a scenario file; a file larger than
// safeio.MaxScenarioBytes is refused once that much has been read.
func Load(file string) (*Scenario, error) {
	data, err := safeio.ReadFile(file, safeio.MaxScenarioBytes)
	if err != nil {
		return nil, &Error{File: file, Problems: []Problem{{Message: fmt.Sprintf("cannot read scenario: %v", err)}}}
	}
	sc, err := Parse(data, file)
	if err != nil {
		return nil, err
	}
	if err := sc.LoadFiles(); err != nil {
		return nil, err
	}
	return sc, nil
}

// Resolve loads arg as an embedded scenario name when it is one and as a file
// path otherwise (a path containing a separator or ending in .toml is always a
// file).
func Resolve(arg string) (*Scenario, error) {
	if !strings.ContainsAny(arg, `/\`) && !strings.HasSuffix(arg, ".toml") {
		return Preset(arg)
	}
	return Load(arg)
}
