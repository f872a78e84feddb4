package main

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Round four (issue 41): what wave 3 added, tried as a hostile user would:
// external policies' answers and programs, search's evaluation files,
// shards and merge, calibrate --from-trace and --from-nccl-tests, trace,
// and the new scenario keys. Each case below reproduced a defect on 9aec354;
// the class is the issue's.

// evilTiny is the tiny scenario with an external policy evil beside hydra:
// evil.sh answers every batch with resp.json.
var evilTiny = withTiny(`policies = ["hydra", "mcore"]`, `policies = ["hydra", "evil"]`) +
	"\n[run.external.evil]\ncommand = [\"sh\", \"evil.sh\"]\n"

// evilSh answers each batch line with the file resp.json.
const evilSh = "while read -r line; do cat resp.json; done\n"

// evilFiles are the files of a run of evilTiny answering resp.
func evilFiles(resp string) map[string]string {
	return map[string]string{"s.toml": evilTiny, "evil.sh": evilSh, "resp.json": resp + "\n"}
}

// runEvil runs evilTiny with consent, printing the table only.
var runEvil = []string{"run", "s.toml", "--no-files", "--allow-exec"}

// gzipStream is the gzip of what write writes, made without holding it.
func gzipStream(write func(w io.Writer)) string {
	var b bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&b, gzip.BestSpeed)
	write(zw)
	zw.Close()
	return b.String()
}

// repeatTo writes s n times.
func repeatTo(w io.Writer, s string, n int) {
	chunk := strings.Repeat(s, max(1, (1<<20)/len(s)))
	per := len(chunk) / len(s)
	for done := 0; done < n; done += per {
		io.WriteString(w, chunk[:min(per, n-done)*len(s)])
	}
}

// kernelEvents is a trace of n GPU kernels, gzip'd.
func kernelEvents(n int) string {
	return gzipStream(func(w io.Writer) {
		io.WriteString(w, `{"traceEvents": [`)
		for i := range n {
			if i > 0 {
				io.WriteString(w, ",")
			}
			fmt.Fprintf(w, `{"ph":"X","cat":"kernel","name":"ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_nn","pid":0,"tid":7,"ts":%d.5,"dur":12.5,"args":{"correlation":%d,"device":0,"stream":7}}`, i*20, i+1)
		}
		io.WriteString(w, "]}")
	})
}

// oneKernel is a trace event of one kernel named name.
func oneKernel(name string) string {
	return `{"ph": "X", "cat": "kernel", "name": "` + name + `", "pid": 0, "tid": 7, "ts": 100.5, "dur": 12.5}`
}

// ncclDeviceLines is an nccl-tests output with n device lines of distinct
// names before a valid result table.
func ncclDeviceLines(n int, name string) string {
	var b strings.Builder
	b.WriteString("# nccl-tests version 2.17.1\n# Collective test starting: all_reduce_perf\n# Using devices\n")
	for r := range n {
		dev := name
		if dev == "" {
			dev = "GPU model " + strconv.Itoa(r)
		}
		fmt.Fprintf(&b, "#  Rank %d Group  0 Pid %6d on node%d device %2d [0000:00:00] %s\n", r, 1000+r, r/8, r%8, dev)
	}
	b.WriteString("#\n#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n")
	b.WriteString("#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)\n")
	for size := 1 << 16; size <= 1<<30; size *= 4 {
		us := float64(size)/2e4 + 20
		fmt.Fprintf(&b, "%12d  %12d  float  sum  -1  %7.6g  %6.6g  0  0  %7.6g  %6.6g  0  0\n", size, size/4, us, float64(size)/us/1e3, us, float64(size)/us/1e3)
	}
	return b.String()
}

// invalidSearch is the tiny scenario with a [search] of 198,400 layouts,
// all but a handful invalid (tp from 3 to 64 on 8-GPU nodes).
var invalidSearch = withTiny(`policies = ["hydra", "mcore"]`, `policies = ["hydra"]`) +
	"\n[search]\ngpus = [48, 96, 192, 384]\ntp = {from = 3, to = 64, step = 1}\npp = {from = 1, to = 50, step = 1}\nep = {from = 1, to = 16, step = 1}\n"

// hostileRound4Cases lists TestHostileInputs' cases of round four.
func hostileRound4Cases(t *testing.T) []hostileCase {
	t.Helper()
	plan := func(extra string) string {
		return `{"groups": [[{"first_rank": 0, "size": 16, "seqs": [0]}]], "lengths": [1000]` + extra + `}`
	}
	var longLine strings.Builder // 200,000 one-token sequences, each its own group: 10 MB
	longLine.WriteString(`{"groups": [`)
	for mb := range 12500 {
		if mb > 0 {
			longLine.WriteString(",")
		}
		longLine.WriteString("[")
		for r := range 16 {
			if r > 0 {
				longLine.WriteString(",")
			}
			fmt.Fprintf(&longLine, `{"first_rank": %d, "size": 1, "seqs": [%d]}`, r, mb*16+r)
		}
		longLine.WriteString("]")
	}
	longLine.WriteString(`], "lengths": [` + strings.Repeat("1,", 199999) + "1]}")
	traceArgs := func(file string) []string { return []string{"calibrate", "--from-trace", file, "--gpu", "H100-SXM"} }
	nccl := func(file string) []string {
		return []string{"calibrate", "--from-nccl-tests", file, "--base", "H100-SXM", "--out", "p.toml"}
	}
	slurm := map[string]string{"SLURM_ARRAY_TASK_ID": "4611686018427387904", "SLURM_ARRAY_TASK_MIN": "0",
		"SLURM_ARRAY_TASK_MAX": "4611686018427387904", "SLURM_ARRAY_TASK_STEP": "4611686018427387904", "SLURM_ARRAY_TASK_COUNT": "2"}
	searchWith := func(axis string) string {
		return withTiny(`policies = ["hydra", "mcore"]`, `policies = ["hydra"]`) + "\n[search]\n" + axis + "\n"
	}
	return []hostileCase{
		// 1. An external policy's numbers are input (a panic, prices of
		// nothing, a sequence on no GPU, a panic, a cost-model internal).
		{name: "r4 1: plan lengths of -1,000,000", args: runEvil, files: evilFiles(`{"groups": [[{"first_rank": 0, "size": 16, "seqs": [0]}]], "lengths": [-1000000]}`),
			code: 0, want: []string{"evil: error: iteration 0: plan: external policy evil, batch 0: its plan breaks the rules: lengths[0] = -1000000 tokens: must be in [1, 33554432]"}},
		{name: "r4 1: plan lengths of 0", args: runEvil, files: evilFiles(`{"groups": [[{"first_rank": 0, "size": 16, "seqs": [0]}]], "lengths": [0]}`),
			code: 0, want: []string{"evil: error: ", "lengths[0] = 0 tokens: must be in [1, 33554432]"}},
		{name: "r4 1: first_rank near 2^63", args: runEvil, files: evilFiles(`{"groups": [[{"first_rank": 9223372036854775000, "size": 1000, "seqs": [0]}]], "lengths": [1000]}`),
			code: 0, want: []string{"evil: error: ", "group 0 (first_rank 9223372036854775000, size 1000): outside the pool [0, 16)"}},
		{name: "r4 1: stall_work of 9e18", args: runEvil, files: evilFiles(plan(`, "stall_work": {"pool_visits": 9000000000000000000}`)),
			code: 0, want: []string{"evil: error: ", "stall_work.pool_visits = 9000000000000000000: must be in [0, 10000000000]"}},
		{name: "r4 1: stall_work of -1e15", args: runEvil, files: evilFiles(plan(`, "stall_work": {"heap_ops": -1000000000000000}`)),
			code: 0, want: []string{"evil: error: ", "stall_work.heap_ops = -1000000000000000: must be in [0, 10000000000]"}},

		// 2. Bounds set by the memory and time they imply.
		{name: "r4 2: a 10 MB plan line of 200,000 sequences", args: runEvil, files: evilFiles(longLine.String()),
			code: 0, want: []string{"evil: error: ", "its plan line is longer than", "per sequence of the batch"}},
		{name: "r4 2: 100 KB of diagnostics", args: runEvil, files: evilFiles(plan(`, "diagnostics": {"pad": "` + strings.Repeat("x", 100000) + `"}`)),
			code: 0, want: []string{"evil: error: ", "diagnostics: 100011 bytes of JSON: at most 65536 (MaxDiagnosticsBytes)"}},
		{name: "r4 2: --from-trace of 128 MiB of gzip'd whitespace", args: traceArgs("t.json.gz"), slow: true,
			files: map[string]string{"t.json.gz": gzipStream(func(w io.Writer) { io.WriteString(w, `{"traceEvents": [`); repeatTo(w, " ", 128<<20) })},
			code:  2, want: []string{"t.json.gz: byte 65553: more than 65536 bytes of whitespace in a row (MaxTraceWhitespace)"}},
		{name: "r4 2: --from-trace of a 64 MiB kernel name", args: traceArgs("t.json.gz"), slow: true,
			files: map[string]string{"t.json.gz": gzipStream(func(w io.Writer) {
				io.WriteString(w, `{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "`)
				repeatTo(w, "a", 64<<20)
				io.WriteString(w, `", "ts": 1, "dur": 1}]}`)
			})},
			code: 2, want: []string{"a string longer than 1048576 bytes (MaxTraceStringBytes)"}},
		{name: "r4 2: --from-trace of 1M kernels", args: traceArgs("t.json.gz"), slow: true, files: map[string]string{"t.json.gz": kernelEvents(1_000_000)},
			code: 2, want: []string{"the events kept would take more than 134217728 bytes (MaxTraceKeptBytes"}, maxMiB: 400},
		{name: "r4 2: --from-trace of 60M nesting levels in 117 KB", args: traceArgs("t.json.gz"),
			files: map[string]string{"t.json.gz": gzipStream(func(w io.Writer) { io.WriteString(w, `{"traceEvents": `); repeatTo(w, "[", 60_000_000) })},
			code:  2, want: []string{"arrays and objects nested more than 64 deep (MaxTraceNesting)"}},
		{name: "r4 2: --from-trace with 150,000 device entries", args: traceArgs("t.json"),
			files: map[string]string{"t.json": `{"deviceProperties": [` + strings.Repeat(`{"id": 0, "name": "NVIDIA H100 80GB HBM3", "totalGlobalMem": 85000000000},`, 150000) + `{}], "traceEvents": [` + oneKernel("k") + `]}`},
			code:  2, want: []string{"more than 1024 deviceProperties entries (MaxTraceDevices)"}},
		{name: "r4 2: --from-nccl-tests with 200,000 device lines", args: nccl("n.txt"), files: map[string]string{"n.txt": ncclDeviceLines(200_000, "")},
			code: 2, want: []string{"more than 131072 device lines (MaxNCCLTestsRanks)"}},
		{name: "r4 2: --from-nccl-tests with 80,000 device lines", args: nccl("n.txt"), files: map[string]string{"n.txt": ncclDeviceLines(80_000, "")},
			code: 0, want: []string{"all_reduce over 80000 ranks on 10000 node(s)", "wrote profile"}, writes: []string{"p.toml"}},
		{name: "r4 2: a search of 198,400 invalid layouts", args: []string{"search", "s.toml", "--out", "out", "--no-figures"}, slow: true,
			files: map[string]string{"s.toml": invalidSearch}, env: map[string]string{"GOMEMLIMIT": "off"}, watchdog: 5 * time.Minute,
			code: 0, want: []string{"198400 candidates", "best layout per policy"}, writes: []string{"out"}, maxMiB: 1300},

		// 4. Arithmetic that wraps.
		{name: "r4 4: --shard 0/300000", args: []string{"sweep", "s.toml", "--shard", "0/300000"}, files: map[string]string{"s.toml": tinySweepTOML},
			code: 2, want: []string{`--shard "0/300000": want I/N with 0 <= I < N <= 200000`}},
		{name: "r4 4: --shard 0/9e12", args: []string{"search", "s.toml", "--shard", "0/9000000000000"}, files: map[string]string{"s.toml": searchWith("tp = [1]")},
			code: 2, want: []string{`--shard "0/9000000000000": want I/N with 0 <= I < N <= 200000`}},
		{name: "r4 4: --shard auto with a Slurm step near 2^62", args: []string{"sweep", "s.toml", "--shard", "auto"}, files: map[string]string{"s.toml": tinySweepTOML},
			env: slurm, code: 2, want: []string{`SLURM_ARRAY_TASK_ID = "4611686018427387904"`, "want an integer in [0, 2147483647]"}},
		{name: "r4 4: a [search] step near 2^63", args: []string{"scenarios", "check", "s.toml"}, files: map[string]string{"s.toml": searchWith("tp = {from = 1, to = 8, step = 9223372036854775807}")},
			code: 2, want: []string{"search.tp: range step = 9223372036854775807: must be in [1, 1073741824]"}},
		{name: "r4 4: a [search] factor near 2^62", args: []string{"scenarios", "check", "s.toml"}, files: map[string]string{"s.toml": searchWith("pp = {from = 3, to = 8, factor = 4611686018427387904}")},
			code: 2, want: []string{"search.pp: range factor = 4611686018427387904: must be in [2, 1073741824]"}},
		{name: "r4 4: --by 9999-12-31", args: []string{"search", "s.toml", "--tokens", "1e12", "--by", "9999-12-31"}, files: map[string]string{"s.toml": searchWith("tp = [1]")},
			code: 2, want: []string{"--by 9999-12-31: ", " days from today: must be in (0, 36500], as --days"}},

		// 5. Terminal escapes are written escaped.
		{name: "r4 5: an external policy's error", args: runEvil, files: evilFiles(`{"error": "no\u001b[2J\u001b]0;pwned\u0007 thanks"}`),
			code: 0, want: []string{`it refused the batch: no\x1b[2J\x1b]0;pwned\x07 thanks`}},
		{name: "r4 5: an nccl-tests device name", args: nccl("n.txt"), files: map[string]string{"n.txt": ncclDeviceLines(8, "H100\x1b[2J\x1b]0;pwned\x07")},
			code: 0, want: []string{`on H100\x1b[2J\x1b]0;pwned\x07`}, writes: []string{"p.toml"}},
		{name: "r4 5: a trace's device name", args: traceArgs("t.json"),
			files: map[string]string{"t.json": `{"deviceProperties": [{"id": 0, "name": "H100\u001b[2J\u001b]0;pwned\u0007"}], "traceEvents": [` + oneKernel("k") + `]}`},
			code:  0, want: []string{`on H100\x1b[2J\x1b]0;pwned\x07`}},

		// 6. A NaN option is refused when checked.
		{name: "r4 6: a NaN option of an external policy", args: []string{"scenarios", "check", "s.toml"},
			files: map[string]string{"s.toml": evilTiny + "options = { fill = nan }\n"},
			code:  2, want: []string{"run.external.evil.options.fill = NaN: must be a finite number (the options are sent as JSON)"}},

		// 8. A scenario runs no program without consent; check says so.
		{name: "r4 8: run without --allow-exec", args: []string{"run", "s.toml", "--no-files"}, files: map[string]string{"s.toml": evilTiny, "evil.sh": "touch ran\n" + evilSh},
			code: 2, want: []string{`[run.external.evil] command = ["sh", "evil.sh"] in "."`, "dcpsim starts a scenario's programs only with --allow-exec"}},
		{name: "r4 8: sweep without --allow-exec", args: []string{"sweep", "s.toml", "--out", "out"}, files: map[string]string{"s.toml": evilTiny + sweepTail, "evil.sh": "touch ran\n" + evilSh},
			code: 2, want: []string{`[run.external.evil] command = ["sh", "evil.sh"]`, "--allow-exec"}},
		{name: "r4 8: search without --allow-exec", args: []string{"search", "s.toml", "--out", "out"},
			files: map[string]string{"s.toml": strings.Replace(evilTiny, `policies = ["hydra", "evil"]`, `policies = ["evil"]`, 1) + "\n[search]\ntp = [1]\n", "evil.sh": "touch ran\n" + evilSh},
			code:  2, want: []string{`[run.external.evil] command = ["sh", "evil.sh"]`, "--allow-exec"}},
		{name: "r4 8: trace without --allow-exec", args: []string{"trace", "s.toml", "--policy", "evil", "--ranks", "0", "--out", "out"},
			files: map[string]string{"s.toml": evilTiny, "evil.sh": "touch ran\n" + evilSh},
			code:  2, want: []string{`[run.external.evil] command = ["sh", "evil.sh"]`, "--allow-exec"}},
		{name: "r4 8: scenarios check names the programs", args: []string{"scenarios", "check", "s.toml"}, files: map[string]string{"s.toml": evilTiny},
			code: 0, want: []string{"ok   s.toml (tiny, 1 point(s)); it names 1 program(s), which run, sweep, search and trace start only with --allow-exec:",
				`[run.external.evil] command = ["sh", "evil.sh"] in "."`}},
		{name: "r4 8: run with --allow-exec says what it starts", args: runEvil, files: evilFiles(plan("")),
			code: 0, want: []string{"hydra", "evil"}},
	}
}

// TestRunAllowExecNotice (issue 41 class 8): with --allow-exec the program
// is printed on stderr before it starts, and runs; without it, it does not
// run (no file it would make appears).
func TestRunAllowExecNotice(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{"s.toml": evilTiny, "evil.sh": "touch ran\n" + evilSh,
		"resp.json": `{"groups": [[{"first_rank": 0, "size": 16, "seqs": [0]}]], "lengths": [1000]}` + "\n"} {
		os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644)
	}
	sc := filepath.Join(dir, "s.toml")
	if code, _, errOut := dcpsim(t, "run", sc, "--no-files"); code != exitInput || !strings.Contains(errOut, "--allow-exec") {
		t.Errorf("without --allow-exec: exit %d: %s", code, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, "ran")); err == nil {
		t.Fatal("the program ran without --allow-exec")
	}
	code, _, errOut := dcpsim(t, "run", sc, "--no-files", "--allow-exec")
	want := `dcpsim: --allow-exec: starting [run.external.evil] command = ["sh", "evil.sh"] in "` + dir + `"`
	if code != exitOK || !strings.HasPrefix(errOut, want) {
		t.Errorf("with --allow-exec: exit %d, stderr %q, want it to open with %q", code, errOut, want)
	}
	if _, err := os.Stat(filepath.Join(dir, "ran")); err != nil {
		t.Errorf("with --allow-exec the program did not run: %v", err)
	}
}

// TestExternalChildGone (issue 41 class 7): an external policy that starts
// a child in the background and answers normally leaves nothing running
// once dcpsim has exited.
func TestExternalChildGone(t *testing.T) {
	if testing.Short() {
		t.Skip("child processes")
	}
	dir := t.TempDir()
	for name, body := range evilFiles(`{"groups": [[{"first_rank": 0, "size": 16, "seqs": [0]}]], "lengths": [1000]}`) {
		os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644)
	}
	os.WriteFile(filepath.Join(dir, "evil.sh"), []byte("sleep 3600 &\necho $! > child.pid\n"+evilSh), 0o644)
	if got := runChild(t, dir, time.Minute, nil, runEvil...); got.code != exitOK {
		t.Fatalf("exit %d: %s", got.code, got.stderr)
	}
	b, err := os.ReadFile(filepath.Join(dir, "child.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
	// SIGKILL went to the policy's process group before dcpsim exited.
	waitFor(t, "the background child to die", func() bool {
		st, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		_, after, _ := strings.Cut(string(st), ") ")
		return err != nil || strings.HasPrefix(after, "Z")
	})
}

// TestTraceOutLink (issue 41 class 3): trace --out through a link is
// refused and writes nothing, into the link's target above all.
func TestTraceOutLink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "target")
	os.Mkdir(target, 0o755)
	link := filepath.Join(dir, "link")
	if err := os.Symlink(target, link); err != nil {
		t.Skip(err)
	}
	code, _, errOut := dcpsim(t, "trace", "testbed-32k", "--policy", "hydra", "--ranks", "0", "--out", link)
	if code != exitInput || !strings.Contains(errOut, "--out "+link+": is a link") {
		t.Errorf("exit %d: %s", code, errOut)
	}
	if got := listTree(target); len(got) > 0 {
		t.Errorf("wrote %v into the link's target", got)
	}
}

// TestSearchRound4 (issue 41 class 3): on the CLI, an edited evaluation
// file does not change a resumed search's ranking; a shard that lost a
// candidate, and --out naming a shard's own folder, are refused by merge,
// which deletes nothing.
func TestSearchRound4(t *testing.T) {
	dir := t.TempDir()
	one := filepath.Join(dir, "one")
	code, want, errOut := dcpsim(t, "search", "testdata/search-small.toml", "--out", one, "--no-figures", "--json")
	if code != exitOK {
		t.Fatalf("search: %s", errOut)
	}
	evals, _ := filepath.Glob(filepath.Join(one, "evals", "*.json"))
	forged := 0
	for _, p := range evals {
		editJSON(t, p, func(m map[string]any) {
			if m["status"] == "" {
				m["tokens_per_day"] = 9.99e15
				forged++
			}
		})
	}
	if forged == 0 {
		t.Fatal("no ok evaluation to forge")
	}
	if code, got, errOut := dcpsim(t, "search", "testdata/search-small.toml", "--out", one, "--no-figures", "--json"); code != exitOK || got != want {
		t.Errorf("resumed from %d forged evaluations: exit %d, the ranking changed: %v\n%s", forged, code, got != want, errOut)
	}
	s0, s1 := filepath.Join(dir, "0"), filepath.Join(dir, "1")
	for i, d := range []string{s0, s1} {
		if code, _, errOut := dcpsim(t, "search", "testdata/search-small.toml", "--out", d, "--shard", []string{"0/2", "1/2"}[i], "--no-figures"); code != exitOK {
			t.Fatalf("shard %d: %s", i, errOut)
		}
	}
	shardFile := filepath.Join(s0, "search-shard.json")
	good, _ := os.ReadFile(shardFile)
	if code, _, errOut := dcpsim(t, "merge", "--out", s0, s0, s1); code != exitInput || !strings.Contains(errOut, "is the shard folder") {
		t.Errorf("merge --out s0 s0 s1: exit %d: %s", code, errOut)
	}
	if b, _ := os.ReadFile(shardFile); !bytes.Equal(b, good) {
		t.Error("merge --out s0 s0 s1 changed s0's shard file")
	}
	editJSON(t, shardFile, func(m map[string]any) {
		c := m["candidates"].([]any)
		st := c[len(c)-1].(map[string]any)["status"].(string)
		m["candidates"] = c[:len(c)-1]
		counts := m["counts"].(map[string]any)
		if counts[st] = counts[st].(float64) - 1; counts[st] == 0.0 {
			delete(counts, st)
		}
	})
	out := filepath.Join(dir, "merged")
	if code, _, errOut := dcpsim(t, "merge", "--out", out, s0, s1); code != exitInput || !strings.Contains(errOut, "candidates (missing ids") {
		t.Errorf("a shard with a candidate deleted: exit %d: %s", code, errOut)
	}
	if _, err := os.Stat(out); err == nil {
		t.Errorf("%s written", out)
	}
}

// TestRound4Coverage: every class of issue 41 that a CLI can show has a
// case above (a reminder when one is renamed away).
func TestRound4Coverage(t *testing.T) {
	var names []string
	for _, c := range hostileRound4Cases(t) {
		names = append(names, c.name)
	}
	for _, class := range []string{"r4 1:", "r4 2:", "r4 4:", "r4 5:", "r4 6:", "r4 8:"} {
		if !slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(n, class) }) {
			t.Errorf("no case of %s", class)
		}
	}
}
