# What every experiment's Makefile shares. Each of its runs is a chain of
# files, so that `make -j2` runs a grid and a second `make` redoes only what
# changed:
#
#   $(OUT)/shards-W/manifest.json   dl-shard: the dataset dealt to W workers
#   $(OUT)/RUN/plan.json            dl-plan: the job with the run's overrides
#                                   (rewritten only when its content changes)
#   $(OUT)/RUN/run/run.json         the run (its directory): train-local.sh on
#                                   ports of its own, or sbatch --wait with LAUNCH=slurm
#   $(OUT)/RUN/result.json          dl-report --json: the run's final figures
#   $(OUT)/report/                  dl-report over every run: report.txt, loss and accuracy PNG/SVG
#
# The including Makefile sets JOB (a job file), RUNS (names), and per run
# sets_RUN (its section.field=value overrides) and workers_RUN (W above),
# and job_RUN where a run trains another job file than JOB; COMMON holds
# overrides every run shares, TITLE the pictures' title. SHARD_FROM says
# what dl-shard deals (default: --dataset DATASET), SHARD_NEEDS what must
# exist first (an image folder the including Makefile makes, say).
# PEER_RUNS names runs the including Makefile makes itself, each a
# $(OUT)/RUN/run/ directory as dl-report reads it (a PyTorch reference):
# the report shows them beside RUNS, with --target TARGET where it is set.
# EXCLUSIVE = yes makes local runs take the machine one at a time (make -j
# still plans, shards and reports beside them): for experiments that compare
# times, which a neighbour sharing the cores would skew.
ROOT := $(abspath $(dir $(lastword $(MAKEFILE_LIST)))..)
BIN ?= $(ROOT)/build
OUT ?= out
LAUNCH ?= local
# With LAUNCH=slurm: nodes per run's allocation.
NODES ?= 2
# The job's dataset, and the seed that deals it to the workers.
DATASET ?= fashion-mnist
SEED ?= 1

.DELETE_ON_ERROR:
.SECONDEXPANSION:
.PHONY: all report clean
all: report
report: $(OUT)/report/report.txt

# The tools, built first when they are the checkout's own and missing.
TOOLS := $(BIN)/dl-shard $(BIN)/dl-plan $(BIN)/dl-report
$(TOOLS) &:
	$(MAKE) -C $(ROOT) all

# Static pattern rules: every file of the chain is a target by name, so none
# is an intermediate that make would skip when missing or remove when done.
SHARD_FROM ?= --dataset $(DATASET)
SHARDS := $(sort $(foreach r,$(RUNS),$(OUT)/shards-$(workers_$(r))/manifest.json))
$(SHARDS): $(OUT)/shards-%/manifest.json: $(SHARD_NEEDS) | $(TOOLS)
	$(BIN)/dl-shard $(SHARD_FROM) --out $(@D) --shards $* --seed $(SEED) >/dev/null

job_of = $(or $(job_$1),$(JOB))
$(RUNS:%=$(OUT)/%/plan.json): $(OUT)/%/plan.json: $$(call job_of,$$*) $(MAKEFILE_LIST) \
  $$(OUT)/shards-$$(workers_$$*)/manifest.json | $(TOOLS)
	@mkdir -p $(@D)
	$(BIN)/dl-plan $(call job_of,$*) --strategy data \
	  $(foreach s,$(COMMON) $(sets_$*),--set $(s)) --set data.shards=$(abspath $(OUT))/shards-$(workers_$*) \
	  -o $@.new
	@if cmp -s $@.new $@; then rm $@.new; else mv $@.new $@; fi

# A run starts clean: what an earlier run of it left (checkpoints above all)
# goes first. A run that failed (a rate that diverges, say) is a result: its
# run.json says so and the report shows it; one that left no run.json
# (interrupted, bad input) stops make, and the next make tries it again.
ifeq ($(LAUNCH),slurm)
launch = jq .job $1 >$2/job.json && RUN_DIR=$(abspath $2) SHOAL_ROOT=$(ROOT) SHOAL_BIN=$(BIN) \
  sbatch --wait --nodes=$(NODES) --output=$2/launch.log $(ROOT)/scripts/slurm/train.sbatch $2/job.json
else ifeq ($(LAUNCH),local)
# A command prefixed with $(exclusive) waits for the machine as runs do.
exclusive = $(if $(filter yes,$(EXCLUSIVE)),flock $(OUT)/.machine)
launch = SHOAL_BIN=$(BIN) $(exclusive) \
  $(ROOT)/scripts/train-local.sh --plan $1 --run-dir $2 >/dev/null 2>$2/launch.log
else
$(error LAUNCH is local or slurm, not '$(LAUNCH)')
endif
$(RUNS:%=$(OUT)/%/run/run.json): $(OUT)/%/run/run.json: $(OUT)/%/plan.json
	@rm -rf $(@D) && mkdir -p $(@D)
	$(call launch,$<,$(@D)) || { tail -n 3 $(@D)/launch.log >&2; grep -qs '"status": "failed"' $@; }

REPORTED := $(RUNS) $(PEER_RUNS)
$(REPORTED:%=$(OUT)/%/result.json): $(OUT)/%/result.json: $(OUT)/%/run/run.json
	$(BIN)/dl-report --json --label $* $(if $(TARGET),--target $(TARGET)) $(<D) >$@

$(OUT)/report/report.txt: $(REPORTED:%=$(OUT)/%/result.json)
	@mkdir -p $(@D)
	$(BIN)/dl-report $(REPORTED:%=$(OUT)/%/run) $(REPORTED:%=--label %) --out $(@D) --title "$(TITLE)" \
	  $(if $(TARGET),--target $(TARGET)) >$@.new
	@mv $@.new $@
	@cat $@

clean:
	rm -rf $(OUT)
