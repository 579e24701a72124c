# A thin wrapper over CMake: the build itself lives in CMakeLists.txt.
BUILD ?= build
JOBS ?= 2

.PHONY: all tools deps deps-run test test-sanitize fuzz demo bench bench-gpu autoencoder char-rnn slurm clean
all:
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release >/dev/null
	@cmake --build $(BUILD) -j$(JOBS)

# The dl-* tools alone: what make demo runs.
tools:
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release >/dev/null
	@cmake --build $(BUILD) -j$(JOBS) --target tools

deps:
	scripts/install-deps.sh

deps-run:
	scripts/install-deps.sh run

test: deps all
	scripts/run-tests.sh $(BUILD) -j$(JOBS) --timeout 300

# The suite again, built by clang with AddressSanitizer and UndefinedBehaviorSanitizer and
# instrumented for libFuzzer (without the CUDA device: its tests need a GPU, and the normal
# build compiles it), less the long training runs labelled `long` in tests/CMakeLists.txt.
# make fuzz runs its libFuzzer targets (tests/fuzz/) on the same build, for FUZZ_SECONDS each.
SANITIZE_BUILD ?= build-sanitize
FUZZ_SECONDS ?= 30
SANITIZE_CONFIGURE = cmake -S . -B $(SANITIZE_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang \
  -DCMAKE_CXX_COMPILER=clang++ -DSHOAL_FUZZ=ON -DSHOAL_CUDA=OFF >/dev/null
test-sanitize: deps
	@$(SANITIZE_CONFIGURE)
	@cmake --build $(SANITIZE_BUILD) -j$(JOBS)
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
	  scripts/run-tests.sh $(SANITIZE_BUILD) -j$(JOBS) --timeout 600 -LE long

fuzz: deps
	@$(SANITIZE_CONFIGURE)
	@cmake --build $(SANITIZE_BUILD) -j$(JOBS) --target fuzzers
	scripts/fuzz.sh $(SANITIZE_BUILD) $(FUZZ_SECONDS) $(JOBS)

demo: deps-run tools
	scripts/demo.sh

bench: all
	bench/run.sh  # installs the PyTorch peers itself

# On a machine with an NVIDIA GPU and a CUDA build: shoal's GPU worker against PyTorch on CUDA.
bench-gpu: all
	bench/run.sh --rows gpu,gpu-convnets --out $(CURDIR)/bench/out/bench-gpu.json

# SINGA's deep auto-encoder: 4 RBMs pre-trained by CD, fine-tuned, pictured
# (experiments/autoencoder/out/figures/); EPOCHS= and FINETUNE_EPOCHS= pass on.
autoencoder: deps all
	$(MAKE) -C experiments/autoencoder BIN=$(abspath $(BUILD))

# SINGA's char-RNN on the Linux kernel's source: BSP and async, loss and
# accuracy against time, sampled text (experiments/char-rnn/out/); STEPS= passes on.
char-rnn: deps all
	$(MAKE) -C experiments/char-rnn BIN=$(abspath $(BUILD))

# sbatch the job on a Slurm cluster: make slurm JOB=configs/fashion-mlp.yaml ARGS="train.epochs=2"
JOB ?= configs/fashion-mlp.yaml
slurm: all
	sbatch scripts/slurm/train.sbatch $(JOB) $(ARGS)

clean:
	rm -rf $(BUILD) $(SANITIZE_BUILD)
