package calib

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/dcpsim/dcpsim/internal/safeio"
)

// ReadProfileFile reads, parses and validates a profile file, with the size
// bound of safeio.MaxProfileBytes enforced while reading.
func ReadProfileFile(path string) (*Profile, error) {
	data, err := safeio.ReadFile(path, safeio.MaxProfileBytes)
	if err != nil {
		return nil, err
	}
	p, err := ParseProfile(data, path)
	if err != nil {
		return nil, err
	}
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return p, nil
}

// ResolveProfile returns the embedded profile named arg, or reads arg as a
// profile file (ReadProfileFile) when it ends in .toml.
func ResolveProfile(arg string) (*Profile, error) {
	if strings.HasSuffix(arg, ".toml") {
		return ReadProfileFile(arg)
	}
	p, err := LookupProfile(arg)
	if err != nil {
		return nil, fmt.Errorf("%w (or a .toml file)", err)
	}
	return p, nil
}

// Encode writes p as a profile TOML file's text and checks that the text reads
// back (ParseProfile validates), so a written profile is always usable.
func (p *Profile) Encode() ([]byte, error) {
	var buf bytes.Buffer
	if err := p.WriteTOML(&buf); err != nil {
		return nil, err
	}
	if _, err := ParseProfile(buf.Bytes(), p.Name); err != nil {
		return nil, fmt.Errorf("profile %q does not read back: %w", p.Name, err)
	}
	return buf.Bytes(), nil
}
