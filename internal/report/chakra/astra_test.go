package chakra

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
)

// TestCommSize: an ALL_GATHER's comm_size is each rank's input, 1/n of
// NCCL's gathered output (ASTRA-sim's Ring.cc sends comm_size bytes in each
// of n−1 steps and ends with n·comm_size); the other collectives keep NCCL's
// count; sizes round to the byte, a non-empty collective is at least 1 byte
// (ASTRA-sim hangs on an all-gather whose chunks are 0 bytes), an empty or
// malformed one 0.
func TestCommSize(t *testing.T) {
	for _, c := range []struct {
		kind  CollectiveCommType
		bytes float64
		ranks int
		want  int64
	}{
		{AllGather, 8 << 20, 8, 1 << 20},
		{AllGather, 1000, 3, 333},
		{AllGather, 1001, 2, 501}, // 500.5 rounds half away from zero
		{AllGather, 3, 8, 1},      // 0.375 bytes: at least 1
		{AllGather, 4096, 1, 4096},
		{ReduceScatter, 8 << 20, 8, 8 << 20},
		{AllReduce, 12345.4, 4, 12345},
		{AllToAll, 1 << 30, 16, 1 << 30},
		{AllToAll, 0.2, 16, 1},
		{AllGather, 0, 8, 0},
		{ReduceScatter, -5, 8, 0},
		{AllReduce, math.NaN(), 8, 0},
		{AllGather, 100, 0, 0},
		{AllToAll, math.Inf(1), 2, math.MaxInt64},
		{AllToAll, 1e30, 2, math.MaxInt64},
	} {
		if got := CommSize(c.kind, c.bytes, c.ranks); got != c.want {
			t.Errorf("CommSize(%d, %v, %d) = %d, want %d", c.kind, c.bytes, c.ranks, got, c.want)
		}
	}
}

// TestTransferSize: a send's and a receive's bytes round to the byte, and
// an empty transfer is 1 byte (ASTRA-sim aborts on a message of none).
func TestTransferSize(t *testing.T) {
	for _, c := range []struct {
		bytes float64
		want  int64
	}{{0, 1}, {-3, 1}, {math.NaN(), 1}, {0.4, 1}, {1.5, 2}, {4096.4, 4096}, {1e300, math.MaxInt64}} {
		if got := TransferSize(c.bytes); got != c.want {
			t.Errorf("TransferSize(%v) = %d, want %d", c.bytes, got, c.want)
		}
	}
}

// astraH20 is a 32-GPU H20 cluster as experiment describes it.
func astraH20() *AstraConfig {
	return &AstraConfig{
		Title: "h20 test",
		Dims: []AstraDim{
			{NPUs: 8, BytesPerSecond: 360e9 * 0.9724, LinkSeconds: 1.7e-6, Why: "NVLink"},
			{NPUs: 4, BytesPerSecond: 48e9 * 0.9583, LinkSeconds: 12.7e-6, Why: "NIC"},
		},
		PeakFLOPS: 148e12, HBMBytesPerSecond: 4e12 * 0.8955, RooflineWhy: "profile",
	}
}

// TestAstraNetwork pins the network file to the keys and units of
// astra-network-analytical's NetworkParser: bandwidth in GB/s of 2^30 bytes
// (360e9 × 0.9724 B/s = 326.0225 "GB/s"), latency in ns per link.
func TestAstraNetwork(t *testing.T) {
	c := astraH20()
	var b bytes.Buffer
	if err := c.WriteNetwork(&b); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, line := range strings.Split(strings.TrimSpace(b.String()), "\n") {
		if !strings.HasPrefix(line, "#") {
			keys = append(keys, line)
		}
	}
	want := []string{
		"topology: [ Switch, Switch ]",
		"npus_count: [ 8, 4 ]",
		"bandwidth: [ 326.0225, 42.8393 ]",
		"latency: [ 1700, 12700 ]",
	}
	if strings.Join(keys, "\n") != strings.Join(want, "\n") || !strings.Contains(b.String(), "# dimension 1: NIC\n") {
		t.Errorf("network file:\n%s\nwant the lines\n%s", b.String(), strings.Join(want, "\n"))
	}
	if c.NPUs() != 32 {
		t.Errorf("NPUs() = %d", c.NPUs())
	}
}

// TestAstraSystem: the system file is JSON with Sys::initialize_sys's keys:
// a ring per dimension for every collective (more than one entry, so a
// communicator runs its own ring and ASTRA-sim does not free a shared
// implementation at exit), one chunk at a time, peak-perf in TFLOP/s and
// local-mem-bw in GB/s of 10^9 bytes, the roofline on only when asked.
func TestAstraSystem(t *testing.T) {
	c := astraH20()
	for _, roofline := range []bool{false, true} {
		var b bytes.Buffer
		if err := c.WriteSystem(&b, roofline); err != nil {
			t.Fatal(err)
		}
		var got map[string]any
		if err := json.Unmarshal(b.Bytes(), &got); err != nil {
			t.Fatalf("not JSON: %v\n%s", err, b.String())
		}
		want := map[string]any{
			"scheduling-policy": "FIFO", "endpoint-delay": 10.0, "active-chunks-per-dimension": 1.0, "preferred-dataset-splits": 1.0,
			"collective-optimization": "baseline", "local-mem-bw": 3582.0, "peak-perf": 148.0, "roofline-enabled": 0.0,
		}
		if roofline {
			want["roofline-enabled"] = 1.0
		}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("roofline %v: %s = %v, want %v", roofline, k, got[k], v)
			}
		}
		for _, k := range []string{"all-reduce-implementation", "all-gather-implementation", "reduce-scatter-implementation", "all-to-all-implementation"} {
			if l, ok := got[k].([]any); !ok || len(l) != 2 || l[0] != "ring" || l[1] != "ring" {
				t.Errorf("%s = %v, want [ring ring]", k, got[k])
			}
		}
	}
	var b bytes.Buffer
	if err := WriteAstraRemoteMemory(&b); err != nil {
		t.Fatal(err)
	}
	var mem map[string]string
	if err := json.Unmarshal(b.Bytes(), &mem); err != nil || mem["memory-type"] != "NO_MEMORY_EXPANSION" {
		t.Errorf("remote memory %s: %v", b.String(), err)
	}
}

// TestAstraConfigRefuses: what ASTRA-sim would refuse or mis-read is an
// error, and nothing is written.
func TestAstraConfigRefuses(t *testing.T) {
	for name, change := range map[string]func(*AstraConfig){
		"one dimension":   func(c *AstraConfig) { c.Dims = c.Dims[:1] },
		"one NPU":         func(c *AstraConfig) { c.Dims[1].NPUs = 1 },
		"no bandwidth":    func(c *AstraConfig) { c.Dims[0].BytesPerSecond = 0 },
		"NaN bandwidth":   func(c *AstraConfig) { c.Dims[0].BytesPerSecond = math.NaN() },
		"latency < 0":     func(c *AstraConfig) { c.Dims[1].LinkSeconds = -1e-6 },
		"infinite peak":   func(c *AstraConfig) { c.PeakFLOPS = math.Inf(1) },
		"no HBM":          func(c *AstraConfig) { c.HBMBytesPerSecond = 0 },
		"newline in note": func(c *AstraConfig) { c.Dims[0].Why = "a\nb" },
		"newline in title": func(c *AstraConfig) {
			c.Title = "x\ntopology: [ Ring ]"
		},
	} {
		c := astraH20()
		change(c)
		var b bytes.Buffer
		if c.WriteNetwork(&b) == nil || c.WriteSystem(&b, false) == nil || b.Len() != 0 {
			t.Errorf("%s: written (%d bytes) or no error", name, b.Len())
		}
	}
}
