# trueup build and test entry points. `make test` is what CI runs (.ci/run).
#
# Pass-through variables:
#   GOFLAGS     read by go itself, e.g. make test GOFLAGS=-race
#   TESTFLAGS   extra `go test` flags, e.g. make test TESTFLAGS='-run TestSwap -v'
#   PKGS        packages to test (default ./...)
#   BENCHFLAGS  flags for cmd/trueup-bench

SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c

# CI runs with the machine's environment, where go may not be on PATH.
ifeq ($(shell command -v go),)
export PATH := $(PATH):/usr/local/go/bin
endif

export TESTFLAGS BENCHFLAGS PKGS

.PHONY: all build run generate check-generated fmt vet chromium screenshots test bench fuzz clean

all: build

build:
	go build -o bin/trueup ./cmd/trueup

# The demo project and warehouse on embedded DuckDB, served at http://127.0.0.1:8080.
run: build
	./bin/trueup demo --dir demo

generate:
	go tool templ generate

# Generated *_templ.go files are committed; fail when regenerating changes them or adds new ones.
check-generated:
	go tool templ generate
	@changed=$$(git status --porcelain --untracked-files=all -- '*_templ.go'); \
	if [[ -n $$changed ]]; then \
		echo "check-generated: *_templ.go differ from what is committed (run make generate, commit the result):" >&2; \
		echo "$$changed" >&2; \
		exit 1; \
	fi

fmt:
	go fmt ./...

vet:
	go vet ./...

chromium:
	scripts/chromium.sh

# A PNG of every page the browser walk shows (TestBrowserWalk: headless Chromium at 1280x800
# over the demo), numbered in walk order, into SHOTS, for review. The walk's layout checks run
# too: the target fails when a page scrolls sideways, a date wraps or a chart label is cut off.
SHOTS ?= test-artifacts/screenshots
screenshots: chromium
	TRUEUP_SCREENSHOTS=$(abspath $(SHOTS)) go test ./cmd/trueup/ -run '^TestBrowserWalk$$' -count=1
	@echo "screenshots: $$(ls $(SHOTS)/*.png | wc -l) pages in $(SHOTS)" >&2

# One recipe so the total time and go test's exit status come out at the end.
test:
	@began=$$SECONDS; rc=0; \
	{ scripts/chromium.sh && \
	  $(MAKE) --no-print-directory check-generated vet && \
	  scripts/test.sh test; } || rc=$$?; \
	echo "make test: $$((SECONDS - began))s, exit $$rc" >&2; \
	exit $$rc

bench:
	scripts/test.sh bench

clean:
	rm -rf bin

# Each fuzz target for FUZZTIME (go test ./... runs only their checked-in seed corpora).
FUZZTIME ?= 60s
fuzz:
	go test ./sqlfile -run '^$$' -fuzz '^FuzzScan$$' -fuzztime $(FUZZTIME)
	go test ./rules -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME)
	go test ./backfill -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME)
	go test ./notices -run '^$$' -fuzz '^FuzzParseExposure$$' -fuzztime $(FUZZTIME)
	go test ./config -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME)
