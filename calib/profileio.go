package calib

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io"
	"math"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/BurntSushi/toml"
)

//go:embed profiles/*.toml
var profileFS embed.FS

// ProfileNames returns the names of the embedded profiles (the GPU kinds a
// scenario's cluster.gpu may name), sorted.
func ProfileNames() []string {
	entries, err := profileFS.ReadDir("profiles")
	if err != nil {
		panic("calib: embedded profiles unreadable: " + err.Error())
	}
	var names []string
	for _, e := range entries {
		if n, ok := strings.CutSuffix(e.Name(), ".toml"); ok && !e.IsDir() {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	return names
}

// LookupProfile returns the embedded profile of the named GPU kind (a fresh
// copy each call: a Profile holds no slices or maps, so the copy shares
// nothing), or an error listing the known names. Each embedded file is parsed
// once per process (a search checks thousands of layouts against a few
// kinds).
func LookupProfile(name string) (*Profile, error) {
	if !slices.Contains(ProfileNames(), name) {
		return nil, fmt.Errorf("calib: unknown GPU profile %q (known: %s)", name, strings.Join(ProfileNames(), ", "))
	}
	v, _ := embeddedProfiles.LoadOrStore(name, sync.OnceValues(func() (*Profile, error) { return parseEmbedded(name) }))
	p, err := v.(func() (*Profile, error))()
	if err != nil {
		return nil, err
	}
	cp := *p
	return &cp, nil
}

// EmbeddedProfileSource returns the text of the named embedded profile
// (calib/profiles/<name>.toml).
func EmbeddedProfileSource(name string) ([]byte, error) {
	if !slices.Contains(ProfileNames(), name) {
		return nil, fmt.Errorf("calib: unknown GPU profile %q (known: %s)", name, strings.Join(ProfileNames(), ", "))
	}
	return profileFS.ReadFile(path.Join("profiles", name+".toml"))
}

// embeddedProfiles caches parseEmbedded by name (known names only).
var embeddedProfiles sync.Map

// parseEmbedded parses the embedded profile of the named kind.
func parseEmbedded(name string) (*Profile, error) {
	file := path.Join("profiles", name+".toml")
	data, err := profileFS.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("calib: %w", err)
	}
	p, err := ParseProfile(data, "calib/"+file)
	if err != nil {
		return nil, err
	}
	if p.Name != name {
		return nil, fmt.Errorf("calib/%s: name = %q: must equal the file name %q", file, p.Name, name)
	}
	return p, nil
}

// movedKeys are keys profiles no longer have, with where their constants went;
// ParseProfile's unknown-key error names the new home.
var movedKeys = map[string]string{
	"cpython_pool_visit_seconds":     "calib.CPython.PoolVisitSeconds",
	"cpython_heap_op_seconds":        "calib.CPython.HeapOpSeconds",
	"cpython_sequence_visit_seconds": "calib.CPython.SequenceVisitSeconds",
}

// ParseProfile decodes a profile from TOML and validates it. It is strict: an
// unknown key is an error naming the key and its line (an unknown table once,
// not each key in it; a key that moved out of profiles with its new home), and
// so is every problem Validate finds. file names the data in error messages.
func ParseProfile(data []byte, file string) (*Profile, error) {
	var p Profile
	md, err := toml.Decode(string(data), &p)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if und := md.Undecoded(); len(und) > 0 {
		lines := tomlKeyLines(string(data))
		unknown := map[string]bool{}
		for _, k := range und {
			unknown[k.String()] = true
		}
		var errs []error
		for _, k := range und {
			if len(k) > 1 && unknown[k[:len(k)-1].String()] {
				continue // inside an unknown table, which is reported
			}
			key := k.String()
			hint := ""
			if home := movedKeys[key]; home != "" {
				hint = ": the CPython planner costs are not per GPU; they are " + home + " (calib/planner.go)"
			}
			if n := lineOfKey(lines, key); n > 0 {
				errs = append(errs, fmt.Errorf("%s:%d: unknown key %s%s", file, n, key, hint))
			} else {
				errs = append(errs, fmt.Errorf("%s: unknown key %s%s", file, key, hint))
			}
		}
		return nil, errors.Join(errs...)
	}
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return &p, nil
}

// constSpec is one Const of a Profile: its TOML key, how to reach it, and the
// range its value must lie in.
type constSpec struct {
	key     string
	get     func(*Profile) *Const
	lo, hi  float64
	openLo  bool // lo itself is excluded
	integer bool
	unit    string
	// optional constants may be absent: value 0 and no source
	// (Profile.Has); WriteTOML leaves them out.
	optional bool
}

// optionalCurves are the curves a profile may leave out (CurveOptional).
var optionalCurves = []string{CurveGEMMFP8, CurveAttentionFwdD192, CurveAttentionBwdD192}

// CurveOptional reports whether the curve with the given key may be absent
// from a profile: gemm_fp8 (with peak_fp8_flops) and the d_qk-192 attention
// curves.
func CurveOptional(key string) bool { return slices.Contains(optionalCurves, key) }

// absent reports whether c is an optional constant left out.
func (c Const) absent() bool { return c.Value == 0 && c.Source == "" }

// IsAbsent reports whether an optional constant was not given (no value,
// no source).
func (c Const) IsAbsent() bool { return c.absent() }

// HasCurve reports whether the profile has the curve with the given key: every
// required curve, and an optional one (CurveOptional) when it is given.
func (p *Profile) HasCurve(key string) bool {
	c, _ := p.curve(key)
	return c != nil && !(c.Max.absent() && c.Half.absent())
}

// HostBytesPerSecond is min(host_to_device, device_to_host), the rate
// activation offloading moves at both ways (ByteScale §5.2, Eq. 3), and
// false when the profile gives either rate no value.
func (p *Profile) HostBytesPerSecond() (float64, bool) {
	if p.HostToDeviceBytesPerSecond.absent() || p.DeviceToHostBytesPerSecond.absent() {
		return 0, false
	}
	return min(p.HostToDeviceBytesPerSecond.Value, p.DeviceToHostBytesPerSecond.Value), true
}

// TensorPeak is the dense BF16 peak (fp8: the FP8 peak) times
// SustainedEfficiency (1 when absent): the peak the GEMM and attention
// curves are taken against when pricing training work.
func (p *Profile) TensorPeak(fp8 bool) float64 {
	peak := p.PeakBF16FLOPs.Value
	if fp8 {
		peak = p.PeakFP8FLOPs.Value
	}
	if !p.SustainedEfficiency.absent() {
		peak *= p.SustainedEfficiency.Value
	}
	return peak
}

// SustainedFolded is a copy of p whose compute curves (GEMM, FP8 GEMM,
// attention) have their Max times SustainedEfficiency and whose
// SustainedEfficiency is absent: it prices as p does. A profile fitted on a
// training trace starts from it, since the trace's kernels already run at
// the sustained rate: its fitted curves then replace the folded ones, and
// the curves the trace does not determine keep p's sustained rate.
func (p *Profile) SustainedFolded() *Profile {
	out := *p
	if p.SustainedEfficiency.absent() {
		return &out
	}
	s := p.SustainedEfficiency
	for _, key := range curveKeys {
		if !isComputeCurve(key) || !out.HasCurve(key) {
			continue
		}
		c, _ := out.curve(key)
		c.Max.Value *= s.Value
		c.Max.Source = fmt.Sprintf("%s; × sustained_efficiency %g (%s)", c.Max.Source, s.Value, s.Source)
	}
	out.SustainedEfficiency = Const{}
	return &out
}

// HasFP8 reports whether the profile prices FP8 GEMMs: peak_fp8_flops and
// gemm_fp8 are given.
func (p *Profile) HasFP8() bool { return !p.PeakFP8FLOPs.absent() && p.HasCurve(CurveGEMMFP8) }

// constSpecs lists every Const of a Profile in TOML order. The ranges are wide
// (a CPU measured as a "GPU" must fit) and only catch unit slips and typos.
func constSpecs() []constSpec {
	specs := []constSpec{
		{key: "peak_bf16_flops", get: func(p *Profile) *Const { return &p.PeakBF16FLOPs }, lo: 1e9, hi: 1e17, unit: "FLOP/s"},
		{key: "peak_fp8_flops", get: func(p *Profile) *Const { return &p.PeakFP8FLOPs }, lo: 1e9, hi: 1e17, unit: "FLOP/s", optional: true},
		{key: "hbm_bytes", get: func(p *Profile) *Const { return &p.HBMBytes }, lo: 1e8, hi: 1e14, unit: "bytes"},
		{key: "hbm_bytes_per_second", get: func(p *Profile) *Const { return &p.HBMBytesPerSecond }, lo: 1e9, hi: 1e14, unit: "bytes/s"},
		{key: "gpus_per_node", get: func(p *Profile) *Const { return &p.GPUsPerNode }, lo: 1, hi: 1024, integer: true, unit: "GPUs"},
		{key: "nvlink_bytes_per_second", get: func(p *Profile) *Const { return &p.NVLinkBytesPerSecond }, lo: 1e8, hi: 1e14, unit: "bytes/s"},
		{key: "nic_bytes_per_second", get: func(p *Profile) *Const { return &p.NICBytesPerSecond }, lo: 1e7, hi: 1e13, unit: "bytes/s"},
		{key: "host_to_device_bytes_per_second", get: func(p *Profile) *Const { return &p.HostToDeviceBytesPerSecond }, lo: 1e8, hi: 1e13, unit: "bytes/s", optional: true},
		{key: "device_to_host_bytes_per_second", get: func(p *Profile) *Const { return &p.DeviceToHostBytesPerSecond }, lo: 1e8, hi: 1e13, unit: "bytes/s", optional: true},
		{key: "intra_base_latency_seconds", get: func(p *Profile) *Const { return &p.IntraBaseLatencySeconds }, lo: 0, hi: 0.01, unit: "s"},
		{key: "intra_hop_latency_seconds", get: func(p *Profile) *Const { return &p.IntraHopLatencySeconds }, lo: 0, hi: 0.01, unit: "s"},
		{key: "inter_base_latency_seconds", get: func(p *Profile) *Const { return &p.InterBaseLatencySeconds }, lo: 0, hi: 0.01, unit: "s"},
		{key: "inter_hop_latency_seconds", get: func(p *Profile) *Const { return &p.InterHopLatencySeconds }, lo: 0, hi: 0.01, unit: "s"},
		{key: "inter_p2p_latency_seconds", get: func(p *Profile) *Const { return &p.InterP2PLatencySeconds }, lo: 0, hi: 0.01, unit: "s"},
		{key: "kernel_launch_seconds", get: func(p *Profile) *Const { return &p.KernelLaunchSeconds }, lo: 0, hi: 0.001, unit: "s"},
		{key: "memory_bound_efficiency", get: func(p *Profile) *Const { return &p.MemoryBoundEfficiency }, lo: 0, hi: MaxEfficiency, openLo: true, unit: "fraction of HBM bandwidth"},
		{key: "sustained_efficiency", get: func(p *Profile) *Const { return &p.SustainedEfficiency }, lo: 0.3, hi: 1, unit: "fraction of the curves' tensor throughput", optional: true},
	}
	specs = append(specs, constSpec{key: "all_to_all_inter_scale", get: func(p *Profile) *Const { return &p.AllToAllInterScale },
		lo: 0, hi: 10, unit: "slowdown per doubling of the nodes beyond 2"})
	for _, key := range curveKeys {
		opt := CurveOptional(key)
		specs = append(specs,
			constSpec{key: key + ".max", get: func(p *Profile) *Const { c, _ := p.curve(key); return &c.Max },
				lo: 0, hi: MaxEfficiency, openLo: true, unit: "fraction of peak", optional: opt},
			constSpec{key: key + ".half", get: func(p *Profile) *Const { c, _ := p.curve(key); return &c.Half },
				lo: 0, hi: 1e12, unit: "tokens or bytes", optional: opt})
	}
	return specs
}

var profileNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// ValidateProfileName checks a profile name as Validate does: letters, digits,
// '.', '_' and '-', starting with a letter or digit, at most 64 characters. The
// error names the key ("name = ...").
func ValidateProfileName(name string) error {
	if !profileNameRE.MatchString(name) {
		return fmt.Errorf("name = %q: must match %s", name, profileNameRE)
	}
	return nil
}

// Validate checks the profile: a name of [A-Za-z0-9._-] (at most 64 characters),
// and every Const with a non-empty source and a finite value in its sane range
// (curve Max in (0, MaxEfficiency], Half >= 0, gpus_per_node an integer, ...).
// It returns every problem, joined, each naming the TOML key.
func (p *Profile) Validate() error {
	var errs []error
	if err := ValidateProfileName(p.Name); err != nil {
		errs = append(errs, err)
	}
	for _, s := range constSpecs() {
		c := s.get(p)
		if s.optional && c.absent() {
			continue
		}
		if strings.TrimSpace(c.Source) == "" {
			errs = append(errs, fmt.Errorf("%s.source: empty: every constant needs its provenance (URL, paper table, fit:<file> or assumption: <why>)", s.key))
		}
		v := c.Value
		bad := math.IsNaN(v) || v < s.lo || v > s.hi || (s.openLo && v == s.lo) || (s.integer && v != math.Trunc(v))
		if bad {
			lo := "["
			if s.openLo {
				lo = "("
			}
			what := ""
			if s.integer {
				what = "an integer "
			}
			errs = append(errs, fmt.Errorf("%s.value = %v: must be %sin %s%g, %g] %s", s.key, v, what, lo, s.lo, s.hi, s.unit))
		}
	}
	for _, key := range optionalCurves {
		c, _ := p.curve(key)
		if c.Max.absent() != c.Half.absent() {
			errs = append(errs, fmt.Errorf("%s: give both %s.max and %s.half, or neither (the curve is optional)", key, key, key))
		}
	}
	if p.HostToDeviceBytesPerSecond.absent() != p.DeviceToHostBytesPerSecond.absent() {
		errs = append(errs, errors.New("host_to_device_bytes_per_second and device_to_host_bytes_per_second: give both (the PCIe copy rates offload needs) or neither (without: the GPU cannot offload)"))
	}
	if p.PeakFP8FLOPs.absent() != !p.HasCurve(CurveGEMMFP8) {
		errs = append(errs, errors.New("peak_fp8_flops and gemm_fp8: give both (a part with FP8 tensor cores) or neither (without: it cannot train in FP8)"))
	}
	return errors.Join(errs...)
}

// MarshalTOML encodes the profile as WriteTOML does.
func (p *Profile) MarshalTOML() ([]byte, error) {
	var b bytes.Buffer
	if err := p.WriteTOML(&b); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// WriteTOML writes the profile as TOML that ParseProfile reads back to an equal
// Profile: name and description, then one table per constant ([peak_bf16_flops],
// ..., [gemm.max], [gemm.half], ...) with value and source, in field order, values
// in the shortest form that round-trips. The output is deterministic. It refuses
// an invalid profile.
func (p *Profile) WriteTOML(w io.Writer) error {
	if err := p.Validate(); err != nil {
		return fmt.Errorf("calib: profile %q: %w", p.Name, err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# dcpsim calibration profile: SI units (FLOP/s, bytes, bytes/s, seconds, tokens);\n")
	fmt.Fprintf(&b, "# every constant's source is its provenance. Curves: eta(x) = max*x/(x + half).\n")
	fmt.Fprintf(&b, "name = %s\n", tomlQuote(p.Name))
	fmt.Fprintf(&b, "description = %s\n", tomlQuote(p.Description))
	for _, s := range constSpecs() {
		c := s.get(p)
		if s.optional && c.absent() {
			continue
		}
		fmt.Fprintf(&b, "\n[%s]\nvalue = %s\nsource = %s\n", s.key, tomlFloat(c.Value), tomlQuote(c.Source))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// tomlFloat formats v as a TOML float that parses back to v exactly.
func tomlFloat(v float64) string {
	s := strconv.FormatFloat(v, 'g', -1, 64)
	if !strings.ContainsAny(s, ".eEn") { // "n": NaN and Inf, which Validate refuses anyway
		s += ".0"
	}
	return s
}

// tomlQuote writes s as a TOML basic string.
func tomlQuote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// tomlKeyLines maps the dotted keys of a simple TOML document (bare keys, [table]
// headers, key = value lines) to the line where each is first written; it is only
// for error messages, and unknown shapes of TOML just get no line.
func tomlKeyLines(src string) map[string]int {
	lines := map[string]int{}
	table := ""
	for i, line := range strings.Split(src, "\n") {
		t := strings.TrimSpace(line)
		if t == "" || t[0] == '#' {
			continue
		}
		var key string
		if strings.HasPrefix(t, "[") {
			end := strings.Index(t, "]")
			if end < 0 {
				continue
			}
			table = normKey(strings.Trim(t[:end], "[] "))
			key = table
		} else {
			eq := strings.Index(t, "=")
			if eq < 0 {
				continue
			}
			key = normKey(t[:eq])
			if table != "" {
				key = table + "." + key
			}
		}
		if _, ok := lines[key]; !ok {
			lines[key] = i + 1
		}
	}
	return lines
}

// normKey removes the blanks around the dots of a dotted key.
func normKey(k string) string {
	parts := strings.Split(k, ".")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	return strings.Join(parts, ".")
}

// lineOfKey returns the line of key or of its longest written prefix, or 0.
func lineOfKey(lines map[string]int, key string) int {
	for k := key; k != ""; {
		if n, ok := lines[k]; ok {
			return n
		}
		dot := strings.LastIndex(k, ".")
		if dot < 0 {
			return 0
		}
		k = k[:dot]
	}
	return 0
}

// CollectiveLatencySeconds is the base latency α of a collective among ranks GPUs:
// base + (ranks−1)·hop with the intra-node or inter-node constants (NCCL-style,
// costmodel §5.2; for ranks ≤ 1 it is 0).
func (p *Profile) CollectiveLatencySeconds(ranks int, inter bool) float64 {
	if ranks <= 1 {
		return 0
	}
	base, hop := p.IntraBaseLatencySeconds.Value, p.IntraHopLatencySeconds.Value
	if inter {
		base, hop = p.InterBaseLatencySeconds.Value, p.InterHopLatencySeconds.Value
	}
	return base + float64(ranks-1)*hop
}
