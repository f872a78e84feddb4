package chakra

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// ASTRA-sim's configuration files, as its analytical backends at astra-sim
// 518bd51 read them (astra-network-analytical 599a047):
//
//   - the network (--network-configuration, YAML; NetworkParser.cpp): per
//     dimension a topology building block, its NPU count (> 1), its link
//     bandwidth in "GB/s" that the backend converts with 2^30 bytes
//     (NetworkFunction.cpp: bw_GBps_to_Bpns), and its link latency in ns. An
//     NPU's id is its address, the first dimension fastest
//     (MultiDimTopology::translate_address), and a message travels in the
//     first dimension where source and destination differ; through a Switch
//     it crosses two links, latency 2·latency + bytes/bandwidth in the
//     congestion-unaware backend.
//   - the system (--system-configuration, JSON; Sys::initialize_sys and
//     CollectiveImplLookup): the collective implementations per dimension,
//     chunking, scheduling, and the roofline's peak-perf (TFLOP/s, 10^12)
//     and local-mem-bw (GB/s, 10^9), which also prices each reduction step
//     of a ring (PacketBundle::call: three passes of the message over
//     local-mem-bw). A collective on a communicator smaller than the whole
//     machine runs as one ring over its members when the implementation
//     list has more than one entry (CommunicatorGroup::get_collective_plan);
//     with a single entry it takes that one, but the plan then frees the
//     shared implementation when the run ends, once per communicator, and
//     ASTRA-sim aborts after printing its results. So every list here has
//     one entry per dimension and the network at least two dimensions.
//   - the remote memory (--remote-memory-configuration, JSON): none.

// The configuration files' usual names: the network, the system with
// compute replayed and with the roofline, the remote memory.
const (
	AstraNetworkFile        = "network.yml"
	AstraSystemFile         = "system.json"
	AstraSystemRooflineFile = "system-roofline.json"
	AstraRemoteMemoryFile   = "remote-memory.json"
)

const (
	astraGiB     = 1 << 30
	astraMaxDims = 8
)

// AstraDim is one dimension of ASTRA-sim's analytical network: a switch
// joining NPUs NPUs (the dimensions before it multiplied).
type AstraDim struct {
	// NPUs is the dimension's size, at least 2.
	NPUs int
	// BytesPerSecond is each NPU's link bandwidth in this dimension, one
	// direction.
	BytesPerSecond float64
	// LinkSeconds is the latency of one link; a message through the switch
	// crosses two.
	LinkSeconds float64
	// Why says where the numbers come from (a comment in the file).
	Why string
}

// AstraConfig is what ASTRA-sim needs to know of a cluster beyond the
// traces: its network, and the GPU's roofline.
type AstraConfig struct {
	// Title heads the network file (a comment) and the system files'
	// "comment".
	Title string
	// Dims are the network's dimensions, fastest first; at least two.
	Dims []AstraDim
	// PeakFLOPS is the GPU's peak (peak-perf) and HBMBytesPerSecond its
	// memory bandwidth (local-mem-bw).
	PeakFLOPS, HBMBytesPerSecond float64
	// RooflineWhy says where those two come from.
	RooflineWhy string
}

// NPUs is the NPU count of the network: the product of the dimensions.
func (c *AstraConfig) NPUs() int {
	n := 1
	for _, d := range c.Dims {
		n *= d.NPUs
	}
	return n
}

// Check refuses a configuration ASTRA-sim would refuse or mis-read: fewer
// than two or more than astraMaxDims dimensions, a dimension of fewer than
// two NPUs, a bandwidth, latency, peak or memory bandwidth that is not a
// finite number above zero (latency: at least zero), a text with a newline.
func (c *AstraConfig) Check() error {
	var errs []error
	if len(c.Dims) < 2 || len(c.Dims) > astraMaxDims {
		errs = append(errs, fmt.Errorf("%d network dimensions: want 2 to %d (ASTRA-sim runs a communicator's collectives as a ring only when its implementation list has more than one entry, one per dimension)", len(c.Dims), astraMaxDims))
	}
	positive := func(v float64) bool { return v > 0 && !math.IsInf(v, 0) }
	for i, d := range c.Dims {
		if d.NPUs < 2 {
			errs = append(errs, fmt.Errorf("dimension %d: %d NPUs, want at least 2", i, d.NPUs))
		}
		if !positive(d.BytesPerSecond) {
			errs = append(errs, fmt.Errorf("dimension %d: bandwidth %v bytes/s, want > 0", i, d.BytesPerSecond))
		}
		if !(d.LinkSeconds >= 0) || math.IsInf(d.LinkSeconds, 0) {
			errs = append(errs, fmt.Errorf("dimension %d: latency %v s, want >= 0", i, d.LinkSeconds))
		}
		if strings.ContainsAny(d.Why, "\r\n") {
			errs = append(errs, fmt.Errorf("dimension %d: a newline in its note", i))
		}
	}
	if !positive(c.PeakFLOPS) || !positive(c.HBMBytesPerSecond) {
		errs = append(errs, fmt.Errorf("peak %v FLOP/s and HBM %v bytes/s: want both > 0", c.PeakFLOPS, c.HBMBytesPerSecond))
	}
	if strings.ContainsAny(c.Title+c.RooflineWhy, "\r\n") {
		errs = append(errs, errors.New("a newline in the title or the roofline's note"))
	}
	return errors.Join(errs...)
}

// decimal formats v with at most digits decimals and no trailing zeros.
func decimal(v float64, digits int) string {
	s := strconv.FormatFloat(v, 'f', digits, 64)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

// WriteNetwork writes the network file: every dimension a Switch.
func (c *AstraConfig) WriteNetwork(w io.Writer) error {
	if err := c.Check(); err != nil {
		return err
	}
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "# ASTRA-sim analytical network (astra-network-analytical's NetworkParser), %d NPUs: %s\n", c.NPUs(), c.Title)
	bw.WriteString("# bandwidth: each NPU's link in the dimension, one direction, in GB/s of 2^30 bytes (bw_GBps_to_Bpns);\n")
	bw.WriteString("# latency: ns per link, a message through a Switch crosses two.\n")
	for i, d := range c.Dims {
		fmt.Fprintf(bw, "# dimension %d: %s\n", i, d.Why)
	}
	var topo, npus, band, lat []string
	for _, d := range c.Dims {
		topo = append(topo, "Switch")
		npus = append(npus, strconv.Itoa(d.NPUs))
		band = append(band, decimal(d.BytesPerSecond/astraGiB, 4))
		lat = append(lat, decimal(d.LinkSeconds*1e9, 3))
	}
	list := func(key string, vs []string) { fmt.Fprintf(bw, "%s: [ %s ]\n", key, strings.Join(vs, ", ")) }
	list("topology", topo)
	list("npus_count", npus)
	list("bandwidth", band)
	list("latency", lat)
	return bw.Flush()
}

// astraSystem is the system file's keys, in the order written.
type astraSystem struct {
	Comment                string   `json:"comment"`
	SchedulingPolicy       string   `json:"scheduling-policy"`
	EndpointDelay          int      `json:"endpoint-delay"`
	ActiveChunks           int      `json:"active-chunks-per-dimension"`
	DatasetSplits          int      `json:"preferred-dataset-splits"`
	AllReduce              []string `json:"all-reduce-implementation"`
	AllGather              []string `json:"all-gather-implementation"`
	ReduceScatter          []string `json:"reduce-scatter-implementation"`
	AllToAll               []string `json:"all-to-all-implementation"`
	CollectiveOptimization string   `json:"collective-optimization"`
	LocalMemGBps           float64  `json:"local-mem-bw"`
	PeakTFLOPS             float64  `json:"peak-perf"`
	Roofline               int      `json:"roofline-enabled"`
}

// WriteSystem writes the system file: ring collectives in every dimension
// (what ASTRA-sim runs on a communicator anyway), one chunk at a time (the
// congestion-unaware backend gives concurrent chunks each the whole link,
// so more would multiply the bandwidth), the GPU's roofline, on when
// roofline is set (compute priced from num_ops and tensor_size) and off
// otherwise (compute nodes replayed for their durations).
func (c *AstraConfig) WriteSystem(w io.Writer, roofline bool) error {
	if err := c.Check(); err != nil {
		return err
	}
	ring := make([]string, len(c.Dims))
	for i := range ring {
		ring[i] = "ring"
	}
	s := astraSystem{
		Comment: c.Title + "; roofline: " + c.RooflineWhy + "; one chunk at a time: the congestion-unaware backend gives concurrent chunks each the whole link",
		// One collective is in flight per NPU (the traces chain them), so
		// the order of ready chunks does not matter; FIFO is the plain one.
		SchedulingPolicy: "FIFO", EndpointDelay: 10, ActiveChunks: 1, DatasetSplits: 1,
		AllReduce: ring, AllGather: ring, ReduceScatter: ring, AllToAll: ring,
		CollectiveOptimization: "baseline",
		LocalMemGBps:           roundTo(c.HBMBytesPerSecond/1e9, 3),
		PeakTFLOPS:             roundTo(c.PeakFLOPS/1e12, 3),
	}
	if roofline {
		s.Roofline = 1
	}
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// roundTo rounds v to digits decimals.
func roundTo(v float64, digits int) float64 {
	p := math.Pow(10, float64(digits))
	return math.Round(v*p) / p
}

// WriteAstraRemoteMemory writes the remote-memory file: no memory beyond
// the GPUs' own (the traces have no MEM_LOAD or MEM_STORE nodes).
func WriteAstraRemoteMemory(w io.Writer) error {
	_, err := io.WriteString(w, "{\n  \"memory-type\": \"NO_MEMORY_EXPANSION\"\n}\n")
	return err
}
