package main

import (
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/dcpsim/dcpsim/badinput"
	"github.com/dcpsim/dcpsim/calib"
	"github.com/dcpsim/dcpsim/calibrate"
	"github.com/dcpsim/dcpsim/hwbackend"
	"github.com/dcpsim/dcpsim/hwbackend/cuda"
	"github.com/dcpsim/dcpsim/job"
)

// defaultCPUBase is the profile a CPU calibration keeps the unmeasured
// constants of when --base is not given: the GPU of the default scenario
// (testbed-256k). Fit measures efficiency against the base's peak FLOP/s and
// NVLink bandwidth, so a CPU profile has tiny efficiencies of an H20's peaks:
// the simulator then runs that cluster with CPU-speed kernels and copies. A CPU
// run is for checking the measure → fit → profile loop, not for predictions.
const defaultCPUBase = "H20"

// defaultCPUName is the profile name a CPU calibration writes unless --name says
// otherwise, so that it is not mistaken for the base GPU's profile.
const defaultCPUName = "cpu"

const calibrateUsage = `  dcpsim calibrate [--backend cpu|cuda] [--budget 2m] [--base NAME|FILE.toml] --out PROFILE.toml
                   [--measurements FILE.csv] [--name NAME] [--workers N] [--device D] [--ranks R]
  dcpsim calibrate --from FILE.csv --base NAME|FILE.toml --out PROFILE.toml [--name NAME]
  dcpsim calibrate --from-nccl-tests FILE --base NAME|FILE.toml --out PROFILE.toml [--name NAME]
                   [--nccl-program all_reduce_perf|...] [--nccl-ranks N --nccl-gpus-per-node M]
  dcpsim calibrate --from-trace TRACE.json[.gz] --gpu KIND|--base FILE.toml [--out PROFILE.toml] [--name NAME]

  Time causal attention (forward, backward), GEMM, all-to-all and ring send/recv on
  a backend over a sweep of sizes that fits --budget, fit the efficiency curves
  gemm, attention_fwd, attention_bwd and collective_intra (η = Max·x/(x+Half)
  against the base's peak FLOP/s and NVLink bandwidth), and write a profile: each
  fitted constant has source "fit:<measurements file>", every other constant is
  the --base profile's, with its source. The raw measurements go to --measurements
  (default: PROFILE with .csv for its extension) before the fit. Both files are
  written atomically. A curve whose data cannot determine it (calib refuses the
  fit) keeps the base's values; the table says so and why.

  --backend cpu runs real float32 kernels in Go (BF16 is not available on the
  CPU): tiled FlashAttention-2-style attention, gonum's Sgemm, and collectives
  among goroutine ranks; base ` + defaultCPUBase + ` and name "` + defaultCPUName + `" unless given.
  --backend cuda needs a binary built with CGO_ENABLED=1 go build -tags cuda, a
  GPU, and --base (the GPU's profile); collectives run over --ranks GPUs of the
  node (default: all the backend reports, none if it reports none).

  --from fits measurements taken elsewhere (CSV header operation,shape,seconds,repeats).
  --from-nccl-tests fits an nccl-tests output (all_reduce_perf, all_gather_perf,
  reduce_scatter_perf, alltoall_perf, sendrecv_perf; its text, or its -J JSON): every
  size's out-of-place and in-place time becomes a measurement of <kind>_intra (one
  node) or <kind>_inter (across nodes, from the device lines' hostnames), fitting
  collective_intra, collective_inter, all_to_all_inter or send_recv_inter against the
  base's link bandwidths. Rows are checked (sizes increasing, algbw = size/time in
  GB/s), so a file in other units or truncated is exit 2 naming the line.
  --from-trace reads a PyTorch profiler (Kineto) Chrome trace of a real job (plain
  or gzip JSON, at most 4 GiB of it, 20M events and 128 MiB of what is kept of
  them; the other bounds are in docs/limits.md; record it with CPU and CUDA
  activities and record_shapes=True, docs/calibration.md),
  classifies every GPU kernel (FlashAttention forward/backward and their pre- and
  post-processing, dense and grouped GEMMs bf16/fp16/fp8, NCCL and DeepEP-style
  communication, memory-bound kernels, memcpy/memset; the rest is listed by name,
  never guessed), infers shapes from the ops that launched them, checks the units
  (durations implying more than 1.5× the GPU's peak, or most of them 20× off the
  model, are exit 2), and prints measured beside predicted per class and shape,
  per class, per layer (one attention forward per layer per micro-batch) and per
  step. Collectives are priced alone on the profile's links (sim/network, ranks of
  one node when they fit in one) beside kernel times that include waiting for
  peers. With --out it fits the curves the trace determines (gemm, gemm_fp8,
  attention at d_qk <= 128, 192 and 256) onto the profile, each fitted constant
  sourced "fit:<trace> <sha256>", and prints the class totals again with it.

  The fit table (curve, operations, points, R², max relative error of the times,
  Max, Half, and Max × peak) goes to stdout, progress to stderr.`

func calibrateCommand() command {
	return command{
		name:    "calibrate",
		summary: "measure operator costs (cpu or cuda) or read a CSV, fit the curves, write a profile",
		usage:   calibrateUsage,
		run:     runCalibrate,
	}
}

// calibrateFlags are the parsed flags of one calibrate invocation.
type calibrateFlags struct {
	backend, base, out, measurements, from, name string
	budget                                       time.Duration
	workers, device, ranks                       int
	set                                          map[string]bool // flags given on the command line
	// ncclTests is --from-nccl-tests, with the program, ranks and GPUs per
	// node an output without its header lines needs.
	ncclTests, ncclProgram     string
	ncclRanks, ncclGPUsPerNode int
	// trace is --from-trace, gpu its --gpu (the profile predicted against
	// and fitted onto when --base is not given).
	trace, gpu string
}

func runCalibrate(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("calibrate", calibrateUsage, stderr)
	var f calibrateFlags
	fs.StringVar(&f.backend, "backend", "cpu", "where to measure: cpu or cuda")
	fs.DurationVar(&f.budget, "budget", 2*time.Minute, "wall-clock budget of the measurement sweep")
	fs.StringVar(&f.base, "base", "", "profile (embedded name or .toml file) whose unmeasured constants are kept; cpu default "+defaultCPUBase)
	fs.StringVar(&f.out, "out", "", "write the fitted profile here (required)")
	fs.StringVar(&f.measurements, "measurements", "", "write the raw measurements here (default: --out with .csv)")
	fs.StringVar(&f.from, "from", "", "fit this measurements CSV instead of measuring")
	fs.StringVar(&f.ncclTests, "from-nccl-tests", "", "fit this nccl-tests output (text or -J JSON) instead of measuring")
	fs.StringVar(&f.ncclProgram, "nccl-program", "", "--from-nccl-tests: the program (all_reduce_perf, ...) when the output does not name it")
	fs.IntVar(&f.ncclRanks, "nccl-ranks", 0, "--from-nccl-tests: the ranks when the output has no device lines")
	fs.IntVar(&f.ncclGPUsPerNode, "nccl-gpus-per-node", 0, "--from-nccl-tests: GPUs per node when the output has no device lines")
	fs.StringVar(&f.trace, "from-trace", "", "compare (and with --out, fit) a PyTorch profiler (Kineto) trace, .json or .json.gz")
	fs.StringVar(&f.gpu, "gpu", "", "--from-trace: the GPU kind's embedded profile to predict with and fit onto (or --base FILE.toml)")
	fs.StringVar(&f.name, "name", "", `name of the written profile (default: the base's; "`+defaultCPUName+`" for --backend cpu)`)
	fs.IntVar(&f.workers, "workers", 0, "cpu: goroutines for the attention kernels (default GOMAXPROCS)")
	fs.IntVar(&f.device, "device", 0, "cuda: ordinal of the GPU that times attention and GEMM")
	fs.IntVar(&f.ranks, "ranks", 0, "cuda: GPUs the collectives span (default: what the backend reports; 0 or 1: no collectives)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return badInput("unexpected arguments %q", fs.Args())
	}
	f.set = map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { f.set[fl.Name] = true })
	if f.trace != "" {
		return calibrateFromTrace(f, stdout)
	}
	if f.set["gpu"] {
		return badInput("--gpu goes with --from-trace (elsewhere --base names the profile)")
	}
	if f.out == "" {
		return badInput("--out is required: the profile file to write")
	}
	if err := checkOutFile("--out", f.out); err != nil {
		return err
	}
	for _, in := range []struct{ flag, path string }{{"--from", f.from}, {"--from-nccl-tests", f.ncclTests}, {"--base", f.base}} {
		if err := checkNotInput("--out", f.out, in.flag, in.path); err != nil {
			return err
		}
	}
	if f.from != "" && f.ncclTests != "" {
		return badInput("--from and --from-nccl-tests: give one file to fit")
	}
	if f.from != "" || f.ncclTests != "" {
		return calibrateFrom(f, stdout)
	}
	for _, name := range []string{"nccl-program", "nccl-ranks", "nccl-gpus-per-node"} {
		if f.set[name] {
			return badInput("--%s goes with --from-nccl-tests", name)
		}
	}
	return calibrateMeasure(f, stdout, stderr)
}

// calibrateFrom fits a measurements file taken elsewhere.
func calibrateFrom(f calibrateFlags, stdout io.Writer) error {
	for _, name := range []string{"backend", "budget", "measurements", "workers", "device", "ranks"} {
		if f.set[name] {
			return badInput("--%s goes with measuring; --from fits a file measured elsewhere", name)
		}
	}
	if f.base == "" {
		return badInput("--from needs --base: the profile whose unmeasured constants are kept (known: %s)", strings.Join(calib.ProfileNames(), ", "))
	}
	base, err := loadBase(f.base)
	if err != nil {
		return err
	}
	name, err := profileName(f.name, base.Name)
	if err != nil {
		return err
	}
	t := calibrate.Target{Name: name, Out: f.out}
	if f.ncclTests != "" {
		run := calibrate.NCCLTestsRun{Program: f.ncclProgram, Ranks: f.ncclRanks, GPUsPerNode: f.ncclGPUsPerNode}
		return flagged("--from-nccl-tests", calibrate.FromNCCLTests(f.ncclTests, run, base, t, stdout))
	}
	return flagged("--from", calibrate.FromMeasurements(f.from, base, t, stdout))
}

// flagged prefixes a bad-input error with the flag that named the input.
func flagged(flagName string, err error) error {
	if err != nil && badinput.Is(err) {
		return badInput("%s: %v", flagName, err)
	}
	return err
}

// calibrateMeasure runs a sweep on a backend, writes the measurements, fits them
// and writes the profile.
func calibrateMeasure(f calibrateFlags, stdout, stderr io.Writer) error {
	switch f.backend {
	case "cpu":
		for _, name := range []string{"device", "ranks"} {
			if f.set[name] {
				return badInput("--%s goes with --backend cuda", name)
			}
		}
		if f.base == "" {
			f.base = defaultCPUBase
		}
		if f.name == "" {
			f.name = defaultCPUName
		}
	case "cuda":
		if f.set["workers"] {
			return badInput("--workers goes with --backend cpu")
		}
		if f.base == "" {
			return badInput("--backend cuda needs --base: the profile of the GPU measured (known: %s)", strings.Join(calib.ProfileNames(), ", "))
		}
	default:
		return badInput("--backend %q: want cpu or cuda", f.backend)
	}
	if f.budget <= 0 {
		return badInput("--budget = %v: must be > 0", f.budget)
	}
	for _, c := range []struct {
		name   string
		v, max int
	}{{"workers", f.workers, maxCalibrateWorkers}, {"device", f.device, maxCUDADevice}, {"ranks", f.ranks, job.MaxGPUsPerNode}} {
		if c.v < 0 || c.v > c.max {
			return badInput("--%s = %d: must be in [0, %d]", c.name, c.v, c.max)
		}
	}
	if f.measurements == "" {
		f.measurements = strings.TrimSuffix(f.out, filepath.Ext(f.out)) + ".csv"
	}
	if filepath.Clean(f.measurements) == filepath.Clean(f.out) {
		return badInput("--measurements and --out are the same file %s", f.out)
	}
	if err := checkOutFile("--measurements", f.measurements); err != nil {
		return err
	}
	for _, in := range []struct{ flag, path string }{{"--out", f.out}, {"--base", f.base}} {
		if err := checkNotInput("--measurements", f.measurements, in.flag, in.path); err != nil {
			return err
		}
	}
	base, err := loadBase(f.base)
	if err != nil {
		return err
	}
	name, err := profileName(f.name, base.Name)
	if err != nil {
		return err
	}

	var (
		b  hwbackend.Backend
		sw hwbackend.Sweep
	)
	if f.backend == "cpu" {
		b = hwbackend.NewCPU(f.workers)
		sw = hwbackend.DefaultSweep(f.budget)
	} else {
		b, err = cuda.New(cuda.Options{Device: f.device, Ranks: f.ranks})
		if err != nil {
			return fmt.Errorf("--backend cuda: %w", err)
		}
		ranks := f.ranks
		if r, ok := b.(hwbackend.Ranker); ok && ranks == 0 {
			ranks = r.Ranks()
		}
		if ranks < 2 {
			fmt.Fprintf(stderr, "calibrate: no collectives (%d rank): collective_intra stays the base's; pass --ranks to measure them\n", ranks)
		}
		sw = hwbackend.GPUSweep(f.budget, ranks)
	}
	defer b.Close()

	ctx, stop := interruptContext()
	defer stop()
	m := calibrate.Measurement{Backend: b, Sweep: sw, BackendLabel: f.backend, CSV: f.measurements}
	if err := calibrate.Measure(ctx, m, base, calibrate.Target{Name: name, Out: f.out}, stdout, stderr); err != nil {
		return interrupted(ctx, err)
	}
	return nil
}

// Bounds of calibrate's numeric flags.
const (
	// maxCalibrateWorkers bounds --workers: attention goroutines, far above any
	// CPU's cores (more only adds scheduling overhead and memory).
	maxCalibrateWorkers = 1024
	// maxCUDADevice bounds --device, a CUDA ordinal (below a node's GPUs,
	// which job.MaxGPUsPerNode bounds).
	maxCUDADevice = job.MaxGPUsPerNode - 1
)

// loadBase resolves --base: a .toml file, or the name of an embedded profile.
func loadBase(arg string) (*calib.Profile, error) {
	p, err := calib.ResolveProfile(arg)
	if err != nil {
		return nil, badInput("--base: %v", err)
	}
	return p, nil
}

// profileName returns --name, or the base's name when it is empty, checked
// against the profile name syntax.
func profileName(name, baseName string) (string, error) {
	if name == "" {
		return baseName, nil
	}
	if err := calib.ValidateProfileName(name); err != nil {
		return "", badInput("--name: %v", err)
	}
	return name, nil
}
