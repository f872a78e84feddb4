package experiment

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dcpsim/dcpsim/badinput"
	"github.com/dcpsim/dcpsim/scenarios"
)

// externalScenario is tiny with hydra beside external policies that
// misbehave (testdata/external/*.sh), run in that folder.
const externalScenario = `name = "tiny-external"
` + tinyJob + `
[run]
iterations = 3
warmup_iterations = 1
policies = ["hydra", "garbage", "hang", "exits", "twice"]

[run.external.garbage]
command = ["sh", "garbage.sh"]

[run.external.hang]
command = ["sh", "hang.sh"]
timeout_seconds = 0.5

[run.external.exits]
command = ["sh", "exits.sh"]

[run.external.twice]
command = ["sh", "twice.sh"]
`

// TestExternalPoliciesFail: an external policy that prints garbage, hangs,
// exits early or returns an invalid plan is a clear error in its own row,
// and hydra beside them still runs; every process's stderr is kept.
func TestExternalPoliciesFail(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh on PATH")
	}
	sc, err := scenarios.Parse([]byte(externalScenario), filepath.Join("testdata", "external", "s.toml"))
	if err != nil {
		t.Fatal(err)
	}
	begin := time.Now()
	out, err := RunContext(context.Background(), sc, Options{AllowExec: true})
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(begin); d > 20*time.Second {
		t.Errorf("took %v: the hanging policy's 0.5 s timeout did not hold", d)
	}
	want := map[string]string{
		"garbage": "external policy garbage, batch 0 (line 1 of its stdin and stdout): its plan line is not a plan object",
		"hang":    "no plan line within the 500ms timeout",
		"exits":   `it exited with exit status 3; its stderr ends "no plans today"`,
		"twice":   "its plan breaks the rules: microbatch 0 group 0 (ranks 0..0): sequence 0 already placed",
	}
	for _, ps := range out.Summary.Policies {
		if ps.Policy == "hydra" {
			if ps.Error != "" || ps.StepSecondsMean <= 0 {
				t.Errorf("hydra: error %q, step %v: it should have run", ps.Error, ps.StepSecondsMean)
			}
			continue
		}
		if !strings.Contains(ps.Error, want[ps.Policy]) {
			t.Errorf("%s: error %q, want %q", ps.Policy, ps.Error, want[ps.Policy])
		}
		if ps.External == nil || ps.External.Log != "external-"+ps.Policy+".log" {
			t.Errorf("%s: external %+v", ps.Policy, ps.External)
		}
	}
	logs := map[string]string{}
	for _, l := range out.Logs {
		logs[l.File] = string(l.Data)
	}
	if !strings.Contains(logs["external-exits.log"], "no plans today") || len(out.Logs) != 4 {
		t.Errorf("logs %v", logs)
	}
	dir := t.TempDir()
	files, err := WriteRun(context.Background(), filepath.Join(dir, "r"), sc, out, nil)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "r", "external-exits.log")); err != nil || !strings.Contains(string(b), "no plans today") {
		t.Errorf("the results folder's log: %q, %v (files %v)", b, err, files)
	}
}

// TestExternalNeedsConsent (issue 41 class 8): a scenario that names
// programs is refused by run, sweep, search and trace unless the caller
// allows them (the CLI's --allow-exec), before any starts: the error is bad
// input naming every program, its command and its folder. The same
// scenario runs with consent; a run of its built-in policies alone needs
// none.
func TestExternalNeedsConsent(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "ran")
	src := strings.Replace(externalScenario, `policies = ["hydra", "garbage", "hang", "exits", "twice"]`, `policies = ["hydra", "evil"]`, 1) +
		"\n[run.external.evil]\ncommand = [\"sh\", \"-c\", \"touch " + marker + "\"]\n"
	sc, err := scenarios.Parse([]byte(src), filepath.Join(dir, "s.toml"))
	if err != nil {
		t.Fatal(err)
	}
	want := `[run.external.evil] command = ["sh", "-c", "touch ` + marker + `"] in "` + dir + `"`
	check := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, ErrExecNotAllowed) || !badinput.Is(err) || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "--allow-exec") {
			t.Errorf("%s without consent: %v", what, err)
		}
		if _, err := os.Stat(marker); err == nil {
			t.Fatalf("%s started the program without consent", what)
		}
	}
	_, err = RunContext(context.Background(), sc, Options{})
	check("run", err)
	_, err = ChakraTrace(sc, "evil", 1, []int{0})
	check("trace", err)
	sw, err := scenarios.Parse([]byte(src+"\n[sweep]\nbudget_tokens = [8192, 16384]\n"), filepath.Join(dir, "sw.toml"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = Sweep(context.Background(), sw, SweepOptions{Dir: filepath.Join(dir, "sweep"), Jobs: 1})
	check("sweep", err)
	se, err := scenarios.Parse([]byte(src+"\n[search]\ntp = [1]\n"), filepath.Join(dir, "se.toml"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = Search(context.Background(), se, SearchOptions{Dir: filepath.Join(dir, "search"), Jobs: 1})
	check("search", err)
	if out, err := RunContext(context.Background(), sc, Options{Policy: "hydra"}); err != nil || out.Summary.Policies[0].Error != "" {
		t.Errorf("hydra alone: %v", err)
	}
	if got := Programs(sc); len(got) != 1 || got[0].Policy != "evil" || got[0].Dir != dir {
		t.Errorf("Programs = %+v", got)
	}
	if _, err := RunContext(context.Background(), sc, Options{AllowExec: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Errorf("with consent the program did not run: %v", err)
	}
}
