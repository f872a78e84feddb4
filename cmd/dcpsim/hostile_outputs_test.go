package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dcpsim/dcpsim/calib"
)

// outBatch is one --batches line that plans in a moment.
const outBatch = `{"ranks": 2, "budget_tokens": 2000, "lengths": [2000, 1000]}` + "\n"

// syntheticMeasurements is a measurements CSV that calibrate --from fits
// (gemm and attention_fwd rows on known curves of the H20 peak).
func syntheticMeasurements() string {
	const peak = 1.48e14
	h20, err := calib.LookupProfile("H20")
	if err != nil {
		panic(err)
	}
	launch := h20.KernelLaunchSeconds.Value
	eta := func(max, half, x float64) float64 { return max * x / (x + half) }
	var b strings.Builder
	b.WriteString("operation,shape,seconds,repeats\n")
	for _, m := range []float64{256, 1024, 4096, 16384} {
		work := 2 * m * 4096 * 4096
		fmt.Fprintf(&b, "gemm,m=%g;n=4096;k=4096,%g,5\n", m, work/(peak*eta(0.8, 500, calib.GEMMEffectiveSize(m, 4096, 4096)))+launch)
	}
	for _, s := range []float64{1024, 4096, 16384} {
		work := calib.AttentionFwdFLOPs(1, s, 32, 128, 128, true)
		fmt.Fprintf(&b, "attention_fwd,batch=1;seq=%g;heads=32;kv_heads=8;head_dim_qk=128;head_dim_v=128,%g,5\n", s, work/(peak*eta(0.6, 2000, s))+launch)
	}
	return b.String()
}

// tinySweepTOML is the tiny scenario with a 4-point [sweep].
var tinySweepTOML = tinyTOML + sweepTail

// hostileOutputCases lists TestHostileInputs' cases of round three's outputs: nothing replaced, nothing destroyed, no leftovers (issue 24 items 1-5, 14, 15, 17).
func hostileOutputCases() []hostileCase {
	csv := syntheticMeasurements()
	twoLines := outBatch + `{"ranks": 2, "budget_tokens": 2000, "lengths": [0]}` + "\n"
	return []hostileCase{
		// 3. --out is an input (the same file by inode, whatever the name).
		{name: "plan --out = --batches", args: []string{"plan", "--policy", "static", "--batches", "b.jsonl", "--out", "./b.jsonl"},
			files: map[string]string{"b.jsonl": outBatch}, code: 2, want: []string{"--out ./b.jsonl", "--batches b.jsonl", "same file"}},
		{name: "run --batches --out = --batches", args: []string{"run", "--policy", "static", "--batches", "b.jsonl", "--out", "b.jsonl"},
			files: map[string]string{"b.jsonl": outBatch}, code: 2, want: []string{"--out b.jsonl", "same file"}},
		{name: "calibrate --out = --from", args: []string{"calibrate", "--from", "m.csv", "--base", "H20", "--out", "m.csv"},
			files: map[string]string{"m.csv": csv}, code: 2, want: []string{"--out m.csv", "--from m.csv", "same file"}},
		{name: "calibrate --out = --base", args: []string{"calibrate", "--from", "m.csv", "--base", "p.toml", "--out", "./p.toml"},
			files: map[string]string{"m.csv": csv, "p.toml": "# not read\n"}, code: 2, want: []string{"--out ./p.toml", "--base p.toml", "same file"}},
		{name: "report --out = --readme", args: []string{"report", "--results", "res", "--out", "R.md", "--readme", "R.md"},
			files: map[string]string{"res/keep.txt": "x", "R.md": "# mine\n"}, code: 2, want: []string{"--out R.md", "--readme R.md", "same file"}},

		// 17. A file output naming a folder, or an unwritable place: exit 2, before simulating.
		{name: "plan --batches --out a folder", args: []string{"plan", "--policy", "static", "--batches", "b.jsonl", "--out", "d"},
			files: map[string]string{"b.jsonl": outBatch, "d/keep.txt": "x"}, code: 2, want: []string{"--out d", "is a folder"}},
		{name: "run --batches --out a folder, checked first", args: []string{"run", "--policy", "static", "--batches", "b.jsonl", "--out", "d"},
			files: map[string]string{"b.jsonl": twoLines, "d/keep.txt": "x"}, code: 2, want: []string{"--out d", "is a folder"}},
		{name: "plan --batches --out in a missing folder", args: []string{"plan", "--policy", "static", "--batches", "b.jsonl", "--out", "nosuch/x.jsonl"},
			files: map[string]string{"b.jsonl": twoLines}, code: 2, want: []string{"--out nosuch/x.jsonl", "folder nosuch does not exist"}},
		{name: "report --out a folder", args: []string{"report", "--results", "res", "--out", "d"},
			files: map[string]string{"res/keep.txt": "x", "d/keep.txt": "x"}, code: 2, want: []string{"--out d", "is a folder"}},
		{name: "report --out /proc/x", args: []string{"report", "--results", "res", "--out", "/proc/x.md"},
			files: map[string]string{"res/keep.txt": "x"}, code: 2, want: []string{"--out /proc/x.md"}},
		{name: "run --out an unwritable folder, checked first", args: []string{"run", "x.toml", "--out", "/proc/dcpsim-r"},
			files: map[string]string{"x.toml": withTiny("iterations = 3", "iterations = 10000")}, code: 2, want: []string{"--out /proc/dcpsim-r", "cannot write in /proc"}},
		{name: "sweep --out an unwritable folder", args: []string{"sweep", "s.toml", "--out", "/proc/dcpsim-s/x", "--no-figures"},
			files: map[string]string{"s.toml": tinySweepTOML}, code: 2, want: []string{"/proc/dcpsim-s/x", "cannot write in /proc"}},
		{name: "plan --batches --out that works", args: []string{"plan", "--policy", "static", "--batches", "b.jsonl", "--out", "o.jsonl"},
			files: map[string]string{"b.jsonl": outBatch}, code: 0, writes: []string{"o.jsonl"}},

		// calibrate --out DIR/cpu.toml on a fresh clone: refused before measuring, naming the folder (make calibrate creates it).
		{name: "calibrate --out in a missing folder", args: []string{"calibrate", "--budget", "1h", "--out", "calibration/p.toml"},
			code: 2, want: []string{"--out calibration/p.toml", "folder calibration does not exist", "mkdir -p calibration"}},
		{name: "calibrate --out under a file", args: []string{"calibrate", "--from", "m.csv", "--base", "H20", "--out", "m.csv/p.toml"},
			files: map[string]string{"m.csv": csv}, code: 2, want: []string{"--out m.csv/p.toml", "m.csv"}},

		// 2. What counts as a sweep folder: a dcpsim sweep.json or points/ of dcpsim points.
		{name: "sweep into a folder with sweep.json {}", args: []string{"sweep", "s.toml", "--out", "mine", "--no-figures"},
			files: map[string]string{"s.toml": tinySweepTOML, "mine/sweep.json": "{}", "mine/sweep.csv": "mine"}, code: 2,
			want: []string{"mine", "sweep.json", "not a dcpsim sweep"}},
		{name: "sweep into a folder with a foreign points/", args: []string{"sweep", "s.toml", "--out", "mine", "--no-figures"},
			files: map[string]string{"s.toml": tinySweepTOML, "mine/points/notes.txt": "mine", "mine/sweep.csv": "mine"}, code: 2,
			want: []string{"mine/points/notes.txt"}},
		{name: "merge into a folder with sweep.json {}", args: []string{"merge", "--out", "mine", "nosuch"},
			files: map[string]string{"mine/sweep.json": "{}", "mine/timings.json": "mine"}, code: 2, want: []string{"mine", "sweep.json"}},
	}
}

// TestMakeCalibrateCreatesItsFolder: make calibrate writes
// calibration/cpu.toml, which a fresh clone lacks, so the target creates the
// folder first (dcpsim calibrate refuses a missing folder before measuring).
func TestMakeCalibrateCreatesItsFolder(t *testing.T) {
	b, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	_, recipe, ok := strings.Cut(string(b), "\ncalibrate:\n")
	if !ok {
		t.Fatal("no calibrate target")
	}
	var cmds []string
	for _, l := range strings.Split(recipe, "\n") {
		if !strings.HasPrefix(l, "\t") {
			break
		}
		cmds = append(cmds, strings.TrimSpace(l))
	}
	mk := slices.IndexFunc(cmds, func(c string) bool { return strings.HasPrefix(c, "mkdir -p calibration") })
	cal := slices.IndexFunc(cmds, func(c string) bool { return strings.Contains(c, "--out calibration/cpu.toml") })
	if cal < 0 || mk < 0 || mk > cal {
		t.Errorf("the calibrate target does not create calibration/ before writing calibration/cpu.toml: %q", cmds)
	}
}

// fileKind says what path is (for messages).
func fileKind(t *testing.T, path string) os.FileMode {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return fi.Mode().Type()
}

// TestOutputsRefuseSpecialFiles (item 1): a single-file output naming a FIFO or
// a device node is refused with exit 2 naming the flag and the path, and the
// node stays what it was (it was replaced by a regular file).
func TestOutputsRefuseSpecialFiles(t *testing.T) {
	dir := t.TempDir()
	batches := filepath.Join(dir, "b.jsonl")
	os.WriteFile(batches, []byte(outBatch), 0o644)
	csv := filepath.Join(dir, "m.csv")
	os.WriteFile(csv, []byte(syntheticMeasurements()), 0o644)
	res := filepath.Join(dir, "res")
	os.Mkdir(res, 0o755)
	nodes := map[string]func(string) error{"fifo": func(p string) error { return syscall.Mkfifo(p, 0o644) }}
	if os.Geteuid() == 0 {
		nodes["chardev"] = func(p string) error { return syscall.Mknod(p, syscall.S_IFCHR|0o666, 1<<8|3) } // a /dev/null
	}
	for kind, mk := range nodes {
		for _, c := range []struct {
			flag string
			args func(out string) []string
		}{
			{"--out", func(out string) []string {
				return []string{"plan", "--policy", "static", "--batches", batches, "--out", out}
			}},
			{"--out", func(out string) []string {
				return []string{"run", "--policy", "static", "--batches", batches, "--costs", "load", "--out", out}
			}},
			{"--out", func(out string) []string { return []string{"calibrate", "--from", csv, "--base", "H20", "--out", out} }},
			{"--out", func(out string) []string { return []string{"report", "--results", res, "--out", out} }},
			{"", func(out string) []string { return []string{"workload", "stats", "--iterations", "1", "--plot", out} }},
		} {
			name := "node"
			if c.flag == "" {
				name = "node.png"
			}
			node := filepath.Join(t.TempDir(), name)
			if err := mk(node); err != nil {
				t.Skipf("%s: %v", kind, err)
			}
			before := fileKind(t, node)
			args := c.args(node)
			code, _, stderr := dcpsim(t, args...)
			if code != exitInput || !strings.Contains(stderr, node) || !strings.Contains(stderr, c.flag+" "+node) && c.flag != "" {
				t.Errorf("%s %v: exit %d, want 2 naming %s %s: %s", kind, args[:1], code, c.flag, node, stderr)
			}
			if after := fileKind(t, node); after != before {
				t.Errorf("%s %v: the %v became %v", kind, args[:1], before, after)
			}
			if entries, _ := os.ReadDir(filepath.Dir(node)); len(entries) != 1 {
				t.Errorf("%s %v: left %v", kind, args[:1], entries)
			}
		}
	}
}

// TestOutDevNull (item 1): as root, --out /dev/null once replaced /dev/null
// with a regular file. Run only after a device node of our own was refused,
// so a regression cannot break the machine.
func TestOutDevNull(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("only root can replace /dev/null")
	}
	dir := t.TempDir()
	batches := filepath.Join(dir, "b.jsonl")
	os.WriteFile(batches, []byte(outBatch), 0o644)
	own := filepath.Join(dir, "null")
	if err := syscall.Mknod(own, syscall.S_IFCHR|0o666, 1<<8|3); err != nil {
		t.Skipf("mknod: %v", err)
	}
	if code, _, stderr := dcpsim(t, "plan", "--policy", "static", "--batches", batches, "--out", own); code != exitInput ||
		fileKind(t, own) != os.ModeDevice|os.ModeCharDevice {
		t.Fatalf("a device node of our own was not refused (exit %d: %s): not trying /dev/null", code, stderr)
	}
	code, _, stderr := dcpsim(t, "plan", "--policy", "static", "--batches", batches, "--out", "/dev/null")
	if code != exitInput || !strings.Contains(stderr, "--out /dev/null") {
		t.Errorf("exit %d, want 2 naming --out /dev/null: %s", code, stderr)
	}
	if k := fileKind(t, "/dev/null"); k != os.ModeDevice|os.ModeCharDevice {
		t.Errorf("/dev/null is now %v", k)
	}
}

// TestSweepNeverFollowsPointsLink (item 2): a sweep or a merge into a folder
// whose points/ is a link is refused, and nothing is written where it points.
func TestSweepNeverFollowsPointsLink(t *testing.T) {
	dir := t.TempDir()
	sc := writeTiny(t, dir, "tiny-link", `["hydra", "static"]`, sweepTail)
	shard := filepath.Join(dir, "shard")
	if code, _, errOut := dcpsim(t, "sweep", sc, "--out", shard, "--no-figures"); code != exitOK {
		t.Fatalf("sweep: exit %d: %s", code, errOut)
	}
	elsewhere := filepath.Join(dir, "elsewhere")
	os.Mkdir(elsewhere, 0o755)
	for _, sweepJSON := range []string{"", "{}", "copy"} {
		out := filepath.Join(t.TempDir(), "out")
		os.Mkdir(out, 0o755)
		switch sweepJSON {
		case "copy": // a real sweep.json of dcpsim
			b, _ := os.ReadFile(filepath.Join(shard, "sweep.json"))
			os.WriteFile(filepath.Join(out, "sweep.json"), b, 0o644)
		case "{}":
			os.WriteFile(filepath.Join(out, "sweep.json"), []byte("{}"), 0o644)
		}
		if err := os.Symlink(elsewhere, filepath.Join(out, "points")); err != nil {
			t.Fatal(err)
		}
		for _, args := range [][]string{{"sweep", sc, "--out", out, "--no-figures"}, {"merge", "--out", out, shard, "--no-figures"}} {
			code, _, stderr := dcpsim(t, args...)
			if code != exitInput || !strings.Contains(stderr, filepath.Join(out, "points")) {
				t.Errorf("sweep.json %q, %s: exit %d, want 2 naming the link: %s", sweepJSON, args[0], code, stderr)
			}
			if entries, _ := os.ReadDir(elsewhere); len(entries) != 0 {
				t.Fatalf("sweep.json %q, %s: wrote through the link: %v", sweepJSON, args[0], entries)
			}
		}
	}
}

// TestRerunKeepsUnlistedFiles (item 4): a rerun into an earlier results
// folder keeps what its manifest does not list (a NOTES.md, the scenario
// file run from it), and still drops the earlier run's own files.
func TestRerunKeepsUnlistedFiles(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "r")
	sc := writeTiny(t, dir, "tiny-keep", `["hydra", "static"]`, "")
	if code, _, stderr := dcpsim(t, "run", sc, "--out", out); code != exitOK {
		t.Fatalf("run: exit %d: %s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(out, "trace-hydra.json")); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(sc)
	inside := filepath.Join(out, "tiny-keep.toml")
	os.WriteFile(inside, []byte(strings.Replace(string(b), `["hydra", "static"]`, `["static"]`, 1)), 0o644)
	os.WriteFile(filepath.Join(out, "NOTES.md"), []byte("mine"), 0o644)
	os.Mkdir(filepath.Join(out, "extra"), 0o755)
	os.WriteFile(filepath.Join(out, "extra", "x.txt"), []byte("mine"), 0o644)
	if code, _, stderr := dcpsim(t, "run", inside, "--out", out); code != exitOK {
		t.Fatalf("rerun: exit %d: %s", code, stderr)
	}
	for _, p := range []string{"NOTES.md", "tiny-keep.toml", "extra/x.txt"} {
		if _, err := os.Stat(filepath.Join(out, p)); err != nil {
			t.Errorf("the user's %s is gone: %v", p, err)
		}
	}
	if _, err := os.Stat(filepath.Join(out, "trace-hydra.json")); err == nil {
		t.Error("the earlier run's trace-hydra.json survived the rerun")
	}
	for _, e := range listTree(dir) {
		if strings.HasPrefix(filepath.Base(e), ".") {
			t.Errorf("left %s", e)
		}
	}
}

// TestResweepPointWithUserFile (item 4): a sweep point folder with a file
// the user put there is refused before anything is simulated, not emptied.
func TestResweepPointWithUserFile(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "s")
	sc := writeTiny(t, dir, "tiny-pnotes", `["hydra", "static"]`, sweepTail)
	if code, _, stderr := dcpsim(t, "sweep", sc, "--out", out, "--no-figures"); code != exitOK {
		t.Fatalf("sweep: exit %d: %s", code, stderr)
	}
	pts, _ := os.ReadDir(filepath.Join(out, "points"))
	notes := filepath.Join(out, "points", pts[0].Name(), "NOTES.md")
	os.WriteFile(notes, []byte("mine"), 0o644)
	code, _, stderr := dcpsim(t, "sweep", sc, "--out", out, "--no-figures")
	if code != exitInput || !strings.Contains(stderr, notes) {
		t.Errorf("exit %d, want 2 naming %s: %s", code, notes, stderr)
	}
	if _, err := os.Stat(notes); err != nil {
		t.Errorf("NOTES.md is gone: %v", err)
	}
}

// TestResweepChangedSweep (item 5): re-sweeping a smaller version of a sweep
// into its folder replaces the points cleanly (saying so), and merge then
// takes that folder; another scenario's sweep is refused, naming both.
func TestResweepChangedSweep(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "s")
	big := writeTiny(t, dir, "tiny-resweep", `["hydra", "static"]`, sweepTail)
	if code, _, stderr := dcpsim(t, "sweep", big, "--out", out, "--no-figures"); code != exitOK {
		t.Fatalf("sweep: exit %d: %s", code, stderr)
	}
	small := writeTiny(t, t.TempDir(), "tiny-resweep", `["hydra", "static"]`, strings.Replace(sweepTail, "cap = [8, 16]", "cap = [8]", 1))
	code, stdout, stderr := dcpsim(t, "sweep", small, "--out", out, "--no-figures")
	if code != exitOK {
		t.Fatalf("smaller sweep: exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, "removed 3 point folders of an earlier version") {
		t.Errorf("does not say it replaced the earlier points:\n%s", stdout)
	}
	if pts, _ := os.ReadDir(filepath.Join(out, "points")); len(pts) != 2 {
		t.Errorf("points/ holds %d folders, want 2: %v", len(pts), pts)
	}
	if code, _, stderr := dcpsim(t, "merge", "--out", filepath.Join(dir, "m"), out, "--no-figures"); code != exitOK {
		t.Errorf("merge of the re-swept folder: exit %d: %s", code, stderr)
	}
	other := writeTiny(t, dir, "tiny-other", `["hydra", "static"]`, sweepTail)
	before := listTree(out)
	code, _, stderr = dcpsim(t, "sweep", other, "--out", out, "--no-figures")
	if code != exitInput || !strings.Contains(stderr, "tiny-resweep") || !strings.Contains(stderr, "tiny-other") {
		t.Errorf("another scenario's sweep: exit %d, want 2 naming both sweeps: %s", code, stderr)
	}
	if after := listTree(out); !slices.Equal(before, after) {
		t.Errorf("the folder changed: %v → %v", before, after)
	}
}

// TestResumeRemovesStaleTemporaries (item 15): resuming a sweep after kill -9
// removes the temporary point folders the killed process left.
func TestResumeRemovesStaleTemporaries(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "s")
	sc := writeTiny(t, dir, "tiny-stale", `["hydra", "static"]`, sweepTail)
	if code, _, stderr := dcpsim(t, "sweep", sc, "--out", out, "--no-figures"); code != exitOK {
		t.Fatalf("sweep: exit %d: %s", code, stderr)
	}
	points := filepath.Join(out, "points")
	for _, n := range []string{".p0001-x.tmp-123", ".p0002-y.tmp-456-old0"} {
		os.MkdirAll(filepath.Join(points, n), 0o755)
		os.WriteFile(filepath.Join(points, n, "summary.json"), []byte("{}"), 0o644)
		// Left by a process killed a while ago (a live writer's is fresh, and locked).
		old := time.Now().Add(-time.Hour)
		os.Chtimes(filepath.Join(points, n), old, old)
	}
	if code, _, stderr := dcpsim(t, "sweep", sc, "--out", out, "--no-figures"); code != exitOK {
		t.Fatalf("resume: exit %d: %s", code, stderr)
	}
	for _, e := range listTree(dir) {
		if strings.HasPrefix(filepath.Base(e), ".") {
			t.Errorf("left %s", e)
		}
	}
}

// slowTOML is the tiny scenario with enough iterations to be signalled
// mid-run.
var slowTOML = withTiny("iterations = 3", "iterations = 5000")

// startChild starts the CLI in dir (stdin: a pipe the test holds).
func startChild(t *testing.T, dir string, args ...string) (*exec.Cmd, io.WriteCloser, *strings.Builder) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "DCPSIM_TEST_AS_CLI=1", "GOMAXPROCS=2")
	var errb strings.Builder
	cmd.Stderr = &errb
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	return cmd, in, &errb
}

// waitFor polls until cond holds (or fails the test after 30 s).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}

// temporaries lists the dot-names under dir.
func temporaries(dir string) []string {
	var out []string
	for _, e := range listTree(dir) {
		if strings.HasPrefix(filepath.Base(e), ".") {
			out = append(out, e)
		}
	}
	return out
}

// waitExit waits for cmd and checks it exited 1 saying "interrupted".
func waitExit(t *testing.T, cmd *exec.Cmd, errb *strings.Builder, what string) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatalf("%s: still running a minute after the signal", what)
	}
	if code := cmd.ProcessState.ExitCode(); code != exitFailure || !strings.Contains(errb.String(), "interrupted") {
		t.Errorf("%s: %v (exit %d), want exit 1 \"interrupted\": %s", what, cmd.ProcessState, code, errb.String())
	}
}

// TestTermAndHupAreInterrupts (item 13): SIGTERM and SIGHUP stop a run or a
// sweep as Ctrl-C does: exit 1 "interrupted", no temporary file or folder.
func TestTermAndHupAreInterrupts(t *testing.T) {
	if testing.Short() {
		t.Skip("child processes")
	}
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGHUP} {
		t.Run(sig.String(), func(t *testing.T) {
			dir := t.TempDir()
			os.WriteFile(filepath.Join(dir, "x.toml"), []byte(slowTOML), 0o644)
			os.WriteFile(filepath.Join(dir, "s.toml"), []byte(strings.Replace(slowTOML, "iterations = 5000", "iterations = 2000", 1)+sweepTail), 0o644)
			cmd, _, errb := startChild(t, dir, "run", "x.toml", "--out", "r")
			time.Sleep(time.Second) // past start-up, well before the 5000 iterations end
			cmd.Process.Signal(sig)
			waitExit(t, cmd, errb, "run")
			if tmp := temporaries(dir); len(tmp) > 0 {
				t.Errorf("run left %v", tmp)
			}
			cmd, _, errb = startChild(t, dir, "sweep", "s.toml", "--out", "s", "--jobs", "2", "--no-figures")
			waitFor(t, "a point folder", func() bool { e, _ := os.ReadDir(filepath.Join(dir, "s", "points")); return len(e) > 0 })
			cmd.Process.Signal(sig)
			waitExit(t, cmd, errb, "sweep")
			if tmp := temporaries(dir); len(tmp) > 0 {
				t.Errorf("sweep left %v", tmp)
			}
		})
	}
}

// TestInterruptBatchesOut (item 14): Ctrl-C (or SIGTERM) during plan/run
// --batches --out F leaves neither F nor its temporary .F.tmp-*.
func TestInterruptBatchesOut(t *testing.T) {
	if testing.Short() {
		t.Skip("child processes")
	}
	for _, c := range []struct {
		sig  syscall.Signal
		args []string
	}{
		{syscall.SIGINT, []string{"plan", "--policy", "static", "--batches", "-", "--out", "F.jsonl"}},
		{syscall.SIGTERM, []string{"run", "--policy", "static", "--batches", "-", "--costs", "load", "--out", "F.jsonl"}},
	} {
		dir := t.TempDir()
		cmd, in, errb := startChild(t, dir, c.args...)
		w := bufio.NewWriter(in)
		w.WriteString(outBatch)
		w.Flush()
		// The command waits for more lines, its temporary file open.
		waitFor(t, "the temporary file", func() bool { return len(temporaries(dir)) > 0 })
		cmd.Process.Signal(c.sig)
		waitExit(t, cmd, errb, c.args[0])
		in.Close()
		if left := listTree(dir); len(left) > 0 {
			t.Errorf("%s: left %v", c.args[0], left)
		}
	}
}
