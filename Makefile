# dcpsim: the two set-up commands are `make run` and `make test` (README.md).
GO ?= go
SCENARIO ?= testbed-256k

.PHONY: run test test-quick build bench fuzz fmt clean calibrate figures validate

## run: the main job on the embedded default scenario (the paper's 512-GPU testbed at
## 256K): every policy on identical batches, timed with the cost model. It writes
## runs/$(SCENARIO)/ (ignored by git); only `make figures` writes results/.
run: build
	bin/dcpsim run --scenario $(SCENARIO) --out runs/$(SCENARIO)

## test: gofmt check, go vet, staticcheck, and every test; the packages that start
## goroutines again under the race detector; then vet and test again with the cuda
## tag (the CUDA backend builds through cgo without CUDA installed and its tests
## skip when no GPU is found).
RACE_PACKAGES = ./experiment/ ./cmd/dcpsim/ ./hwbackend/ ./sched/flexsp/ ./milp/cbc/ ./costmodel/ ./internal/extpolicy/
test:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt would change:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...
	$(GO) tool staticcheck ./...
	$(GO) test ./...
	$(GO) test -race $(RACE_PACKAGES)
	$(GO) vet -tags cuda ./...
	$(GO) test -tags cuda ./...

## test-quick: the development loop: the gofmt check, go vet and every test
## with -short (no child-process hostile inputs or long property sweeps), no
## race detector, staticcheck or cuda build; make test before committing.
test-quick:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt would change:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...
	$(GO) test -short ./...

## calibrate: measure this machine's CPU for BUDGET and fit a profile (a check of the
## calibration loop; on a GPU machine run hwbackend/cuda/calibrate.sh instead).
BUDGET ?= 30s
calibrate:
	mkdir -p calibration
	$(GO) run ./cmd/dcpsim calibrate --backend cpu --budget $(BUDGET) --out calibration/cpu.toml

## build: the dcpsim binary in bin/.
build:
	$(GO) build -buildvcs=auto -o bin/dcpsim ./cmd/dcpsim

## bench: every benchmark, with allocations.
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

## fuzz: every fuzz target of every package (found with go test -list), each for
## FUZZTIME (default 20s).
FUZZTIME ?= 20s
fuzz:
	@for pkg in $$($(GO) list ./...); do \
		for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
			echo "$$pkg $$f"; \
			$(GO) test -run '^$$' -fuzz "^$$f\$$" -fuzztime $(FUZZTIME) $$pkg || exit 1; \
		done; \
	done

fmt:
	gofmt -w $$(git ls-files '*.go')

clean:
	rm -rf bin

## validate: predicted step times beside the published runs of
## validation/atscale.csv (today's models, 16 to 8,192 GPUs) and
## validation/megatron-lm.csv (dense GPT, 2021-22), sources in
## validation/README.md, with the errors by source, kind and GPU.
validate: build
	bin/dcpsim validate --table validation/atscale.csv --table validation/megatron-lm.csv

## figures: regenerate results/ for the paper's scenarios, the validation against
## published Megatron-LM runs (results/validation.jsonl), results/REPORT.md, the
## results tables README.md and docs/*.md quote from it, and results/index.html (a
## page linking every results folder's index.html).
FIGURE_RUNS = testbed-32k testbed-256k testbed-256k-v2-lite production-256k production-256k-node-ulysses hy3-8k hexiseq-h100-a100 hetero-long-256k hexiseq-flop-mixed hexiseq-flop-h100
FIGURE_SWEEPS = weak-scaling production-256k-cap production-256k-fabric hexiseq-contexts hexiseq-four-kinds bytescale-paper bytescale-offload-64k wlbllm-paper flexsp-paper
## A search's results keep its outputs and the printed tables (search.txt), not
## the evaluations it resumes from (evals/).
FIGURE_SEARCHES = search-h800-4k search-h800-16k
figures: build
	for s in $(FIGURE_RUNS); do bin/dcpsim run $$s --out results/$$s || exit 1; done
	for s in $(FIGURE_SWEEPS); do rm -rf results/$$s; bin/dcpsim sweep $$s --out results/$$s || exit 1; done
	for s in $(FIGURE_SEARCHES); do rm -rf results/$$s; bin/dcpsim search $$s --out results/$$s --tokens 1e13 --days 60 > results/$$s.txt.tmp || exit 1; \
		rm -rf results/$$s/evals results/$$s/search-state.json; mv results/$$s.txt.tmp results/$$s/search.txt; done
	bin/dcpsim validate --table validation/megatron-lm.csv --json > results/validation.jsonl.tmp && mv results/validation.jsonl.tmp results/validation.jsonl
	bin/dcpsim validate --table validation/atscale.csv --table validation/megatron-lm.csv --out results/validation > /dev/null
	mkdir -p results/nccl-tests
	bin/dcpsim calibrate --from-nccl-tests calib/testdata/nccltests/a3mega-h100-2x8-all_reduce.txt --nccl-program all_reduce_perf \
		--base H100-SXM --out results/nccl-tests/h100-a3mega.toml > results/nccl-tests/a3mega-h100-2x8-all_reduce.txt.tmp && \
		mv results/nccl-tests/a3mega-h100-2x8-all_reduce.txt.tmp results/nccl-tests/a3mega-h100-2x8-all_reduce.txt
	bin/dcpsim report --results results --index --readme README.md $(addprefix --readme ,$(wildcard docs/*.md))
