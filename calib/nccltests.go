package calib

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/dcpsim/dcpsim/badinput"
)

// NCCLTests is what ReadNCCLTests found in one nccl-tests output: the
// collective, its ranks and nodes, and one measurement per timed row and
// placement (out-of-place, in-place).
type NCCLTests struct {
	// Collective is the measured kind (KindAllReduce, ...), from the
	// program's name (all_reduce_perf, ...).
	Collective string
	// Ranks, Nodes and GPUsPerNode are from its device lines (hostnames).
	Ranks, Nodes, GPUsPerNode int
	// Devices are the distinct device names, e.g. "NVIDIA H100 80GB HBM3".
	Devices []string
	// Rows is the number of sizes; Measurements two per row (out-of-place,
	// in-place), operation <kind>_intra on one node, <kind>_inter across
	// nodes.
	Rows         int
	Measurements []Measurement
}

// MaxNCCLTestsRows bounds the sizes one output may hold (nccl-tests' own
// -b 8 -e 16G -f 2 sweep has 32).
const MaxNCCLTestsRows = 1 << 16

// MaxNCCLTestsRanks bounds the device lines (one per rank) one output may
// hold: 131,072 ranks.
const MaxNCCLTestsRanks = 1 << 17

// MaxNCCLTestsName bounds a host or device name as kept (longer ones are
// cut; nccl-tests prints names of tens of bytes).
const MaxNCCLTestsName = 256

// ncclName is a host, device or program name as kept: cut to
// MaxNCCLTestsName bytes, its control characters escaped
// (badinput.PrintableLine), so a hostile output cannot drive the terminal
// it is printed on.
func ncclName(s string) string {
	if len(s) > MaxNCCLTestsName {
		s = strings.ToValidUTF8(s[:MaxNCCLTestsName], "") + "..."
	}
	return badinput.PrintableLine(s)
}

// ncclDevices collects the ranks' hosts and the distinct device names, in
// order of appearance, at most MaxNCCLTestsRanks ranks.
type ncclDevices struct {
	hosts, devices []string
	seen           map[string]bool
}

// add records one rank on host with device (device "" adds no name).
func (d *ncclDevices) add(name, where, host, device string) error {
	if len(d.hosts) >= MaxNCCLTestsRanks {
		return fmt.Errorf("%s: %s: more than %d device lines (MaxNCCLTestsRanks)", name, where, MaxNCCLTestsRanks)
	}
	d.hosts = append(d.hosts, ncclName(host))
	if device == "" {
		return nil
	}
	if d.seen == nil {
		d.seen = map[string]bool{}
	}
	if device = ncclName(device); !d.seen[device] {
		d.seen[device] = true
		d.devices = append(d.devices, device)
	}
	return nil
}

// ncclPrograms maps nccl-tests' program names to collective kinds.
var ncclPrograms = map[string]string{
	"all_reduce_perf":     KindAllReduce,
	"all_gather_perf":     KindAllGather,
	"reduce_scatter_perf": KindReduceScatter,
	"alltoall_perf":       KindAllToAll,
	"sendrecv_perf":       KindSendRecv,
}

// NCCLTestsPrograms lists the nccl-tests programs ReadNCCLTests reads.
func NCCLTestsPrograms() []string {
	var out []string
	for p := range ncclPrograms {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

// ncclRow is one size's timings: out-of-place and in-place microseconds and
// the algorithm bandwidth each reports.
type ncclRow struct {
	size             float64
	times, algbws    [2]float64
	haveInPlace      bool
	lineOrIndex      int
	sizeText, column string
}

// ReadNCCLTests reads one nccl-tests output, its text (the size, count,
// type, redop, root, time, algbw, busbw, #wrong columns, out-of-place then
// in-place) or its JSON (-J, "results"), into measurements of the collective
// for calib.Fit. The collective comes from the output's "Collective test
// starting: <program>" line (JSON: args[0]), else from program (a name of
// NCCLTestsPrograms; it must agree when both are there); the ranks and nodes
// from its device lines ("#  Rank ... on HOST device ..."; JSON:
// config.devices), else ranks and gpusPerNode (> 0). Every row is checked:
// sizes positive and increasing, times positive, and algbw = size/time in
// GB/s within 5% (the columns' units: bytes, microseconds, GB/s), so a file
// in other units, truncated or not an nccl-tests output is an error naming
// the line and the column.
func ReadNCCLTests(r io.Reader, name, program string, ranks, gpusPerNode int) (*NCCLTests, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	out := &NCCLTests{}
	var rows []ncclRow
	var hosts []string
	var prog string
	if t := bytes.TrimSpace(data); len(t) > 0 && t[0] == '{' {
		prog, hosts, out.Devices, rows, err = readNCCLJSON(t, name)
	} else {
		prog, hosts, out.Devices, rows, err = readNCCLText(data, name)
	}
	if err != nil {
		return nil, err
	}
	switch {
	case prog == "" && program == "":
		return nil, fmt.Errorf("%s: no \"Collective test starting\" line names the program: give it (one of %s)", name, strings.Join(NCCLTestsPrograms(), ", "))
	case prog != "" && program != "" && prog != program:
		return nil, fmt.Errorf("%s: the output is of %s, not %s", name, prog, program)
	case prog == "":
		prog = program
	}
	kind, ok := ncclPrograms[prog]
	if !ok {
		return nil, fmt.Errorf("%s: program \"%s\": not one dcpsim calibrates (known: %s)", name, prog, strings.Join(NCCLTestsPrograms(), ", "))
	}
	out.Collective = kind
	if err := out.layout(name, hosts, ranks, gpusPerNode); err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("%s: no result rows (a truncated output, or not nccl-tests')", name)
	}
	op := kind + "_intra"
	if out.Nodes > 1 {
		op = kind + "_inter"
	}
	for i, row := range rows {
		if i > 0 && row.size <= rows[i-1].size {
			return nil, fmt.Errorf("%s: %s: size %s: sizes must increase", name, row.where(), row.sizeText)
		}
		for k := range 2 {
			if k == 1 && !row.haveInPlace {
				continue
			}
			t, bw := row.times[k], row.algbws[k]
			if !(t > 0) || math.IsInf(t, 0) {
				return nil, fmt.Errorf("%s: %s: time %v: must be a positive number of microseconds", name, row.where(), t)
			}
			if want := row.size / t / 1e3; !(math.Abs(bw-want) <= 0.05*want+0.006) {
				return nil, fmt.Errorf("%s: %s: algbw %v GB/s but size/time = %.4g GB/s: the columns are not bytes, microseconds and GB/s", name, row.where(), bw, want)
			}
			shape := map[string]int64{"bytes": int64(row.size), "ranks": int64(out.Ranks)}
			if out.Nodes > 1 {
				shape["gpus_per_node"] = int64(out.GPUsPerNode)
			}
			out.Measurements = append(out.Measurements, Measurement{Operation: op, Shape: shape, Seconds: t * 1e-6, Repeats: 1})
		}
	}
	out.Rows = len(rows)
	return out, nil
}

// where names a row for messages.
func (r ncclRow) where() string {
	if r.column != "" {
		return fmt.Sprintf("results[%d]", r.lineOrIndex)
	}
	return fmt.Sprintf("line %d", r.lineOrIndex)
}

// layout sets the ranks and nodes from the device lines' hosts, or from the
// given counts.
func (n *NCCLTests) layout(name string, hosts []string, ranks, gpusPerNode int) error {
	if len(hosts) > 0 {
		distinct := slices.Compact(slices.Sorted(slices.Values(hosts)))
		n.Ranks, n.Nodes = len(hosts), len(distinct)
		if n.Ranks%n.Nodes != 0 {
			return fmt.Errorf("%s: %d ranks on %d hosts: not the same GPUs per node", name, n.Ranks, n.Nodes)
		}
		n.GPUsPerNode = n.Ranks / n.Nodes
		if ranks > 0 && ranks != n.Ranks {
			return fmt.Errorf("%s: %d ranks in its device lines, %d given", name, n.Ranks, ranks)
		}
		return nil
	}
	if ranks < 2 || gpusPerNode < 1 || (ranks > gpusPerNode && ranks%gpusPerNode != 0) {
		return fmt.Errorf("%s: no device lines (\"#  Rank ... on HOST ...\"): give the ranks (>= 2) and GPUs per node (dividing them)", name)
	}
	n.Ranks, n.GPUsPerNode = ranks, min(gpusPerNode, ranks)
	n.Nodes = n.Ranks / n.GPUsPerNode
	return nil
}

// readNCCLText reads nccl-tests' text output.
func readNCCLText(data []byte, name string) (prog string, hosts, devices []string, rows []ncclRow, err error) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	line := 0
	units := false
	var devs ncclDevices
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" {
			continue
		}
		if rest, ok := strings.CutPrefix(text, "#"); ok {
			rest = strings.TrimSpace(rest)
			switch {
			case strings.HasPrefix(rest, "Collective test starting:"):
				prog = ncclName(strings.TrimSpace(strings.TrimPrefix(rest, "Collective test starting:")))
			case strings.HasPrefix(rest, "Rank "):
				f := strings.Fields(rest)
				i := slices.Index(f, "on")
				if i < 0 || i+1 >= len(f) {
					break
				}
				dev := ""
				if j := strings.Index(rest, "] "); j >= 0 {
					dev = strings.TrimSpace(rest[j+2:])
				}
				if err := devs.add(name, fmt.Sprintf("line %d", line), f[i+1], dev); err != nil {
					return "", nil, nil, nil, err
				}
			case strings.HasPrefix(rest, "(B)"):
				if !strings.Contains(rest, "(us)") || !strings.Contains(rest, "(GB/s)") {
					return "", nil, nil, nil, fmt.Errorf("%s: line %d: the units header %q: want (B), (us) and (GB/s) columns", name, line, rest)
				}
				units = true
			}
			continue
		}
		if len(rows) >= MaxNCCLTestsRows {
			return "", nil, nil, nil, fmt.Errorf("%s: more than %d result rows", name, MaxNCCLTestsRows)
		}
		f := strings.Fields(text)
		if len(f) < 9 {
			return "", nil, nil, nil, fmt.Errorf("%s: line %d: %d columns; a result row has size, count, type, redop, root, time, algbw, busbw, #wrong (then the in-place four)", name, line, len(f))
		}
		if !units {
			return "", nil, nil, nil, fmt.Errorf("%s: line %d: a result row before the (B) (elements) ... (us) (GB/s) units header", name, line)
		}
		row := ncclRow{lineOrIndex: line, sizeText: f[0]}
		type column struct {
			col, s string
			dst    *float64
		}
		nums := []column{{"size", f[0], &row.size}, {"time", f[5], &row.times[0]}, {"algbw", f[6], &row.algbws[0]}}
		if len(f) >= 12 {
			row.haveInPlace = true
			nums = append(nums, column{"in-place time", f[9], &row.times[1]}, column{"in-place algbw", f[10], &row.algbws[1]})
		}
		for _, n := range nums {
			v, perr := strconv.ParseFloat(n.s, 64)
			if perr != nil || math.IsNaN(v) {
				return "", nil, nil, nil, fmt.Errorf("%s: line %d: %s %q: not a number", name, line, n.col, n.s)
			}
			*n.dst = v
		}
		if !(row.size >= 1 && row.size <= 1<<40) || row.size != math.Trunc(row.size) {
			return "", nil, nil, nil, fmt.Errorf("%s: line %d: size %s: must be a byte count in [1, 2^40]", name, line, f[0])
		}
		rows = append(rows, row)
	}
	if err := sc.Err(); err != nil {
		return "", nil, nil, nil, fmt.Errorf("%s: %w", name, err)
	}
	return prog, devs.hosts, devs.devices, rows, nil
}

// ncclFloat is a JSON number nccl-tests may write as the string "nan".
type ncclFloat float64

// UnmarshalJSON takes a number or "nan" (NaN, refused by the row checks).
func (f *ncclFloat) UnmarshalJSON(b []byte) error {
	if string(b) == `"nan"` {
		*f = ncclFloat(math.NaN())
		return nil
	}
	var v float64
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*f = ncclFloat(v)
	return nil
}

// ncclJSON is the part of nccl-tests' -J output ReadNCCLTests reads.
type ncclJSON struct {
	Version *int     `json:"version"`
	Args    []string `json:"args"`
	Config  struct {
		Devices []struct {
			Hostname   string `json:"hostname"`
			DeviceInfo string `json:"device_info"`
		} `json:"devices"`
	} `json:"config"`
	Results *[]struct {
		Size       *float64       `json:"size"`
		OutOfPlace *ncclPlacement `json:"out_of_place"`
		InPlace    *ncclPlacement `json:"in_place"`
	} `json:"results"`
}

// ncclPlacement is one placement's timings (time, or cpu_time with -C).
type ncclPlacement struct {
	Time    *ncclFloat `json:"time"`
	CPUTime *ncclFloat `json:"cpu_time"`
	AlgBW   ncclFloat  `json:"alg_bw"`
}

// readNCCLJSON reads nccl-tests' -J output.
func readNCCLJSON(data []byte, name string) (prog string, hosts, devices []string, rows []ncclRow, err error) {
	var j ncclJSON
	if err := json.Unmarshal(data, &j); err != nil {
		return "", nil, nil, nil, fmt.Errorf("%s: %w", name, err)
	}
	if j.Version == nil || j.Results == nil {
		return "", nil, nil, nil, errors.New(name + ": a JSON file without version and results: not nccl-tests' -J output")
	}
	if len(j.Args) > 0 {
		p := j.Args[0]
		prog = ncclName(p[strings.LastIndexAny(p, `/\`)+1:])
	}
	var devs ncclDevices
	for i, d := range j.Config.Devices {
		if err := devs.add(name, fmt.Sprintf("config.devices[%d]", i), d.Hostname, d.DeviceInfo); err != nil {
			return "", nil, nil, nil, err
		}
	}
	hosts, devices = devs.hosts, devs.devices
	if len(*j.Results) > MaxNCCLTestsRows {
		return "", nil, nil, nil, fmt.Errorf("%s: more than %d results", name, MaxNCCLTestsRows)
	}
	for i, r := range *j.Results {
		row := ncclRow{lineOrIndex: i, column: "results"}
		if r.Size == nil || !(*r.Size >= 1 && *r.Size <= 1<<40) || *r.Size != math.Trunc(*r.Size) {
			return "", nil, nil, nil, fmt.Errorf("%s: results[%d].size: must be a byte count in [1, 2^40]", name, i)
		}
		row.size, row.sizeText = *r.Size, strconv.FormatFloat(*r.Size, 'f', -1, 64)
		for k, p := range []*ncclPlacement{r.OutOfPlace, r.InPlace} {
			if p == nil {
				if k == 0 {
					return "", nil, nil, nil, fmt.Errorf("%s: results[%d]: no out_of_place timings", name, i)
				}
				continue
			}
			t := p.Time
			if t == nil {
				t = p.CPUTime
			}
			if t == nil {
				return "", nil, nil, nil, fmt.Errorf("%s: results[%d]: no time", name, i)
			}
			row.times[k], row.algbws[k] = float64(*t), float64(p.AlgBW)
			row.haveInPlace = row.haveInPlace || k == 1
		}
		rows = append(rows, row)
	}
	return prog, hosts, devices, rows, nil
}
